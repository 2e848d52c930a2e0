"""Continuous (Box) actions in games of three seats (target chase): the actions the game sees lie in the box while
the chunk keeps them as sampled, every field matches the policy's chunk spec in dtype and shape (no action mask),
a Gaussian PPO learns from the chunk, a recurrent Gaussian one replays its windows, SAC learns from each seat's
column in a league run (its moves untagged: a replay that forgets by opponent is refused in one line); check-env
names a Box without bounds."""
import copy

import numpy as np
import pytest
from easydict import EasyDict
from gymnasium import spaces

from sparring.config import compile_section
from sparring.config.registry import BOT_REGISTRY, POLICY_REGISTRY
from sparring.dizoo.target_chase import TargetChaseEnv
from sparring.framework.serial import serial_pipeline
from sparring.policy.chunk_spec import PER_STEP, PER_WINDOW
from sparring.policy.replay_opponents import UNTAGGED
from sparring.worker.env.check_multiseat import check_multiseat_env
from sparring.worker.multiseat_collector import MultiSeatCollector
from tests.recurrent import recomputed

pytestmark = pytest.mark.usefixtures('one_torch_thread')

S = 3


def _policy(env, kind='ppo', **policy):
    cfg = compile_section('policy', dict(type=kind, **policy))
    return POLICY_REGISTRY.get(kind)(cfg, env.observation_space, env.action_space, seed=0)


def _collector(env, policy, n_steps=10):
    """The home player against the scripted bot and itself (self-play in one seat)."""
    greedy = BOT_REGISTRY.get('target_chase_greedy')({}, env.observation_space, env.action_space, seed=1)
    return MultiSeatCollector(env, policy, n_steps, lambda slot: (['me', 'greedy', 'me'], [greedy, policy]),
                              player_id='me')


def test_box_actions_reach_the_game_inside_the_box_and_the_chunk_fits_the_policys_spec():
    env = TargetChaseEnv(dict(max_steps=4), 3, seed=0)
    policy = _policy(env, model=dict(hidden_sizes=[16], init_log_std=0.5), collect=dict(n_steps=10))
    collector = _collector(env, policy)
    seen = []
    advance = env._advance
    env._advance = lambda actions: (seen.append(actions.copy()), advance(actions))[1]
    chunk = collector.collect()
    chunk.validate(collector.spec)
    data = chunk.data
    assert 'action_mask' not in data and 'action_mask' not in collector.spec
    for field in collector.spec:
        assert field.per == PER_STEP and data[field.name].dtype == field.dtype
        assert data[field.name].shape == (10, 3 * S) + field.shape, field.name
    assert data['action'].shape == (10, 3 * S, 2) and data['action'].dtype == np.float32
    sampled = data['action'][data['value_mask']]
    assert np.abs(sampled).max() > 1.0  # a Gaussian samples outside the box ...
    played = np.stack(seen)
    assert played.dtype == np.float32 and np.abs(played).max() <= 1.0  # ... and the game sees it clipped
    assert (data['value_mask'].reshape(10, 3, S).sum(-1) == 2).all()  # its own seat and its self-play seat
    assert len(chunk.rankings) == 3 * 2 and all(sorted(ranks) == [0, 1, 2] for _, ranks, _ in chunk.rankings)
    stats = policy.learn(data)
    assert np.isfinite(stats['policy_loss'])


def test_a_recurrent_gaussian_policys_windows_replay_its_log_probs():
    env = TargetChaseEnv(dict(max_steps=6), 2, seed=1)
    policy = _policy(env, model=dict(type='lstm', hidden_size=8, encoder_sizes=[8], bptt_len=4),
                     collect=dict(n_steps=8))
    collector = _collector(env, policy, n_steps=8)
    for _ in range(2):
        chunk = collector.collect()
        chunk.validate(collector.spec)
        assert [f.name for f in collector.spec if f.per == PER_WINDOW] == ['window_state_0', 'window_state_1']
        data = chunk.data
        log_prob, value = recomputed(policy, data)
        held = data['value_mask']
        np.testing.assert_allclose(log_prob[held], data['log_prob'][held], atol=1e-5)
        np.testing.assert_allclose(value[held], data['value'][held], atol=1e-5)


def test_sac_learns_from_every_seat_column_it_holds_in_a_league_of_three_seats(tmp_path):
    from sparring.dizoo.target_chase.config.target_chase_league import config as ready
    config = copy.deepcopy(ready)
    config.update(exp_name=str(tmp_path / 'target_chase_sac'))
    config['env'].update(collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=4)
    config['policy'] = dict(type='sac', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8),
                            learn=dict(batch_size=32, learning_starts=32, updates_per_chunk=4))
    config['league']['players']['naive_sp'].update(one_phase_step=2)
    config['train'].update(max_env_steps=32 * 6, max_wall_seconds=0.0, eval_every_iters=3, tensorboard=False,
                           progress_bar=False)
    summary = serial_pipeline(config)
    assert summary['env_steps'] == 32 * 6 and summary['rounds'] == 6
    assert 'naive_sp_0_h1' in summary['league_table'] and set(summary['eval']['naive_sp_0']['ahead']) == \
        {'random', 'greedy'}


def test_sac_moves_are_untagged_and_a_replay_that_forgets_by_opponent_is_refused():
    env = TargetChaseEnv(dict(max_steps=4), 2, seed=0)
    policy = _policy(env, 'sac', model=dict(hidden_sizes=[16]), learn=dict(batch_size=16, learning_starts=16))
    chunk = _collector(env, policy, n_steps=8).collect()
    chunk.validate(_collector(env, policy).spec)
    assert (chunk.data['opponent'] == UNTAGGED).all() and (chunk.data['opponent_version'] == 0).all()
    assert policy.learn(chunk.data)['samples'] == 8 * 2 * 2  # every step of the two seats it holds in each game
    forgetful = _policy(env, 'sac', replay=dict(max_opponent_age=2))
    with pytest.raises(ValueError, match=r'policy.replay.max_opponent_age = 2 forgets moves by the one opponent they '
                                         r'were played against, but a game of 3 seats has 2 at once'):
        _collector(env, forgetful)


class _Unbounded(TargetChaseEnv):
    def __init__(self, cfg, num_envs, seed=None):
        super().__init__(cfg, num_envs, seed)
        self.action_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)


def test_check_env_names_a_box_without_bounds():
    report = check_multiseat_env(_Unbounded, EasyDict(TargetChaseEnv.default_config(), type='unbounded'), 4, 0, 100)
    unbounded = spaces.Box(-np.inf, np.inf, (2,), np.float32)
    expected = f'action_space is {unbounded!r}; expected a Box of finite bounds (its actions are clipped to them)'
    assert report.problems == [expected]
