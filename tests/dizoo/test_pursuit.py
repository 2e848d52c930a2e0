"""Pursuit and evasion, the asymmetric game of two roles: its rules, its bots (one per role) and its ready league,
in which each role has its own player, network and population and meets the other role only."""
import os

import numpy as np
import pytest
import torch

from sparring.config.compile import compile_config
from sparring.config.registry import BOT_REGISTRY
from sparring.config.schema import ConfigError
from sparring.dizoo.pursuit.pursuit_env import DIRECTIONS, EVADER, PURSUER
from sparring.framework import serial_pipeline
from sparring.framework.cli import load_config_file
from sparring.framework.run_setup import complete_league_config
from sparring.league import BaseLeague
from sparring.worker.battle_evaluator import BattleEvaluator
from sparring.worker.env.battle import make_battle_env
from sparring.worker.env.check import check_env
from sparring.worker.policy_pool import ParamStore, PolicyPool

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, 'dizoo', 'pursuit', 'config', 'pursuit_league.py')


@pytest.mark.parametrize('discrete', [False, True])
def test_check_env_passes_with_each_seats_own_spaces(discrete):
    report = check_env(dict(type='pursuit', discrete=discrete), games=4)
    assert report.passed, report.format()
    assert "seat player_0, role 'pursuer': observation Box(-3.0, 3.0, (6,), float32)" in report.format()
    assert "seat player_1, role 'evader': observation Box(-3.0, 3.0, (8,), float32)" in report.format()


def test_a_pursuer_standing_on_the_evader_wins_and_an_evader_never_caught_wins_at_the_time_limit():
    env = make_battle_env(dict(type='pursuit', max_steps=3), 2, seed=0)
    env.reset()
    env.pos[0, EVADER] = env.pos[0, PURSUER] + [0.1, 0.0]  # within the capture radius after a still step
    still = [np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32)]
    step = env.step(still)
    assert step.terminated.tolist() == [True, False] and step.result[0].tolist() == [1, -1]
    assert step.reward[0, 0] == pytest.approx(1.0) and step.reward[0].sum() == pytest.approx(0.0)
    for _ in range(2):
        step = env.step(still)
    assert step.terminated[1] and step.result[1].tolist() == [-1, 1]


def test_discrete_moves_are_the_compass_directions_at_each_roles_speed():
    env = make_battle_env(dict(type='pursuit', discrete=True), 1, seed=0)
    env.reset()
    before = env.pos.copy()
    env.step([np.array([1]), np.array([3])])  # the pursuer east, the evader north
    assert DIRECTIONS[1].tolist() == [1.0, 0.0] and DIRECTIONS[3].tolist() == pytest.approx([0.0, 1.0])
    np.testing.assert_allclose(env.pos[0] - before[0], [[0.06, 0.0], [0.0, 0.06]], atol=1e-6)


def _bot(name, env, seat, **options):
    return BOT_REGISTRY.get(name)(options, env.observation_spaces[seat], env.action_spaces[seat], seed=0)


@pytest.mark.parametrize('discrete', [False, True])
def test_each_roles_scripted_bot_beats_the_other_roles_random_bot(discrete):
    env = make_battle_env(dict(type='pursuit', discrete=discrete), 1, seed=0)
    evaluator = BattleEvaluator(lambda: make_battle_env(dict(type='pursuit', discrete=discrete), 8, seed=1), 16)
    chase_vs_random, = evaluator.evaluate(_bot('pursuit_chase', env, PURSUER), [('r', _bot('random', env, EVADER))],
                                          role='pursuer')
    flee_vs_random, = evaluator.evaluate(_bot('pursuit_flee', env, EVADER), [('r', _bot('random', env, PURSUER))],
                                         role='evader')
    assert chase_vs_random.win_rate >= 0.75 and flee_vs_random.win_rate >= 0.75


def test_a_bot_of_one_role_is_refused_for_the_other(tmp_path):
    env = make_battle_env(dict(type='pursuit'), 1, seed=0)
    pool = PolicyPool(ParamStore(str(tmp_path)), env.observation_spaces[EVADER], env.action_spaces[EVADER],
                      role='evader')
    assert pool.get('bot:pursuit_flee').role == 'evader'
    with pytest.raises(ConfigError, match=r"bot:pursuit_chase: the bot plays the role pursuer; expected a bot that "
                                          r"plays 'evader'"):
        pool.get('bot:pursuit_chase')
    with pytest.raises(ValueError, match=r"observation shape \(8,\); expected \(6,\)"):
        _bot('pursuit_chase', env, EVADER)


def test_the_league_of_a_role_game_is_completed_from_its_roles():
    cfg = compile_config(dict(env=dict(type='pursuit'), policy=dict(type='ppo')), save=False)
    complete_league_config(cfg)
    assert cfg.league.roles and cfg.league.player_category == ['pursuer', 'evader']
    assert [(r.player_id, r.category) for r in cfg.league.reference_players] == [
        ('random_pursuer', 'pursuer'), ('random_evader', 'evader')]
    assert cfg.battle.eval_opponents == ['bot:pursuit_chase', 'bot:pursuit_flee']
    bad = compile_config(dict(env=dict(type='pursuit'), policy=dict(type='ppo'),
                              league=dict(type='one_vs_one', player_category=['red', 'blue'])), save=False)
    with pytest.raises(ConfigError, match=r'"league.player_category": \[\'red\', \'blue\'\] in a game whose seats '
                                          r'have the roles \[\'pursuer\', \'evader\'\]; expected the roles'):
        complete_league_config(bad)


def short(exp, max_env_steps):
    """The ready config cut to a few rounds of a test."""
    config = load_config_file(CONFIG)
    config['exp_name'] = str(exp)
    config['env'].update(collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=4, max_steps=6)
    config['policy']['model'] = dict(hidden_sizes=[16])
    config['policy']['collect'] = dict(n_steps=8)
    config['policy']['learn'].update(epochs=1, num_minibatches=1)
    config['league']['players']['naive_sp']['one_phase_step'] = 2
    config['train'] = dict(max_env_steps=max_env_steps, eval_every_iters=3, checkpoint_every_iters=3,
                           progress_bar=False, tensorboard=False)
    return config


@pytest.mark.slow
def test_each_role_trains_its_own_player_against_the_other_role_and_resumes(tmp_path):
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    exp = tmp_path / 'pursuit'
    try:
        serial_pipeline(short(exp, 2 * 32 * 4), seed=0)
        first = BaseLeague.load(str(exp / 'league_state.npz'))
        summary = serial_pipeline(short(exp, 2 * 32 * 7), seed=0, resume=True)
    finally:
        torch.set_num_threads(before)
    league = BaseLeague.load(str(exp / 'league_state.npz'))
    assert {p.player_id: p.category for p in league.active_players} == {
        'naive_sp_pursuer_0': 'pursuer', 'naive_sp_evader_0': 'evader'}
    # every game paired the two roles: no player met its own role (nor itself), and each met the other role's bot
    for home_id, away_id, _ in league.payoff.played_pairs():
        assert league.get_player(home_id).category != league.get_player(away_id).category, (home_id, away_id)
    _, _, games = league.category_payoff()
    assert games[0, 1] > 0 and games[1, 0] > 0  # the two roles met in training
    # the resumed run kept the first run's snapshots, with their roles, and trained on
    kept = {p.player_id: p.category for p in first.historical_players}
    assert kept.items() <= {p.player_id: p.category for p in league.historical_players}.items()
    assert all(league.get_player(pid).step > first.get_player(pid).step for pid in ('naive_sp_pursuer_0',
                                                                                     'naive_sp_evader_0'))
    # each role starts from parameters of its own, a network built for its own observations
    store = ParamStore(str(exp / 'params'))
    inputs = {role: min(v.shape[-1] for v in store.get(f'init_{role}')['params'].values() if v.ndim == 2)
              for role in ('pursuer', 'evader')}
    assert inputs == {'pursuer': 6, 'evader': 8}
    # each role is evaluated against the other role's bots only
    evaluated = summary['eval']
    assert set(evaluated['naive_sp_pursuer_0']) == {'random_evader', 'pursuit_flee'}
    assert set(evaluated['naive_sp_evader_0']) == {'random_pursuer', 'pursuit_chase'}


@pytest.mark.parametrize('key, value, message', [
    ('battle', dict(exact_analysis=True), r'"battle.exact_analysis": env .pursuit. offers no exact analysis of its roles'),
    ('battle', dict(collect_search=dict(num_simulations=8)),
     r'"battle.collect_search": a search evaluates both seats\' positions with one network .* has a network per role'),
])
def test_tools_of_symmetric_games_are_refused_in_a_role_game(key, value, message):
    cfg = compile_config({'env': dict(type='pursuit'), 'policy': dict(type='ppo'), key: value}, save=False)
    with pytest.raises(ConfigError, match=message):
        complete_league_config(cfg)


def test_a_role_game_may_act_through_forward_pass_workers():
    """Forward-pass workers serve each role's networks (they were refused in a game with roles)."""
    cfg = compile_config(dict(env=dict(type='pursuit'), policy=dict(type='ppo'),
                              parallel=dict(inference=dict(workers=1))), save=False)
    complete_league_config(cfg)
    assert cfg.parallel.inference.workers == 1 and list(cfg.league.player_category) == ['pursuer', 'evader']


@pytest.mark.slow
@pytest.mark.parametrize('policy, env', [
    (dict(type='sac', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8)), dict()),  # Box moves, SAC
    (dict(type='ppo', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8),
          learn=dict(epochs=1, num_minibatches=1)), dict(discrete=True)),  # compass moves, PPO
])
def test_sac_and_discrete_moves_train_a_league_of_roles(tmp_path, policy, env):
    summary = serial_pipeline(dict(
        exp_name=str(tmp_path / 'run'), policy=policy,
        env=dict(type='pursuit', collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=4, max_steps=6, **env),
        train=dict(max_env_steps=256, eval_every_iters=0, progress_bar=False, tensorboard=False)), seed=0)
    assert summary['env_steps'] >= 256
    assert set(summary['eval']['naive_sp_pursuer_0']) == {'random_evader', 'pursuit_flee'}
    assert set(summary['eval']['naive_sp_evader_0']) == {'random_pursuer', 'pursuit_chase'}
    league = BaseLeague.load(str(tmp_path / 'run' / 'league_state.npz'))
    _, _, games = league.category_payoff()
    assert games[0, 1] > 0


@pytest.mark.slow
@pytest.mark.parametrize('resume_in_background', [True, False])
def test_evaluations_in_flight_at_a_checkpoint_are_played_for_each_players_role(tmp_path, resume_in_background):
    from sparring.framework.run_setup import prepare_config
    from sparring.framework.serial_run import SerialRun
    config = short(tmp_path / 'saved', 2 * 32 * 20)
    config['train'].update(eval_in_background=True)
    run = SerialRun(prepare_config(config))
    try:
        for _ in range(3):
            run.train_round()
        run.evaluate_pending()
        state = run.state_dict()
    finally:
        run.close()
    assert {e['player_id'] for e in state['evaluations_in_flight']} == {'naive_sp_pursuer_0', 'naive_sp_evader_0'}
    config['train']['eval_in_background'] = resume_in_background
    resumed = SerialRun(prepare_config(config, resume=True), state)
    try:
        resumed.settle_evaluations()
        assert set(resumed.last_eval['naive_sp_pursuer_0']) == {'random_evader', 'pursuit_flee'}
        assert set(resumed.last_eval['naive_sp_evader_0']) == {'random_pursuer', 'pursuit_chase'}
        assert not resumed.evaluations.in_flight
    finally:
        resumed.close()
