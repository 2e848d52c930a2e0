"""Target chase, a continuous free-for-all of three seats: its rules (moves clipped and kept in the arena, zero-sum
rewards, a ranking by the returns at the end), each seat's view, check-env, the scripted bot against random ones,
and the ready config's league through ``serial_pipeline``; its team game (``team_size``): team rewards and ranks,
teammates seen first, the ready config of three teams of two through ``serial_pipeline`` and into the league."""
import copy
import os

import numpy as np
import pytest

from sparring.config.registry import BOT_REGISTRY
from sparring.config.schema import ConfigError
from sparring.dizoo.target_chase import TargetChaseEnv
from sparring.dizoo.target_chase.target_chase_env import FIELDS
from sparring.framework.serial import serial_pipeline
from sparring.worker.env.check_multiseat import check_any_env
from sparring.worker.env.errors import EnvError

F = {name: i for i, name in enumerate(FIELDS)}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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


def test_teammates_share_their_teams_reward_and_rank_and_the_teams_rewards_sum_to_zero():
    env = TargetChaseEnv(dict(seats=6, team_size=2, max_steps=5), 4, seed=1)
    assert env.teams == (0, 0, 1, 1, 2, 2)
    step = env.reset()
    rng = np.random.default_rng(0)
    returns = np.zeros((4, 6))
    for t in range(5):
        step = env.step(rng.uniform(-1, 1, (4, 6, 2)).astype(np.float32))
        distance = np.linalg.norm(env.pos - env.target[:, None], axis=2) if t < 4 else None
        if distance is not None:  # (the last step's games restart)
            team = distance.reshape(4, 3, 2).mean(axis=2)  # each team's mean distance
            expected = (team.sum(axis=1, keepdims=True) - team) / 2 - team
            np.testing.assert_allclose(step.reward, np.repeat(expected, 2, axis=1) / 5, atol=1e-6)
        assert (step.reward[:, 0::2] == step.reward[:, 1::2]).all()
        np.testing.assert_allclose(step.reward.sum(axis=1), 0.0, atol=1e-6)
        returns += step.reward
    assert step.terminated.all()
    assert (step.rank[:, 0::2] == step.rank[:, 1::2]).all()  # teammates share their rank
    team_order = np.argsort(-returns[:, 0::2], axis=1)
    assert (np.take_along_axis(step.rank[:, 0::2], team_order, axis=1) == [0, 2, 4]).all()


def test_each_seat_sees_its_teammates_first_then_the_other_teams_going_round():
    env = TargetChaseEnv(dict(seats=6, team_size=2), 2, seed=3)
    step = env.reset()
    assert step.obs.shape == (2, 6, len(FIELDS) + 10)
    seen = {0: [1, 2, 3, 4, 5], 3: [2, 4, 5, 0, 1], 5: [4, 0, 1, 2, 3]}  # seat -> the others in the order it sees them
    for s, others in seen.items():
        for k, other in enumerate(others):
            np.testing.assert_allclose(step.obs[:, s, len(FIELDS) + 2 * k:len(FIELDS) + 2 * k + 2],
                                       env.pos[:, other] - env.pos[:, s], atol=1e-6)


@pytest.mark.parametrize('seats, team_size', [(5, 2), (4, 4)])
def test_seats_that_make_no_two_whole_teams_are_refused(seats, team_size):
    with pytest.raises(ConfigError, match=f'{seats} seats do not make two or more teams of {team_size}; expected '
                                          'seats a multiple of team_size'):
        TargetChaseEnv(dict(seats=seats, team_size=team_size), 1)


def test_check_env_passes_on_the_ready_team_config(capsys):
    from sparring.framework.cli import main
    path = os.path.join(ROOT, 'dizoo', 'target_chase', 'config', 'target_chase_teams.py')
    assert main(['check-env', path, '--games', '8']) == 0
    out = capsys.readouterr().out
    assert 'check-env target_chase: passed' in out and 'of 6 seats' in out and 'teams (0, 0, 1, 1, 2, 2)' in out


def test_the_ready_team_config_trains_and_its_games_reach_the_league_with_teams(tmp_path, monkeypatch):
    from sparring.dizoo.target_chase.config.target_chase_teams import config as ready
    from sparring.league.base_league import BaseLeague
    config = copy.deepcopy(ready)
    config.update(exp_name=str(tmp_path / 'target_chase_teams'))
    config['env'].update(collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=8)
    config['league']['players']['naive_sp'].update(one_phase_step=2)
    config['train'].update(max_env_steps=160 * 4, max_wall_seconds=0.0, eval_every_iters=2, tensorboard=False,
                           progress_bar=False)
    recorded = []
    finish_job = BaseLeague.finish_job

    def spy(league, job_result):
        recorded.append(copy.deepcopy(job_result))
        return finish_job(league, job_result)

    monkeypatch.setattr(BaseLeague, 'finish_job', spy)
    summary = serial_pipeline(config)
    assert summary['env_steps'] == 160 * 4 and summary['rounds'] == 4 and summary['games'] == 16
    assert set(summary['eval']['naive_sp_0']['ahead']) == {'random', 'greedy'}
    assert recorded and all(len(job['player_ids']) == 6 and job['teams'] is not None for job in recorded)
    for job in recorded:
        teams = np.array(job['teams'])
        assert sorted(np.bincount(teams)) == [2, 2, 2]  # three teams of two, in job order
        for ranking in np.array(job['result']):  # every game: teammates share their rank, the teams' ranks differ
            assert [len(set(ranking[teams == team])) for team in range(3)] == [1, 1, 1]
            assert len(set(ranking)) == 3
    trained = [job for job in recorded if not {'greedy', 'random'} & set(job['player_ids'])]
    assert sum(len(job['result']) for job in trained) == 16  # every training game recorded once
    # a teammate is drawn like any seat: self-play made the player its own teammate, and its own rival
    own_team = [job['teams'][0] for job in trained]
    self_seated = [{team for pid, team in zip(job['player_ids'][1:], job['teams'][1:]) if pid == 'naive_sp_0'}
                   for job in trained]  # the teams of the other seats the league gave the player itself
    assert any(own in teams for own, teams in zip(own_team, self_seated))
    assert any(teams - {own} for own, teams in zip(own_team, self_seated))
    evaluated = [job for job in recorded if job not in trained]
    assert evaluated and all(job['player_ids'][0] == 'naive_sp_0' for job in evaluated)
