"""The league API: job dicts, results from both sides, malformed input, evaluation, config."""
import threading

import numpy as np
import pytest

from sparring.config.compile import _merge_typed_section
from sparring.config.schema import ConfigError
from sparring.config.registry import LEAGUE_REGISTRY, PLAYER_REGISTRY
from sparring.league import (AlphaStarLeague, BattleRecordDict, LeagueError, OneVsOneLeague, UnknownPlayerError,
                             build_league)

EXACT = dict(decay=1.0, min_win_rate_games=0)


def test_registries_name_the_builtin_classes():
    assert {'one_vs_one', 'alphastar'} <= set(LEAGUE_REGISTRY.names())
    assert {'naive_sp', 'main_player', 'main_exploiter', 'league_exploiter', 'mlagents_sp',
            'openai_five_sp'} <= set(PLAYER_REGISTRY.names())
    assert isinstance(build_league(dict(type='alphastar')), AlphaStarLeague)


def test_job_info_dict():
    league = OneVsOneLeague(dict(episode_num=4, model=dict(hidden=32)))
    job = league.get_job_info('naive_sp_0')
    assert set(job) == {'job_id', 'launch_player', 'player_ids', 'branch', 'eval_flag', 'episode_num', 'players'}
    assert job['job_id'] == 0 and league.get_job_info('naive_sp_0')['job_id'] == 1
    assert job['launch_player'] == job['player_ids'][0] == 'naive_sp_0'
    assert job['branch'] in ('sp', 'pfsp') and job['eval_flag'] is False and job['episode_num'] == 4
    home, away = job['players']
    assert home == dict(player_id='naive_sp_0', kind='active', param_ref='naive_sp_0', model=dict(hidden=32),
                        step=0, player_type='naive_sp')
    assert away['player_id'] == job['player_ids'][1]
    assert league.get_job_info()['launch_player'] == 'naive_sp_0'  # None: any active player


def test_finish_job_records_both_sides_and_ratings():
    league = AlphaStarLeague(dict(payoff=EXACT))
    league.finish_job(dict(job_id=3, launch_player='main_player_0', player_ids=['main_player_0', 'league_exploiter_1'],
                           result=['win', 'win', 'draw', 'loss'], info=dict(env_steps=1234)))
    assert league.payoff.get_record('main_player_0', 'league_exploiter_1') == BattleRecordDict(2, 1, 1)
    assert league.payoff.get_record('league_exploiter_1', 'main_player_0') == BattleRecordDict(1, 1, 2)
    assert league.payoff.win_rate('main_player_0', 'league_exploiter_1') == 0.625
    assert league.ratings.elo['main_player_0'] > 1200 > league.ratings.elo['league_exploiter_1']
    assert league.ratings.elo['main_player_0'] + league.ratings.elo['league_exploiter_1'] == pytest.approx(2400)


def test_finish_job_takes_the_job_info_back_with_its_result_as_di_engine_sends_it():
    """DI-engine's commander answers a job with the job dict plus its result; its outcome spellings are plural."""
    league = OneVsOneLeague(dict(payoff=EXACT))
    job = league.get_job_info('naive_sp_0')
    league.finish_job(dict(job, result=['wins', 'draws', 'losses', 'win']))
    home, away = job['player_ids']
    if home != away:  # self-play games are only counted
        assert league.payoff.get_record(home, away) == BattleRecordDict(2, 1, 1)
    else:
        assert league.get_player(home).self_play_games == 4
    league.finish_job(dict(league.get_job_info('naive_sp_0', eval_flag=False), result=np.array(['losses'])))
    with pytest.raises(LeagueError, match='"players" .* expected the infos of the same two players'):
        league.finish_job(dict(job, player_ids=['naive_sp_0_h0', 'naive_sp_0'], launch_player='naive_sp_0',
                               result=['win']))


def test_outcomes_may_come_as_a_numpy_array():
    league = OneVsOneLeague(dict(payoff=EXACT))
    league.finish_job(dict(player_ids=['naive_sp_0', 'naive_sp_0_h0'], result=np.array(['win', 'draw'])))
    assert league.payoff.get_record('naive_sp_0', 'naive_sp_0_h0') == BattleRecordDict(1, 1, 0)


def test_self_play_games_are_counted_but_not_rated():
    league = OneVsOneLeague()
    league.finish_job(dict(player_ids=['naive_sp_0', 'naive_sp_0'], result=['win', 'loss']))
    assert league.get_player('naive_sp_0').self_play_games == 2
    assert league.payoff.totals('naive_sp_0')['games'] == 0 and league.ratings.elo['naive_sp_0'] == 1200


@pytest.mark.parametrize('job_result, error, message', [
    (dict(player_ids=['main_player_0', 'nobody'], result=['win']), UnknownPlayerError, "unknown player id 'nobody'"),
    (dict(player_ids=['ghost', 'main_player_0'], result=['win']), UnknownPlayerError, "'ghost'"),
    (dict(player_ids=['main_player_0', 'main_player_0_h0'], result=['win', 'victory']), LeagueError,
     r"result\[1\]: expected one of 'win', 'draw', 'loss' \(or DI-engine's 'wins', 'draws', 'losses'\), got 'victory'"),
    (dict(player_ids=['main_player_0', 'main_player_0_h0'], result=[['win', 'loss'], ['draw']]), LeagueError,
     'nested per-env lists'),
    (dict(player_ids=['main_player_0', 'main_player_0_h0'], result='win'), LeagueError, 'flat list'),
    (dict(player_ids=['main_player_0', 'main_player_0_h0'], result=[]), LeagueError, 'at least one'),
    (dict(player_ids=['main_player_0', 'main_player_0_h0'], result=[1, 0]), LeagueError, 'got 1'),
    (dict(player_ids=['main_player_0'], result=['win']), LeagueError, r'\[home_id, away_id\]'),
    (dict(player_ids=['main_player_0', 'main_player_0_h0', 'main_exploiter_0'], result=['win']), LeagueError,
     r'\[home_id, away_id\]'),
    (dict(player_ids=['main_player_0', 'main_player_0_h0']), LeagueError, 'missing "result"'),
    (dict(player_ids=['main_player_0', 'main_player_0_h0'], results=['win']), LeagueError,
     "'results' \\(did you mean 'result'\\?\\)"),
    (dict(player_id=['main_player_0', 'main_player_0_h0'], result=['win']), LeagueError, "did you mean 'player_ids'"),
    (dict(player_ids=['main_player_0', 'main_player_0_h0'], result=['win'], launch_player='main_exploiter_0'),
     LeagueError, 'launch_player'),
    (dict(player_ids=['main_player_0', 'main_player_0_h0'], result=np.array([['win'], ['loss']])), LeagueError,
     r'array of shape \(2, 1\)'),
    (['main_player_0', 'main_player_0_h0', 'win'], LeagueError, 'expected a dict'),
])
def test_malformed_result_raises_clearly_and_records_nothing(job_result, error, message, helpers):
    league = AlphaStarLeague()
    league.finish_job(dict(player_ids=['main_player_0', 'main_player_0_h0'], result=['win', 'loss']))
    before = league.state_dict()
    with pytest.raises(error, match=message):
        league.finish_job(job_result)
    helpers.assert_states_equal(league.state_dict(), before)


@pytest.mark.parametrize('info, message', [
    (dict(player_id='main_player_0', train_iteration=5), 'must be an int >= its current step 10'),
    (dict(player_id='main_player_0', train_iteration='11'), 'must be an int'),
    (dict(player_id='main_player_0_h0', train_iteration=11), 'is a historical player; expected an active player'),
    (dict(player_id='nobody', train_iteration=11), "unknown player id 'nobody'"),
    (dict(player_id='main_player_0', train_iter=11), "did you mean 'train_iteration'"),
    (dict(player_id='main_player_0', train_iteration=11, param_ref=3), '"param_ref" must be a str'),
])
def test_bad_player_updates(info, message, helpers):
    league = AlphaStarLeague()
    league.update_active_player(dict(player_id='main_player_0', train_iteration=10))
    before = league.state_dict()
    with pytest.raises(LeagueError, match=message):
        league.update_active_player(info)
    helpers.assert_states_equal(league.state_dict(), before)


def test_judge_snapshot_and_job_requests_need_active_players():
    league = OneVsOneLeague()
    assert league.judge_snapshot('naive_sp_0') == dict(player_id='naive_sp_0', snapshot=False, historical_player=None,
                                                      source_param_ref=None, reset=False, reset_param_ref=None)
    with pytest.raises(LeagueError, match='historical player'):
        league.judge_snapshot('naive_sp_0_h0')
    with pytest.raises(UnknownPlayerError):
        league.get_job_info('naive_sp_9')


def test_reference_players_for_evaluation_anchor_the_ratings():
    pytest.importorskip('trueskill')
    league = OneVsOneLeague(dict(
        rating=dict(trueskill=dict(enabled=True)),
        reference_players=[dict(player_id='random_bot', param_ref='bot:random', elo=0.0, trueskill=[0.0, 1.0]),
                           dict(player_id='scripted_bot', param_ref='bot:scripted')]))
    jobs = [league.get_job_info('naive_sp_0', eval_flag=True) for _ in range(4)]
    assert [j['player_ids'][1] for j in jobs] == ['random_bot', 'scripted_bot'] * 2  # each in turn
    assert jobs[0]['branch'] == 'eval' and jobs[0]['eval_flag'] is True
    assert jobs[0]['players'][1] == dict(player_id='random_bot', kind='reference', param_ref='bot:random', model={},
                                         step=0)
    assert [o['player_id'] for o in league.eval_opponents()] == ['random_bot', 'scripted_bot']
    for _ in range(5):
        league.record_eval_result('naive_sp_0', 'random_bot', ['win', 'win'])
    summary = league.ratings.summary('random_bot')
    assert (summary['elo'], summary['trueskill_mu'], summary['trueskill_sigma']) == (0.0, 0.0, 1.0)
    assert league.ratings.summary('scripted_bot')['elo'] == 1200.0  # the initial rating: it has played no game
    assert not league.ratings.elo.is_fixed('scripted_bot')  # only the first reference player anchors by default
    assert league.ratings.elo['naive_sp_0'] > 1200
    # Reference players are training opponents only through the reference branch.
    assert all(o.kind != 'reference' for o, _ in (league.get_player('naive_sp_0').get_opponent() for _ in range(200)))


def test_a_reference_player_that_is_not_an_anchor_is_rated():
    league = OneVsOneLeague(dict(reference_players=[
        dict(player_id='random_bot', param_ref='bot:random'),
        dict(player_id='heuristic', param_ref='bot:heuristic', anchor=False)]))
    for _ in range(5):
        league.record_eval_result('naive_sp_0', 'random_bot', ['win', 'win'])
        league.record_eval_result('naive_sp_0', 'heuristic', ['win', 'win'])
    assert league.ratings.elo['random_bot'] == 1200.0 and league.ratings.elo['heuristic'] < 1200.0
    with pytest.raises(ConfigError, match='anchor'):
        OneVsOneLeague(dict(reference_players=[dict(player_id='b', param_ref='bot:random', anchor='yes')]))


def test_with_two_reference_bots_one_anchors_and_the_other_is_fitted():
    """A player that beats the random bot 93 % of the time rates above it, and a bot that beats the player 99 %
    of the time rates above the player: only the first bot anchors the scale."""
    league = OneVsOneLeague(dict(reference_players=[dict(player_id='random', param_ref='bot:random'),
                                                    dict(player_id='strong', param_ref='bot:strong')]))
    assert [league.ratings.elo.is_fixed(b) for b in ('random', 'strong')] == [True, False]
    for game in range(100):
        league.record_eval_result('naive_sp_0', 'random', ['win' if game % 100 < 93 else 'loss'])
        league.record_eval_result('naive_sp_0', 'strong', ['win' if game == 50 else 'loss'])
    elo = league.ratings.elo
    assert elo['random'] == 1200.0 < elo['naive_sp_0'] < elo['strong']


def test_an_explicit_anchor_replaces_the_default_one_and_equal_anchors_are_warned_about():
    league = OneVsOneLeague(dict(reference_players=[dict(player_id='random', param_ref='bot:random'),
                                                    dict(player_id='strong', param_ref='bot:strong', anchor=True,
                                                         elo=2000.0)]))
    assert [league.ratings.elo.is_fixed(b) for b in ('random', 'strong')] == [False, True]
    with pytest.warns(UserWarning, match='random, strong are all anchors at the same Elo'):
        OneVsOneLeague(dict(reference_players=[dict(player_id='random', param_ref='bot:random', anchor=True),
                                               dict(player_id='strong', param_ref='bot:strong', anchor=True)]))


def test_eval_without_reference_players_says_what_to_add():
    with pytest.raises(LeagueError, match='league.reference_players'):
        OneVsOneLeague().get_job_info('naive_sp_0', eval_flag=True)


def test_compiled_config_section_builds_the_league():
    # What compile_config does with a config's league section.
    section = _merge_typed_section(None, dict(type='alphastar', active_players=dict(main_player=2),
                                              players=dict(main_player=dict(one_phase_step=50))), 'league')
    assert section['players']['main_player']['one_phase_step'] == 50
    assert section['players']['main_player']['branch_probs'] == dict(pfsp=0.5, sp=0.35, verification=0.15)
    league = build_league(section)
    assert [p.player_id for p in league.active_players] == ['main_player_0', 'main_player_1']
    assert league.active_players[0].cfg.one_phase_step == 50
    with pytest.raises(ConfigError, match='league.players.main_player.one_phase_step'):
        _merge_typed_section(None, dict(type='alphastar', players=dict(main_player=dict(one_phase_step=0))), 'league')
    with pytest.raises(ConfigError, match="'main_exploiter' needs at least one 'main_player'"):
        AlphaStarLeague(dict(active_players=dict(main_exploiter=1)))
    with pytest.raises(ConfigError, match='does not name OneVsOneLeague'):
        OneVsOneLeague(dict(type='alphastar'))


def test_league_is_safe_to_share_between_threads():
    league = AlphaStarLeague()
    errors = []

    def work(player_id):
        try:
            for _ in range(300):
                job = league.get_job_info(player_id)
                league.finish_job(dict(player_ids=job['player_ids'], result=['win', 'loss']))
        except Exception as err:  # noqa: BLE001 -- pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(p.player_id,)) for p in league.active_players]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    total = sum(league.payoff.totals(p.player_id)['games'] for p in league.roster.players)
    self_play = sum(p.self_play_games for p in league.active_players)
    games = len(league.active_players) * 300 * 2
    assert total == 2 * (games - self_play)  # every game between two players counted once on each side


def test_cached_player_groups_follow_new_snapshots(helpers):
    league = AlphaStarLeague(dict(players=dict(main_player=dict(one_phase_step=1))))
    before = league.roster.historical()  # cached now
    assert len(league.roster.snapshots_of('main_player_0')) == 1
    helpers.advance(league, 'main_player_0', 2)
    groups = [league.roster.historical(), league.roster.snapshots_of('main_player_0')]
    assert len(groups[0]) == len(before) + 1 and groups[1].ids == ['main_player_0_h0', 'main_player_0_h1']
    for group in groups:
        assert list(group.indices) == [league.payoff.index_of(i) for i in group.ids]
    fresh = type(league.roster)()
    for player in league.roster.players:
        fresh.add(player)
    assert fresh.historical().ids == league.roster.historical().ids
