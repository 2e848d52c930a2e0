"""The LSTM actor-critic and recurrent PPO: stepping vs unrolling, window batches, config checks."""
import gymnasium as gym
import numpy as np
import pytest
import torch

import sparring.dizoo  # noqa: F401  (registers the envs)
from sparring.config import compile_section
from sparring.config.schema import ConfigError
from sparring.config.registry import MODEL_REGISTRY, POLICY_REGISTRY
from sparring.policy.train_batch import window_batch

pytestmark = pytest.mark.usefixtures('one_torch_thread')

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
FOUR_ACTIONS = gym.spaces.Discrete(4)


def _model(action_space=FOUR_ACTIONS, **cfg):
    section = compile_section('policy.model', dict(dict(type='lstm', hidden_size=6, encoder_sizes=[5]), **cfg))
    torch.manual_seed(0)
    return MODEL_REGISTRY.get('lstm')(section, OBS, action_space)


def test_unroll_equals_stepping_with_the_state_zeroed_at_episode_starts():
    model = _model()
    L, U = 5, 3
    obs = torch.randn(L, U, 3, generator=torch.Generator().manual_seed(1))
    h0 = torch.randn(U, 6, generator=torch.Generator().manual_seed(2))
    c0 = torch.randn(U, 6, generator=torch.Generator().manual_seed(3))
    starts = torch.zeros(L, U, dtype=torch.bool)
    starts[2, 0] = starts[4, 2] = True
    with torch.no_grad():
        head, value, (h_end, _) = model.unroll(obs, (h0, c0), starts)
        state = (h0, c0)
        for t in range(L):
            keep = (~starts[t]).float().unsqueeze(-1)
            step_head, step_value, state = model.step(obs[t], (state[0] * keep, state[1] * keep))
            np.testing.assert_allclose(head[t].numpy(), step_head.numpy(), atol=1e-6)
            np.testing.assert_allclose(value[t].numpy(), step_value.numpy(), atol=1e-6)
        np.testing.assert_allclose(h_end.numpy(), state[0].numpy(), atol=1e-6)
        # the reset matters: without it column 0 differs from step 2 on
        free, _, _ = model.unroll(obs, (h0, c0), torch.zeros(L, U, dtype=torch.bool))
        assert not torch.allclose(free[2, 0], head[2, 0], atol=1e-4)
        assert torch.allclose(free[:, 1], head[:, 1])


def test_one_core_feeds_separate_heads_and_box_actions_get_a_log_std():
    model = _model(gym.spaces.Box(-2.0, 2.0, (2,), np.float32))
    assert isinstance(model.core, torch.nn.LSTMCell)
    assert model.policy_head.out_features == 2 and model.value_head.out_features == 1
    assert model.log_std.shape == (2,)
    h, c = model.initial_state(4)
    assert h.shape == c.shape == (4, 6) and not h.any() and h.dtype == np.float32


def _policy(n_steps=8, bptt_len=4, **learn):
    cfg = compile_section('policy', dict(type='ppo', collect=dict(n_steps=n_steps),
                                         model=dict(type='lstm', hidden_size=8, encoder_sizes=[8], bptt_len=bptt_len),
                                         learn=dict(dict(epochs=2, num_minibatches=2), **learn)))
    return POLICY_REGISTRY.get('ppo')(cfg, OBS, gym.spaces.Discrete(3), seed=0)


def test_recurrent_policy_acts_from_the_state_it_is_given():
    policy = _policy()
    assert policy.recurrent and policy.bptt_len == 4
    obs = np.array([[0.5, -0.2, 0.9], [0.1, 0.3, -0.7]], np.float32)
    with pytest.raises(ValueError, match='initial_state'):
        policy.act(obs)
    out = policy.act(obs, policy.initial_state(2))
    assert len(out.state) == 2 and out.state[0].shape == (2, 8)
    # the same observation from another state gives another value: the state is used
    again = policy.act(obs, out.state)
    assert not np.allclose(again.value, out.value)
    np.testing.assert_allclose(policy.value(obs, policy.initial_state(2)), out.value, atol=1e-6)
    with pytest.raises(ValueError, match='state rows'):
        policy.act(obs, policy.initial_state(3))


def _fake_chunk(T=8, B=3, windows=2, seed=0):
    rng = np.random.default_rng(seed)
    done = rng.random((T, B)) < 0.2
    return dict(obs=rng.normal(size=(T, B, 3)).astype(np.float32), action=rng.integers(0, 3, (T, B)),
                log_prob=np.full((T, B), np.log(1 / 3), np.float32), value=np.zeros((T, B), np.float32),
                reward=rng.normal(size=(T, B)).astype(np.float32), terminated=done, truncated=np.zeros((T, B), bool),
                next_value=np.zeros((T, B), np.float32),
                window_state_0=rng.normal(size=(windows, B, 8)).astype(np.float32),
                window_state_1=rng.normal(size=(windows, B, 8)).astype(np.float32))


def test_window_batch_layout_units_are_windows_by_columns():
    chunk = _fake_chunk()
    adv = np.arange(24, dtype=np.float32).reshape(8, 3)
    batch = window_batch(chunk, adv, adv, bptt_len=4)
    assert batch.windowed and batch.num_units == 6 and batch.num_steps == 24
    # unit u = window * B + column; step l of unit u is chunk step window * 4 + l
    for window in range(2):
        for column in range(3):
            u = window * 3 + column
            np.testing.assert_array_equal(batch.adv[:, u].numpy(), adv[window * 4:window * 4 + 4, column])
            np.testing.assert_array_equal(batch.state[0][u].numpy(), chunk['window_state_0'][window, column])
            done = chunk['terminated'][:, column]
            expected_starts = [False if window * 4 + k == 0 else done[window * 4 + k - 1] for k in range(4)]
            np.testing.assert_array_equal(batch.starts[:, u].numpy(), expected_starts)
    part = batch.take(torch.tensor([4, 1]))
    assert part.num_units == 2 and part.state[1].shape == (2, 8)
    np.testing.assert_array_equal(part.adv[:, 0].numpy(), adv[4:8, 1])


def test_window_batch_keeps_only_masked_steps_in_the_losses():
    chunk = _fake_chunk()
    chunk['value_mask'] = np.zeros((8, 3), bool)
    chunk['value_mask'][:, 1] = True
    chunk['train_mask'] = chunk['value_mask'].copy()
    chunk['train_mask'][::2, 1] = False
    batch = window_batch(chunk, chunk['reward'], chunk['reward'], bptt_len=4)
    assert batch.num_steps == 8
    np.testing.assert_array_equal(np.sort(batch.kept.adv.numpy()), np.sort(chunk['reward'][:, 1]))
    assert batch.kept.acts.sum() == 4


def test_window_batch_rejects_a_chunk_from_another_window_length():
    with pytest.raises(ValueError, match='bptt_len is 2'):
        window_batch(_fake_chunk(), np.zeros((8, 3)), np.zeros((8, 3)), bptt_len=2)
    chunk = _fake_chunk()
    del chunk['window_state_0'], chunk['window_state_1']
    with pytest.raises(ValueError, match='no window states'):
        window_batch(chunk, np.zeros((8, 3)), np.zeros((8, 3)), bptt_len=4)


@pytest.mark.parametrize('objective', ['clip', 'kl_penalty'])
def test_recurrent_learn_trains_whole_windows(objective):
    policy = _policy(objective=objective)
    before = {k: v.clone() for k, v in policy.get_params().items()}
    stats = policy.learn(_fake_chunk())
    # 6 windows in 2 minibatches of 3 windows x 4 steps, 2 epochs
    assert stats['gradient_steps'] == 4 and stats['samples'] == 24 and stats['samples_consumed'] == 48
    assert any(not torch.equal(before[k], v) for k, v in policy.get_params().items())
    assert any(not torch.equal(before[k], v) for k, v in policy.get_params().items() if k.startswith('model.core'))
    if objective == 'kl_penalty':  # the previous chunk's windows are replayed for the value
        assert policy.value_replay_batch.windowed and policy.value_replay_batch.num_units == 6
        stats = policy.learn(_fake_chunk(seed=1))
        assert stats['gradient_steps'] == 4 and np.isfinite(stats['value_loss'])


def test_lstm_config_checks():
    with pytest.raises(ConfigError, match='not a multiple of "policy.model.bptt_len" = 16'):
        compile_section('policy', dict(type='ppo', model=dict(type='lstm'), collect=dict(n_steps=100)))
    with pytest.raises(ConfigError, match='policy.model.bptt_len'):
        compile_section('policy', dict(type='ppo', model=dict(type='lstm', bptt_len=0)))
    with pytest.raises(ConfigError, match="unknown key 'hidden_sizes'.*Did you mean 'hidden_size'"):
        compile_section('policy', dict(type='ppo', model=dict(type='lstm', hidden_sizes=[64])))
    # an MLP has no windows, so its n_steps is free
    compile_section('policy', dict(type='ppo', collect=dict(n_steps=100)))
