"""The ready Pendulum SAC config builds and learns on the path the benchmark times (the hand-written gradients, which
match autograd's step at its network shapes), and the benchmark scripts' config overrides and tuning summary."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from sparring.config import compile_config
from sparring.config.schema import ConfigError
from sparring.dizoo.classic_control.config.pendulum_sac import config as PENDULUM_SAC
from sparring.policy.sac import SACPolicy
from tests.scripts import load_script

OBS = gym.spaces.Box(-8.0, 8.0, (3,), np.float32)  # Pendulum-v1's spaces
ACTION = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)


pytestmark = pytest.mark.usefixtures('one_torch_thread')  # tests/conftest.py


def _benchmark(name):
    """A script under benchmarks/ (not a package) loaded as a module."""
    return load_script(f'benchmarks/{name}.py', f'bench_{name}')


def _ready_policy(tmp_path, seed=0):
    cfg = compile_config(PENDULUM_SAC, exp_name=str(tmp_path / 'run'), save=False)
    return cfg, SACPolicy(cfg.policy, OBS, ACTION, seed=seed)


def _chunks(count, n_steps, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        shape = (n_steps, 1)
        yield dict(obs=rng.uniform(-1, 1, shape + (3,)).astype(np.float32),
                   next_obs=rng.uniform(-1, 1, shape + (3,)).astype(np.float32),
                   action=rng.uniform(-2, 2, shape + (1,)).astype(np.float32), reward=-rng.random(shape),
                   terminated=np.zeros(shape, bool), truncated=np.zeros(shape, bool),
                   log_prob=np.zeros(shape, np.float32), value=np.zeros(shape, np.float32),
                   next_value=np.zeros(shape, np.float32))


def _fill_until_learning(policy, cfg):
    """Chunks up to the first one that takes gradient steps; that chunk's stats."""
    n_steps = cfg.policy.collect.n_steps
    for chunk in _chunks(cfg.policy.learn.learning_starts // n_steps + 1, n_steps):
        stats = policy.learn(chunk)
    return stats


def test_the_ready_pendulum_config_learns_on_the_hand_gradient_path(tmp_path):
    cfg, policy = _ready_policy(tmp_path)
    assert policy._hand_gradients  # what the wall-time benchmark runs
    hidden = list(cfg.policy.model.hidden_sizes)
    assert [layer.out_features for layer in policy.model.actor_layers[:-1]] == hidden
    assert [w.shape[-1] for w, _ in policy.model.critics.layers[:-1]] == hidden
    before = {k: v.clone() for k, v in policy.net.state_dict().items()}
    stats = _fill_until_learning(policy, cfg)
    expected = cfg.policy.learn.updates_per_chunk
    assert stats['gradient_steps'] == (cfg.policy.collect.n_steps if expected is None else expected) > 0
    assert np.isfinite(stats['critic_loss']) and policy.skipped_updates == 0
    assert all(not torch.equal(before[k], v) for k, v in policy.net.state_dict().items() if k.endswith('weight'))


def test_at_the_ready_configs_shapes_the_hand_step_matches_autograds(tmp_path):
    (cfg, by_hand), (_, by_autograd) = _ready_policy(tmp_path), _ready_policy(tmp_path)
    by_autograd._hand_gradients = False
    for policy in (by_hand, by_autograd):
        _fill_until_learning(policy, cfg)
    for (name, a), b in zip(by_hand.net.state_dict().items(), by_autograd.net.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)


def test_benchmark_overrides_change_a_copy_of_the_ready_config():
    bench = _benchmark('sac_vs_sb3')
    config, env_id = bench.ready_config('pendulum', ['policy.model.hidden_sizes=[64, 64]', 'policy.learn.lr=1e-3',
                                                     'policy.learn.updates_per_chunk=4'])
    assert env_id == 'Pendulum-v1'
    assert config['policy']['model']['hidden_sizes'] == [64, 64]
    assert config['policy']['learn']['lr'] == 1e-3 and config['policy']['learn']['updates_per_chunk'] == 4
    assert config['policy']['collect'] == PENDULUM_SAC['policy']['collect']  # the rest kept
    assert bench.ready_config('pendulum')[0] == PENDULUM_SAC and bench.ready_config('pendulum')[0] is not PENDULUM_SAC
    with pytest.raises(ConfigError, match='expected dotted.key=value'):
        bench.ready_config('pendulum', ['policy.learn.lr'])


def test_the_tuning_summary_counts_a_run_that_never_reached_the_target_as_the_worst():
    tuning = _benchmark('sac_tuning')
    runs = {'0': dict(target_env_steps=4000, final_eval=-150.0, cpu_ms_per_env_step=5.0),
            '1': dict(target_env_steps=None, final_eval=-400.0, cpu_ms_per_env_step=6.0),
            '2': dict(target_env_steps=3000, final_eval=-140.0, cpu_ms_per_env_step=4.0)}
    summary = tuning.variant_summary(runs)
    assert summary['reached'] == 2 and summary['seeds'] == 3
    assert summary['median_target_env_steps'] == 4000 and summary['worst_target_env_steps'] == float('inf')
    assert summary['median_final_eval'] == -150.0 and summary['worst_final_eval'] == -400.0
    assert summary['median_cpu_ms_per_env_step'] == 5.0
