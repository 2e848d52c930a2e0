"""Target chase, a continuous free-for-all of three seats: its rules (moves clipped and kept in the arena, zero-sum
rewards, a ranking by the returns at the end), each seat's view, check-env, the scripted bot against random ones,
and the ready config's league through ``serial_pipeline``."""
import copy

import numpy as np
import pytest

from sparring.config.registry import BOT_REGISTRY
from sparring.dizoo.target_chase import TargetChaseEnv
from sparring.dizoo.target_chase.target_chase_env import FIELDS
from sparring.framework.serial import serial_pipeline
from sparring.worker.env.check_multiseat import check_any_env
from sparring.worker.env.errors import EnvError

F = {name: i for i, name in enumerate(FIELDS)}


def _play(env, players, games_per_env=2, seed=0):
    """Every seat's bot plays; returns the ranks of every finished game ``[G, S]``."""
    step = env.reset(seed=seed)
    ranks = []
    while len(ranks) < games_per_env * env.num_envs:
        actions = np.stack([bot.act(step.obs[:, s]).action for s, bot in enumerate(players)], axis=1)
        step = env.step(actions)
        ranks += [step.rank[b].copy() for b in np.flatnonzero(step.terminated)]
    return np.array(ranks)


def test_moves_are_clipped_kept_in_the_arena_and_rewards_sum_to_zero_until_the_ranking():
    env = TargetChaseEnv(dict(max_steps=5), 4, seed=0)
    step = env.reset()
    assert env.num_seats == 3 and env.action_space.shape == (2,) and not env.turn_based
    assert step.obs.shape == (4, 3, len(FIELDS) + 4) and step.action_mask.shape == (4, 3, 1) and step.to_move.all()
    returns = np.zeros((4, 3))
    for t in range(5):
        before = env.pos.copy()
        actions = np.full((4, 3, 2), 5.0, np.float32)  # outside the box: clipped to (1, 1), scaled to length 1
        actions[:, 1] = 0.0
        step = env.step(actions)
        moved = np.linalg.norm(env.pos - before, axis=2)
        if t < 4:  # (the last step's games restart)
            assert (moved[:, [0, 2]] <= 0.08 + 1e-6).all() and (moved[:, [0, 2]] > 0).any()
            assert (moved[:, 1] == 0).all() and (np.abs(env.pos) <= 1).all()
        np.testing.assert_allclose(step.reward.sum(axis=1), 0.0, atol=1e-6)
        returns += step.reward
        assert step.terminated.all() == (t == 4) and not step.truncated.any()
    order = np.argsort(-returns, axis=1)  # the best return ranks 0
    assert (np.take_along_axis(step.rank, order, axis=1) == [0, 1, 2]).all()
    assert (env.t == 0).all()  # the finished games restarted


def test_each_seat_sees_the_target_and_the_others_from_its_own_side():
    env = TargetChaseEnv(dict(seats=4), 2, seed=3)
    step = env.reset()
    for s in range(4):
        obs = step.obs[:, s]
        np.testing.assert_allclose(obs[:, [F['own_x'], F['own_y']]], env.pos[:, s], atol=1e-6)
        np.testing.assert_allclose(obs[:, [F['target_dx'], F['target_dy']]], env.target - env.pos[:, s], atol=1e-6)
        for k in range(3):  # the k-th seat after this one
            other = (s + 1 + k) % 4
            np.testing.assert_allclose(obs[:, len(FIELDS) + 2 * k:len(FIELDS) + 2 * k + 2],
                                       env.pos[:, other] - env.pos[:, s], atol=1e-6)
    assert (step.obs[..., F['time_left']] == 1.0).all()


def test_a_non_finite_or_misshapen_action_is_refused_naming_the_seat():
    env = TargetChaseEnv({}, 2, seed=0)
    env.reset()
    actions = np.zeros((2, 3, 2), np.float32)
    actions[1, 2, 0] = np.nan
    with pytest.raises(EnvError, match=r"env 1, seat 2 \(player_2\) played action \[nan, 0.0\]; expected finite"):
        env.step(actions)
    with pytest.raises(EnvError, match=r'actions of shape \(2, 3\); expected \(2, 3, 2\)'):
        env.step(np.zeros((2, 3), np.float32))


def test_check_env_passes():
    report = check_any_env('target_chase', games=8)
    assert report.passed, report.problems
    assert 'each seat for itself' in report.notes[0]


def test_the_greedy_bot_finishes_first_against_two_random_bots_and_refuses_another_game():
    env = TargetChaseEnv({}, 16, seed=0)
    greedy = BOT_REGISTRY.get('target_chase_greedy')({}, env.observation_space, env.action_space, seed=0)
    randoms = [BOT_REGISTRY.get('random')({}, env.observation_space, env.action_space, seed=k) for k in (1, 2)]
    ranks = _play(env, [greedy] + randoms)
    assert (ranks[:, 0] == 0).mean() > 0.8
    from gymnasium import spaces
    with pytest.raises(ValueError, match="bot 'target_chase_greedy' plays target chase: observation shape"):
        BOT_REGISTRY.get('target_chase_greedy')({}, spaces.Box(-1, 1, (6,)), env.action_space)


def test_the_ready_config_trains_a_league_of_three_seats(tmp_path):
    from sparring.dizoo.target_chase.config.target_chase_league import config as ready
    config = copy.deepcopy(ready)
    config.update(exp_name=str(tmp_path / 'target_chase'))
    config['env'].update(collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=8)
    config['league']['players']['naive_sp'].update(one_phase_step=2)
    config['train'].update(max_env_steps=160 * 4, max_wall_seconds=0.0, eval_every_iters=2, tensorboard=False,
                           progress_bar=False)
    summary = serial_pipeline(config)
    assert summary['env_steps'] == 160 * 4 and summary['rounds'] == 4 and summary['games'] == 16
    assert set(summary['eval']['naive_sp_0']['ahead']) == {'random', 'greedy'}
    assert 'naive_sp_0_h1' in summary['league_table']
