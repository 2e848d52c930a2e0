"""``sparring export``: the policy network as ONNX or TorchScript agrees with the policy on recorded observations."""
import os

import numpy as np
import pytest
import torch

from sparring.config import compile_config
from sparring.config.registry import POLICY_REGISTRY
from sparring.framework.cli import main
from sparring.framework.export import export_policy
from sparring.framework.player_loader import TrainedRun, load_player
from sparring.worker.env.battle import make_battle_env

TOLERANCE = 1e-5


def recorded_games(env_cfg, steps: int = 40, seed: int = 3):
    """Observations and action masks of the seat to move, from random games (four at a time)."""
    env = make_battle_env(env_cfg, 4, seed)
    rng = np.random.default_rng(seed)
    step = env.reset()
    obs, masks = [], []
    for _ in range(steps):
        seat = step.to_move.argmax(axis=1)
        rows = np.arange(4)
        obs.append(step.obs[rows, seat])
        masks.append(step.action_mask[rows, seat])
        actions = np.zeros((4, 2), np.int64)
        for b in rows:
            actions[b, seat[b]] = rng.choice(np.flatnonzero(step.action_mask[b, seat[b]]))
        step = env.step(actions)
    env.close()
    return np.stack(obs), np.stack(masks)  # [T, 4, ...]


def run_exported(path: str, fmt: str, feeds: dict):
    if fmt == 'onnx':
        ort = pytest.importorskip('onnxruntime')
        session = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
        return session.run(None, feeds)
    module = torch.jit.load(path)
    with torch.no_grad():
        return [t.numpy() for t in module(*[torch.as_tensor(v) for v in feeds.values()])]


def compare(policy, path: str, fmt: str, obs: np.ndarray, masks: np.ndarray) -> None:
    """Step through the recorded observations (carrying the recurrent state) and compare every output."""
    state = policy.initial_state(obs.shape[1])
    for t in range(obs.shape[0]):
        feeds = dict(obs=obs[t], action_mask=masks[t])
        if policy.recurrent:
            feeds.update(state_h=np.asarray(state[0], np.float32), state_c=np.asarray(state[1], np.float32))
        outputs = run_exported(path, fmt, feeds)
        np.testing.assert_allclose(outputs[0], policy.action_probabilities(obs[t], masks[t], state), atol=TOLERANCE)
        np.testing.assert_allclose(outputs[1], policy.value(obs[t], state), atol=TOLERANCE)
        assert (outputs[0][~masks[t]] == 0).all()
        if policy.recurrent:
            state = policy.act(obs[t], state, deterministic=True, action_mask=masks[t]).state
            np.testing.assert_allclose(outputs[2], state[0], atol=TOLERANCE)
            np.testing.assert_allclose(outputs[3], state[1], atol=TOLERANCE)


@pytest.mark.parametrize('fmt', ['onnx', 'torchscript'])
@pytest.mark.slow
def test_exported_trained_player_agrees_with_the_policy(trained_tictactoe, tmp_path, fmt, one_torch_thread, capsys):
    if fmt == 'onnx':
        pytest.importorskip('onnx')
        pytest.importorskip('onnxruntime')
    run_dir, _ = trained_tictactoe
    out = tmp_path / f'player.{fmt}'
    assert main(['export', run_dir, '--format', fmt, '--out', str(out)]) == 0
    assert 'action_probs, value' in capsys.readouterr().out
    obs, masks = recorded_games(TrainedRun(run_dir).cfg.env)
    compare(load_player(run_dir), str(out), fmt, obs, masks)


@pytest.mark.parametrize('fmt', ['onnx', 'torchscript'])
def test_exported_lstm_player_carries_its_state(tmp_path, fmt, one_torch_thread):
    if fmt == 'onnx':
        pytest.importorskip('onnx')
        pytest.importorskip('onnxruntime')
    cfg = compile_config(dict(env=dict(type='tictactoe'), policy=dict(
        type='ppo', obs_norm=True, model=dict(type='lstm', hidden_size=16, bptt_len=4), collect=dict(n_steps=8))),
        save=False)
    env = make_battle_env(cfg.env, 1, 0)
    policy = POLICY_REGISTRY.get('ppo')(cfg.policy, env.observation_space, env.action_space, seed=1)
    env.close()
    obs, masks = recorded_games(cfg.env, steps=12)
    policy.net.normalizer.update(obs.reshape(-1, *obs.shape[2:]))  # a normaliser that has seen data
    info = export_policy(policy, str(tmp_path / f'lstm.{fmt}'), fmt)
    assert info['inputs'] == ['obs', 'action_mask', 'state_h', 'state_c']
    assert info['outputs'] == ['action_probs', 'value', 'state_h_out', 'state_c_out']
    compare(policy, info['path'], fmt, obs, masks)


def test_onnx_without_the_extra_names_it(tmp_path, monkeypatch, trained_tictactoe):
    import sys
    monkeypatch.setitem(sys.modules, 'onnx', None)
    run_dir, _ = trained_tictactoe
    with pytest.raises(ImportError, match=r'pip install sparring\[export\]'):
        export_policy(load_player(run_dir), str(tmp_path / 'x.onnx'), 'onnx')
    assert main(['export', run_dir, '--out', str(tmp_path / 'x.onnx')]) == 2


def test_an_out_path_without_an_extension_is_refused_in_one_line(trained_tictactoe, tmp_path, capsys):
    run_dir, _ = trained_tictactoe
    assert main(['export', run_dir, '--format', 'torchscript', '--out', str(tmp_path / 'player')]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'has no extension; expected a file name such as' in err
    assert f'{tmp_path / "player"}.pt for --format torchscript' in err
    assert not os.listdir(tmp_path)


def test_the_format_option_shows_its_default(capsys):
    with pytest.raises(SystemExit):
        main(['export', '--help'])
    assert '(default: onnx)' in ' '.join(capsys.readouterr().out.split())
