"""The single-agent Evaluator: greedy episodes through ``policy.greedy``, sampled ones through ``policy.act``."""
import numpy as np
import pytest

from sparring.config import compile_section
from sparring.policy import PPOPolicy
from sparring.policy.base import ActOutput, Policy
from sparring.worker.env.manager import make_env_manager
from sparring.worker.evaluator import Evaluator

pytestmark = pytest.mark.usefixtures('one_torch_thread')


class _Recording(Policy):
    """Always pushes right; records which of ``greedy`` and ``act`` the evaluator asked, and how."""

    def __init__(self, space) -> None:
        super().__init__({}, space, None)
        self.calls = []

    def greedy(self, obs, state=None, action_mask=None):
        self.calls.append('greedy')
        return np.ones(len(obs), np.int64), None

    def act(self, obs, state=None, deterministic=False, action_mask=None):
        self.calls.append(f'act deterministic={deterministic}')
        rows = len(obs)
        return ActOutput(np.ones(rows, np.int64), np.zeros(rows, np.float32), np.zeros(rows, np.float32))


def _cartpole(envs=2, seed=0):
    return make_env_manager(dict(type='cartpole'), envs, seed=seed)


def test_greedy_episodes_ask_policy_greedy_and_sampled_ones_ask_act():
    env, again = _cartpole(), _cartpole()
    policy = _Recording(env.observation_space)
    greedy = Evaluator(env, policy, n_episodes=2).evaluate()
    assert set(policy.calls) == {'greedy'}
    policy.calls.clear()
    sampled = Evaluator(again, policy, n_episodes=2, deterministic=False).evaluate()
    assert set(policy.calls) == {'act deterministic=False'}
    assert greedy.returns == sampled.returns  # the same actions from either call on the same envs: the same episodes
    env.close()
    again.close()


def test_a_ppo_policy_scores_the_same_greedy_episodes_as_through_act():
    env = _cartpole(envs=4, seed=3)
    cfg = compile_section('policy', dict(type='ppo', model=dict(hidden_sizes=[16])))
    policy = PPOPolicy(cfg, env.observation_space, env.action_space, seed=2)
    returns = Evaluator(env, policy, n_episodes=4).evaluate().returns

    class _ThroughAct(Policy):  # the Evaluator as it was: the deterministic act's actions
        def greedy(self, obs, state=None, action_mask=None):
            return policy.act(obs, state, deterministic=True).action, None

    again = _cartpole(envs=4, seed=3)
    assert Evaluator(again, _ThroughAct({}, env.observation_space, env.action_space), 4).evaluate().returns == returns
    env.close()
    again.close()
