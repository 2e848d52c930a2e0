"""Team games: symmetrised team rewards with team spirit, Team Pong, and teams in the arena, collector and league."""
import copy

import numpy as np
import pytest

from sparring.config import compile_config, compile_section
from sparring.config.schema import ConfigError
from sparring.dizoo.team_pong.config.team_pong_league import config as ready_config
from sparring.framework import serial_pipeline
from sparring.config.registry import BOT_REGISTRY, POLICY_REGISTRY
from sparring.worker.battle_collector import BattleCollector
from sparring.worker.battle_evaluator import BattleEvaluator
from sparring.worker.env.battle import make_battle_env
from sparring.worker.env.errors import EnvError
from sparring.worker.env.team import team_rewards

pytestmark = pytest.mark.usefixtures('one_torch_thread')


@pytest.mark.parametrize('spirit, seat_0, seat_1', [
    (0.0, [-1.0, 0.0], [0.5, 0.5]),  # the agent that missed pays alone; the scorers share the gain
    (0.5, [-0.75, -0.25], [0.5, 0.5]),
    (1.0, [-0.5, -0.5], [0.5, 0.5]),  # the team shares the blame
])
def test_a_missed_ball_is_symmetrised_and_shared_by_team_spirit(spirit, seat_0, seat_1):
    individual = np.array([[[-1.0, 0.0], [0.0, 0.0]]])  # [B=1, seat, agent]: seat 0's agent 0 missed
    np.testing.assert_allclose(team_rewards(individual, spirit), [[seat_0, seat_1]], atol=1e-7)


def test_team_rewards_by_hand_with_every_agent_rewarded():
    individual = np.array([[0.1, -1.0], [0.3, 0.0]])  # one game: seat 0 (a hit, a miss), seat 1 (a hit)
    # tau = 0.25; team means -0.45 and 0.15
    mixed_0 = 0.75 * np.array([0.1, -1.0]) + 0.25 * -0.45  # [-0.0375, -0.8625]
    mixed_1 = 0.75 * np.array([0.3, 0.0]) + 0.25 * 0.15  # [0.2625, 0.0375]
    expected = [mixed_0 - mixed_1.mean(), mixed_1 - mixed_0.mean()]
    np.testing.assert_allclose(expected, [[-0.1875, -1.0125], [0.7125, 0.4875]], atol=1e-12)
    rewards = team_rewards(individual, 0.25)
    np.testing.assert_allclose(rewards, expected, atol=1e-6)
    assert rewards.sum() == pytest.approx(0.0, abs=1e-6)  # zero-sum between the teams


def make_env(num_envs=4, seed=0, **cfg):
    env = make_battle_env(dict(type='team_pong', **cfg), num_envs, seed)
    return env, env.reset()


def test_team_pong_observations_carry_the_agent_index_and_each_teams_view():
    env, step = make_env(team_size=3)
    assert env.team_size == 3
    assert step.obs.shape == (4, 2, 3, len(env.observation_names)) and step.action_mask.shape == (4, 2, 3, 3)
    assert step.reward.shape == (4, 2, 3) and step.to_move.shape == (4, 2)
    names = list(env.observation_names)
    index = [names.index(f'agent_{i}') for i in range(3)]
    np.testing.assert_array_equal(step.obs[0, 1][:, index], np.eye(3))
    own = names.index('own_paddle_y')
    team = [names.index(f'team_paddle_{i}') for i in range(3)]
    for agent in range(3):  # its own paddle is its lane's paddle of its team
        np.testing.assert_array_equal(step.obs[:, 0, agent, own], step.obs[:, 0, agent, team[agent]])
    x = names.index('ball_x')
    np.testing.assert_allclose(step.obs[:, 1, :, x], -step.obs[:, 0, :, x], atol=1e-6)  # mirrored for team 1


def test_team_pong_charges_the_agent_whose_lane_the_ball_crossed():
    env, _ = make_env(1, team_spirit=0.5)
    env.ball[0] = [0.01, 0.8]  # into lane 1 of team 0 (the upper half)
    env.velocity[0] = [-0.02, 0.0]
    env.paddle_y[0, 0] = [0.2, 0.3]  # both far from it
    step = env.step(np.zeros((1, 2, 2), np.int64))
    np.testing.assert_allclose(step.reward[0], [[-0.25, -0.75], [0.5, 0.5]])
    assert env.score.tolist() == [[0, 1]]


def test_team_pong_paddles_stay_in_their_lanes_and_the_best_placed_one_returns():
    env, _ = make_env(1)
    up = np.ones((1, 2, 2), np.int64)
    for _ in range(40):
        env.step(up)
    half = env.cfg.paddle_half_height
    np.testing.assert_allclose(env.paddle_y[0, 0], [0.5 - half, 1.0 - half])
    env.ball[0] = [0.99, 0.9]
    env.velocity[0] = [0.02, 0.0]
    env.paddle_y[0, 1] = [0.3, 0.9]
    step = env.step(np.zeros((1, 2, 2), np.int64))
    assert env.velocity[0, 0] < 0 and not step.reward.any()  # team 1's lane-1 paddle returned it


def test_team_actions_are_checked():
    env, _ = make_env(2)
    with pytest.raises(EnvError, match=r'expected \(2, 2, 2\)'):
        env.step(np.zeros((2, 2), np.int64))
    actions = np.zeros((2, 2, 2), np.int64)
    actions[1, 0, 1] = 3
    with pytest.raises(EnvError, match='env 1, seat 0, agent 1 played action 3'):
        env.step(actions)
    with pytest.raises(ConfigError, match='team_spirit'):
        compile_section('env', dict(type='team_pong', team_spirit=1.5))
    with pytest.raises(ConfigError, match='paddle_half_height.*lane of height 1/8'):
        compile_section('env', dict(type='team_pong', team_size=8))


def ppo(env, seed=0, model=None):
    cfg = compile_section('policy', dict(type='ppo', model=model or dict(hidden_sizes=[16]), collect=dict(n_steps=8),
                                         learn=dict(epochs=1, num_minibatches=2)))
    return POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=seed)


@pytest.mark.parametrize('model', [None, dict(type='lstm', encoder_sizes=[16], hidden_size=8, bptt_len=4)])
def test_the_collector_stores_one_column_per_agent_and_the_policy_learns_from_them(model):
    env, _ = make_env(3, seed=1)
    policy = ppo(env, model=model)
    bot = BOT_REGISTRY.get('random')({}, env.observation_space, env.action_space, seed=0)
    collector = BattleCollector(env, policy, 8, lambda slot: ('self', policy) if slot == 0 else ('random', bot))
    chunk = collector.collect()
    data = chunk.data
    columns = 2 * 3 * 2  # slots x seats x agents
    assert data['obs'].shape == (8, columns, len(env.observation_names)) and data['action'].shape == (8, columns)
    chunk.validate(collector.spec)
    by_seat = data['value_mask'].reshape(8, 3, 2, 2)
    assert by_seat[:, 0].all()  # self-play slot: both teams, every agent
    for slot in (1, 2):  # against the bot: all agents of the home team, none of the bot's
        home = collector.arena.home_seat[slot]  # unchanged: no game ends in 8 steps
        assert by_seat[:, slot, home].all() and not by_seat[:, slot, 1 - home].any()
    agent_index = data['obs'][..., -2:].reshape(8, 3, 2, 2, 2)
    np.testing.assert_array_equal(agent_index[0, 0, 0], np.eye(2))
    if model is not None:  # a recurrent state per agent, recorded at the start of both windows
        assert data['window_state_0'].shape == (2, columns, 8)
        assert collector.arena.home_state[0].shape == (3, 2, 2, 8)
    stats = policy.learn(data)
    assert stats['samples'] == int(data['value_mask'].sum())


@pytest.mark.slow
def test_the_tracker_team_beats_the_random_team_and_a_ready_league_runs(tmp_path):
    env, _ = make_env(1)
    tracker = BOT_REGISTRY.get('team_pong_heuristic')({}, env.observation_space, env.action_space, seed=1)
    rand = BOT_REGISTRY.get('random')({}, env.observation_space, env.action_space, seed=2)
    evaluator = BattleEvaluator(lambda: make_battle_env(dict(type='team_pong', max_steps=300), 16, 5), 16)
    [result] = evaluator.evaluate(tracker, [('random', rand)])
    assert result.win_rate >= 0.8

    config = copy.deepcopy(ready_config)
    config['exp_name'] = str(tmp_path / 'team')
    config['env'].update(collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=4, max_steps=40)
    config['policy']['collect'] = dict(n_steps=8)
    config['train'].update(max_env_steps=64, eval_every_iters=0, progress_bar=False, tensorboard=False)
    assert compile_config(config, save=False).env.team_spirit == 0.5
    summary = serial_pipeline(config, seed=0)
    assert set(summary['eval']['naive_sp_0']) == {'random', 'team_pong_heuristic'}
    assert summary['env_steps'] == 64
