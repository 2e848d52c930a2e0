"""``Policy.greedy``: the actions ``act(..., deterministic=True)`` takes, for every policy, and PPO's cheaper path
(the policy's half of the network alone) gives exactly those actions."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from sparring.config import compile_section
from sparring.policy import PPOPolicy
from tests.chunk_cases import CASES, OBS, make_policy

pytestmark = pytest.mark.usefixtures('one_torch_thread')


def _observations(space: gym.Space, rows: int = 16, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if space.dtype == np.uint8:
        return rng.integers(0, 256, (rows, *space.shape)).astype(np.uint8)
    return rng.uniform(-1.0, 1.0, (rows, *space.shape)).astype(np.float32)


def _same_as_act(policy, obs, state=None, action_mask=None):
    action, next_state = policy.greedy(obs, state, action_mask=action_mask)
    out = policy.act(obs, state, deterministic=True, action_mask=action_mask)
    assert action.dtype == out.action.dtype and action.shape == out.action.shape
    assert np.array_equal(action, out.action)
    if out.state is None:
        assert next_state is None
    else:
        assert all(np.array_equal(a, b) for a, b in zip(next_state, out.state))


@pytest.mark.parametrize('case', sorted(CASES))
def test_greedy_takes_the_deterministic_actions_of_every_policy(case):
    policy = make_policy(case, seed=3)
    obs = _observations(OBS)
    _same_as_act(policy, obs, policy.initial_state(len(obs)))


THREE = gym.spaces.Discrete(3)


def _ppo(observation_space=OBS, action_space=THREE, **section):
    cfg = compile_section('policy', dict(type='ppo', **section))
    return PPOPolicy(cfg, observation_space, action_space, seed=1)


@pytest.mark.parametrize('section', [dict(model=dict(hidden_sizes=[8, 8])),
                                     dict(model=dict(hidden_sizes=[8], shared_trunk=True)),
                                     dict(model=dict(hidden_sizes=[8]), obs_norm=True),
                                     dict(model=dict(type='task_mlp'))],
                         ids=['mlp', 'shared_trunk', 'obs_norm', 'task_mlp'])
def test_ppo_greedy_matches_act_for_each_model(section):
    policy = _ppo(**section)
    if section.get('obs_norm'):  # statistics away from the initial ones
        policy.net.normalizer.update(torch.as_tensor(_observations(OBS, 64, seed=5) * 3 + 1))
    _same_as_act(policy, _observations(OBS))


def test_ppo_greedy_matches_act_with_the_cnn_and_on_a_box():
    frames = gym.spaces.Box(0, 255, (4, 36, 36), np.uint8)
    _same_as_act(_ppo(frames, model=dict(type='cnn', hidden_size=16)), _observations(frames, 4))
    _same_as_act(_ppo(action_space=gym.spaces.Box(-1.0, 1.0, (2, 3), np.float32), model=dict(hidden_sizes=[8])),
                 _observations(OBS))


def test_ppo_greedy_obeys_the_action_mask():
    policy = _ppo(model=dict(hidden_sizes=[8]))
    obs = _observations(OBS, 6)
    mask = np.zeros((6, 3), bool)
    mask[np.arange(6), np.arange(6) % 3] = True  # one legal action a row
    action, _ = policy.greedy(obs, action_mask=mask)
    assert action.tolist() == [0, 1, 2, 0, 1, 2]
    _same_as_act(policy, obs, action_mask=mask)


def test_ppo_greedy_leaves_the_value_half_of_the_network_out():
    policy = _ppo(model=dict(hidden_sizes=[8]))
    called = []
    policy.model.critic_trunk.register_forward_hook(lambda *args: called.append('critic'))
    policy.model.value_head.register_forward_hook(lambda *args: called.append('value'))
    policy.greedy(_observations(OBS))
    assert called == []
    policy.act(_observations(OBS), deterministic=True)
    assert called == ['critic', 'value']
