"""A serial league run of three-player Kuhn poker (the ready config, cut to seconds) through ``serial_pipeline`` and
the run coordinator: the league records rankings, snapshots are stored and played, NashConv is measured by OpenSpiel,
evaluation games are rated, a run resumes; what it refuses."""
import copy
import os

import pytest

from sparring.config import compile_config
from sparring.config.schema import ConfigError
from sparring.framework.serial import serial_pipeline
from sparring.framework.serial_run import SerialRun
from sparring.league import BaseLeague

pytest.importorskip('pyspiel')
from sparring.dizoo.openspiel.config.kuhn3_league import config as KUHN3


def small(tmp_path, **train):
    config = copy.deepcopy(KUHN3)
    config.update(exp_name=str(tmp_path / 'kuhn3'))
    config['env'].update(collector_env_num=8)
    config['policy']['collect'].update(n_steps=8)
    config['league']['players']['naive_sp'].update(one_phase_step=2)
    config['train'].update(dict(dict(max_env_steps=64 * 12, max_wall_seconds=0.0, eval_every_iters=4,
                                     tensorboard=False, progress_bar=False), **train))
    return config


def test_the_ready_config_trains_a_three_seat_league_scored_by_nash_conv(tmp_path):
    summary = serial_pipeline(small(tmp_path))
    assert summary['env_steps'] == 64 * 12 and summary['rounds'] == 12
    assert [h['env_steps'] for h in summary['history']] == [64 * 4, 64 * 8, 64 * 12]
    assert summary['history'][-1]['exact']['nash_conv'] == summary['exact']['nash_conv']
    last = summary['exact']
    assert 0.0 < last['nash_conv']['naive_sp_0'] < 2.0625 + 1e-9  # uniform random play's is 2.0625
    assert last['snapshots'] >= 2 and last['meta_nash_conv'] > 0.0 and last['average_nash_conv'] > 0.0
    assert 1 <= last['meta_support'] <= last['snapshots'] + 1
    league = BaseLeague.load(os.path.join(summary['exp_dir'], 'league_state.npz'))
    assert league.cfg.seats == 3
    # every game's pairs are in the payoff: the home player met its snapshots as well as itself
    assert league.payoff.totals('naive_sp_0')['games'] > 0
    assert league.get_player('naive_sp_0').self_play_games > 0
    assert 'naive_sp_0_h1' in summary['league_table']
    assert {os.path.basename(p) for p in summary['pictures']} >= {'payoff.svg', 'ratings.svg'}
    # the trained player loads from the run, and scores what the run last measured
    from sparring import load_player
    from sparring.dizoo.openspiel.exploitability import policy_nash_conv
    player = load_player(summary['exp_dir'])
    assert policy_nash_conv('kuhn_poker', player, game_params=dict(players=3)) == \
        pytest.approx(last['nash_conv']['naive_sp_0'], abs=1e-6)


def test_league_seats_must_match_the_game(tmp_path):
    config = small(tmp_path)
    config['league'].update(seats=4)
    with pytest.raises(ConfigError, match=r'"league.seats": 4, but env .* has 3 seats; expected league.seats=3'):
        SerialRun(compile_config(config, save=False))


def test_a_resumed_run_continues_from_its_checkpoint(tmp_path):
    first = serial_pipeline(small(tmp_path, max_env_steps=64 * 6))
    assert first['checkpoint'].endswith('iter_00000006.pt')
    games = BaseLeague.load(os.path.join(first['exp_dir'], 'league_state.npz')).payoff.totals('naive_sp_0')['games']
    resumed = serial_pipeline(small(tmp_path, max_env_steps=64 * 6), resume=True, max_env_steps=64 * 10)
    assert resumed['env_steps'] == 64 * 10 and resumed['rounds'] == 10
    assert [h['env_steps'] for h in resumed['history']] == [64 * 4, 64 * 8]  # the history before, then the new
    league = BaseLeague.load(os.path.join(resumed['exp_dir'], 'league_state.npz'))
    assert league.get_player('naive_sp_0').step == 10  # the learner's iterations went on from 6
    assert league.payoff.totals('naive_sp_0')['games'] > games


def test_a_two_seat_game_refuses_a_league_of_three_seats(tmp_path):
    from sparring.dizoo.openspiel.config.kuhn_poker_mmd import config as two_seats
    config = copy.deepcopy(two_seats)
    config.update(exp_name=str(tmp_path / 'kuhn2'))
    config['league'].update(seats=3)
    with pytest.raises(ConfigError, match=r'"league.seats": 3, but env \'openspiel\' is a two-seat game; expected 2'):
        serial_pipeline(config)


def test_evaluation_games_seat_the_reference_players_and_are_rated(tmp_path):
    summary = serial_pipeline(small(tmp_path))
    report = summary['eval']['naive_sp_0']
    assert report['games'] == 16 and set(report['ahead']) == {'random'} and 0.0 <= report['ahead']['random'] <= 1.0
    assert -2.0 <= report['chips'] <= 4.0  # a three-player Kuhn hand wins at most 4 chips and loses at most 2
    league = BaseLeague.load(os.path.join(summary['exp_dir'], 'league_state.npz'))
    # three evaluations of 16 games with the random bot in both other seats: it meets the player twice a game (its
    # two seats do not play each other); the games are rated through the coordinator's league operation
    assert league.payoff.totals('random')['games'] == 3 * 16 * 2



def test_evaluations_in_the_background_send_their_rankings_back(tmp_path):
    summary = serial_pipeline(small(tmp_path, eval_in_background=True))
    report = summary['eval']['naive_sp_0']
    assert report['games'] == 16 and set(report['ahead']) == {'random'}
    league = BaseLeague.load(os.path.join(summary['exp_dir'], 'league_state.npz'))
    assert league.payoff.totals('random')['games'] == 3 * 16 * 2  # rated as the inline evaluations are


def test_the_report_page_draws_the_evaluations_and_the_nash_conv_of_a_three_seat_league(tmp_path):
    import json
    summary = serial_pipeline(small(tmp_path))
    with open(os.path.join(summary['exp_dir'], 'report_data.json')) as f:
        course = json.load(f)
    evaluations = [(e['env_steps'], sorted(e['results'])) for e in course['evaluations']]
    assert evaluations == [(64 * 4, ['random']), (64 * 8, ['random']), (64 * 12, ['random'])]
    last = course['evaluations'][-1]['results']['random']
    assert last['win'] + 0.5 * last['draw'] == pytest.approx(summary['eval']['naive_sp_0']['ahead']['random'])
    assert [e['values']['meta-strategy'] for e in course['exact']] == [h['exact']['meta_nash_conv']
                                                                      for h in summary['history']]
    with open(os.path.join(summary['exp_dir'], 'report.html')) as f:
        page = f.read()
    assert 'Exact NashConv' in page and 'naive_sp_0 vs random' in page


def test_the_stop_rule_reads_the_worst_ahead_rate(tmp_path):
    config = small(tmp_path)
    config['env'].update(stop_value=0.0)  # any evaluation reaches it: the run stops after the first
    summary = serial_pipeline(config)
    assert summary['reached_stop_value'] and summary['stop_env_steps'] == 64 * 4 == summary['env_steps']
