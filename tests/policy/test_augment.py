"""Mirror augmentation (``policy.learn.mirror``): the mirrored steps, the checks, and what an update learns from them."""
import gymnasium as gym
import numpy as np
import pytest
import torch

import sparring.policy  # noqa: F401  registers ppo
from sparring.config import compile_section
from sparring.config.registry import POLICY_REGISTRY
from sparring.config.schema import ConfigError
from sparring.policy.augment import with_mirror
from sparring.policy.train_batch import TrainBatch

COLUMNS = dict(obs_axis=-1, actions=[2, 1, 0])  # a 3-column board: column c mirrors to 2 - c


def test_a_mirrored_step_flips_the_board_and_permutes_action_and_mask():
    obs = torch.arange(2 * 2 * 3, dtype=torch.float32).reshape(2, 1, 2, 3)  # two boards, one plane, 2 rows x 3 cols
    batch = TrainBatch(dict(obs=obs, action=torch.tensor([0, 1]), log_prob=torch.tensor([-0.5, -1.0]),
                            adv=torch.tensor([1.0, -2.0]), mask=torch.tensor([[True, True, False], [True, False, True]])))
    out = with_mirror(batch, COLUMNS).fields
    assert out['obs'].shape == (4, 1, 2, 3)
    assert out['obs'][2].tolist() == [[[2.0, 1.0, 0.0], [5.0, 4.0, 3.0]]]  # columns reversed, rows kept
    assert out['action'].tolist() == [0, 1, 2, 1]
    assert out['mask'][2:].tolist() == [[False, True, True], [True, False, True]]
    # The behaviour probability and the advantage travel with the step.
    assert out['log_prob'].tolist() == [-0.5, -1.0, -0.5, -1.0] and out['adv'].tolist() == [1.0, -2.0, 1.0, -2.0]


def _policy(mirror, obs_shape=(1, 2, 3), actions=3, model=None):
    cfg = compile_section('policy', dict(type='ppo', model=model or dict(hidden_sizes=[16]), collect=dict(n_steps=4),
                                         learn=dict(mirror=mirror, epochs=8, num_minibatches=1, lr=1e-2,
                                                    anneal_lr=False, normalize_advantage=False)))
    return POLICY_REGISTRY.get('ppo')(cfg, gym.spaces.Box(0.0, 1.0, obs_shape, np.float32), gym.spaces.Discrete(actions),
                                      seed=0)


@pytest.mark.parametrize('mirror, words', [
    (dict(obs_axis=-1, actions=[0, 0, 1]), 'permutation'),
    (dict(obs_axis=-1, actions=[1, 2, 0]), 'undone by itself'),
    (dict(obs_axis=-1), 'expected None or dict'),
    (dict(obs_axis='cols', actions=[2, 1, 0]), 'obs_axis'),
])
def test_a_bad_mirror_is_refused_by_name(mirror, words):
    with pytest.raises(ConfigError, match=words):
        _policy(mirror)


def test_a_mirror_must_fit_the_spaces():
    with pytest.raises(ConfigError, match='2 entries for 3 actions'):
        _policy(dict(obs_axis=-1, actions=[1, 0]))
    with pytest.raises(ConfigError, match='not an axis'):
        _policy(dict(obs_axis=3, actions=[2, 1, 0]))


def _one_step_chunk(obs, action, advantage, policy, T=4):
    """``T`` copies of one step whose return beats its value by ``advantage`` (gamma 0 would do; here done)."""
    out = policy.act(np.repeat(obs[None], T, 0))
    value = out.value.reshape(T, 1)
    return dict(obs=np.repeat(obs[None, None], T, 0), action=np.full((T, 1), action),
                log_prob=out.log_prob.reshape(T, 1) * 0 + float(np.log(policy.action_probabilities(obs[None])[0, action])),
                value=value, next_value=np.zeros((T, 1), np.float32),
                reward=(value + advantage).astype(np.float32), terminated=np.ones((T, 1), bool),
                truncated=np.zeros((T, 1), bool))


def test_an_update_with_the_mirror_also_teaches_the_mirrored_position():
    board = np.zeros((1, 2, 3), np.float32)
    board[0, 1, 0] = 1.0  # a stone in the left column: not symmetric
    mirrored_board = board[..., ::-1].copy()
    learnt = {}
    for mirror in (None, COLUMNS):
        policy = _policy(mirror)
        before = policy.action_probabilities(mirrored_board[None])[0, 2]
        policy.learn(_one_step_chunk(board, 0, 1.0, policy))  # action 0 (left) was good on `board`
        learnt[mirror is not None] = policy.action_probabilities(mirrored_board[None])[0, 2] - before
    # With the mirror the right column (the mirror of the left one) on the mirrored board gains clearly more.
    assert learnt[True] > 0.05 and learnt[True] > learnt[False] + 0.05, learnt
