"""The run coordinator with a game of three seats: jobs of a tuple of opponents (drawn again past a quarantined
snapshot in any seat), results as rankings through a typed league operation that replays to the same league after
a crash, rated evaluation games as rankings, and the evaluation's report worked by hand."""
import copy
import json

import pytest

from sparring.framework.coordinator import RunCoordinator
from sparring.framework.league_ops import JobsOp
from sparring.framework.run_setup import closing_report, opponent_lines, prepare_config
from sparring.framework.seat_games import RankedGames, ranked_groups
from sparring.worker.evaluation import GameEvaluation
from sparring.worker.multiseat_evaluation import MultiSeatEvaluation
from sparring.worker.run_kind import MultiSeatKind, run_kind

pytest.importorskip('pyspiel')
from sparring.dizoo.openspiel.config.kuhn3_league import config as KUHN3


def coordinator(tmp_path, name='run', players=None):
    config = copy.deepcopy(KUHN3)
    config.update(exp_name=str(tmp_path / name))
    if players is not None:
        config['league']['players']['naive_sp'].update(players)
    cfg = prepare_config(config)
    return RunCoordinator(cfg, run_kind(cfg))


def test_a_game_of_three_seats_makes_a_multiseat_kind_and_jobs_of_two_opponents(tmp_path):
    co = coordinator(tmp_path)
    assert isinstance(co.kind, MultiSeatKind) and co.kind.seats == 3 and co.seat_games.seats == 3
    (job,) = co.apply(JobsOp(op='jobs', player='naive_sp_0', n=1, session='s'))
    assert len(job['player_ids']) == 3 and job['player_ids'][0] == 'naive_sp_0'


def test_ranked_games_replayed_from_the_journal_give_the_same_league(tmp_path):
    first = coordinator(tmp_path, 'first')
    entries = []
    jobs = JobsOp(op='jobs', player='naive_sp_0', n=4, session='s')
    infos = first.apply(jobs)
    entries.append(jobs)
    rankings = [(info['player_ids'], ranks, None) for info, ranks in zip(infos, ([0, 1, 2], [2, 0, 1], [1, 1, 0], [0, 2, 2]))]
    # the home player's two self-play seats and the random bot (a reference player) in one job
    rankings.append((['naive_sp_0', 'random', 'naive_sp_0'], [0, 2, 1], None))
    games = RankedGames.entry('naive_sp_0', rankings, env_steps=40, chunk_id='c1',
                              job_ids=[info['job_id'] for info in infos] + [99])
    first.apply(games)
    entries.append(games)
    assert first.env_steps == 40 and first.counters['games'] == 5
    assert first.league.payoff.totals('random')['games'] == 2  # it met the player in both its seats
    replayed = coordinator(tmp_path, 'replayed')
    for entry in json.loads(json.dumps(entries)):  # as the journal writes and reads them
        replayed.apply(entry)
    assert replayed.league.table() == first.league.table()
    assert replayed.env_steps == 40 and dict(replayed.counters) == dict(first.counters)


def test_a_job_with_a_quarantined_snapshot_in_any_seat_is_drawn_again_then_stood_in_for(tmp_path):
    co = coordinator(tmp_path)
    home = co.league.get_player('naive_sp_0').info()
    bad = dict(home, player_id='naive_sp_0_h1', param_ref='naive_sp_0_h1', kind='historical')
    good = dict(home, player_id='random', param_ref='bot:random', kind='reference')
    draws = iter([dict(job_id=1, player_ids=['naive_sp_0', 'random', 'naive_sp_0_h1'], players=[home, good, bad],
                       branch='sp+pfsp'),
                  dict(job_id=2, player_ids=['naive_sp_0', 'random', 'random'], players=[home, good, good],
                       branch='sp+sp')])
    co.league.get_job_info = lambda pid, eval_flag=False: next(draws)
    co.dropped['naive_sp_0_h1'] = 'damaged'
    assert co.draw_job('naive_sp_0')['job_id'] == 2
    co.league.get_job_info = lambda pid, eval_flag=False: dict(job_id=3, player_ids=['naive_sp_0', 'random',
                                                                                     'naive_sp_0_h1'],
                                                               players=[home, good, bad], branch='sp+pfsp')
    instead = co.draw_job('naive_sp_0')
    assert instead['player_ids'] == ['naive_sp_0'] * 3 and instead['branch'] == 'instead_of_quarantined'


def test_games_against_a_quarantined_snapshot_are_not_recorded(tmp_path):
    co = coordinator(tmp_path)
    co.dropped['bot:random'] = 'damaged'
    entry = RankedGames.entry('naive_sp_0', [(['naive_sp_0', 'random', 'naive_sp_0'], [0, 1, 2], None)], 8)
    co.apply(entry)
    assert entry['dropped'] == ['bot:random'] and co.counters['results_quarantined'] == 1 and co.counters['games'] == 0


def test_rated_evaluation_games_are_recorded_as_rankings_and_reported_by_hand(tmp_path):
    co = coordinator(tmp_path)
    journal = []
    results = [[['random', 'random'], [0, 1, 1], None], [['random', 'random'], [2, 0, 1], None]]
    report = co.record_evaluation('naive_sp_0', results, [1.0, -2.0], journal=journal.append)
    assert report == dict(chips=-0.5, games=2, ahead=dict(random=0.5), vs=dict(random=dict(win=0.5, draw=0.0, loss=0.5, games=4)))
    (entry,) = journal
    assert entry['op'] == 'ranked_eval' and entry['games'] == [[['naive_sp_0', 'random', 'random'], [],
                                                                 [[0, 1, 1], [2, 0, 1]], None]]
    assert co.counters['eval_games'] == 2
    assert co.league.payoff.totals('random')['games'] == 4  # it met the player twice a game


def test_evaluation_games_with_an_unrated_opponent_are_reported_not_recorded():
    entry = RankedGames.eval_entry('p', [[['random', 'other'], [0, 1, 2], None]], rated={'random'})
    assert entry is None
    report, score, text = MultiSeatEvaluation.summarise([[['random', 'other'], [1, 0, 2], None],
                                                         [['random', 'other'], [0, 0, 2], None]], [0.5, 1.5])
    # ahead of random: behind it (0), tied with it (0.5); of other: ahead twice
    assert report == dict(chips=1.0, games=2, ahead=dict(random=0.25, other=1.0),
                          vs=dict(random=dict(win=0.0, draw=0.5, loss=0.5, games=2),
                                  other=dict(win=1.0, draw=0.0, loss=0.0, games=2))) and score == 0.25
    assert text == 'chips 1.000, ahead of random:0.25 other:1.00'
    assert MultiSeatEvaluation.summarise([], []) == ({}, None, 'no evaluation opponents')


def test_ranked_groups_keep_the_order_of_first_finish_and_group_by_players_and_teams():
    games = [(['a', 'b', 'c'], [0, 1, 2], None), (['a', 'c', 'b'], [1, 0, 2], None), (['a', 'b', 'c'], [2, 1, 0], None),
             (['a', 'b', 'c'], [0, 0, 1], [0, 0, 1])]
    assert ranked_groups(games, [5, 6, 7, 8]) == [[['a', 'b', 'c'], [5, 7], [[0, 1, 2], [2, 1, 0]], None],
                                                  [['a', 'c', 'b'], [6], [[1, 0, 2]], None],
                                                  [['a', 'b', 'c'], [8], [[0, 0, 1]], [0, 0, 1]]]


class Strongest:
    """An exact analysis standing in for OpenSpiel's: a profile is the policy (here its ref), and the meta-strategy
    puts all its weight on the candidate named ``strongest``."""

    def __init__(self, strongest):
        self.strongest = strongest

    def profile(self, policy):
        return policy

    def meta_capacity(self):
        return 32

    def meta_strategy(self, profiles):
        return [1.0 if profile == self.strongest else 0.0 for profile in profiles]


def test_with_the_exact_analysis_the_nash_branch_draws_every_seat_from_the_exact_meta_strategy(tmp_path, monkeypatch):
    co = coordinator(tmp_path, players=dict(branch_probs=dict(nash=1.0), one_phase_step=1))
    for step in (2, 4):
        co.league.update_active_player(dict(player_id='naive_sp_0', train_iteration=step))
        assert co.league.judge_snapshot('naive_sp_0')['snapshot']
    strongest = co.league.get_player('naive_sp_0_h1').param_ref
    monkeypatch.setattr('sparring.framework.coordinator.exact_analysis_of', lambda env, cfg: Strongest(strongest))
    co.use_exact_analysis(lambda ref: ref)
    # no game played: the payoff's meta-game is even and would mix every snapshot; the exact one picks h1
    jobs = co.apply(JobsOp(op='jobs', player='naive_sp_0', n=20, session='s'))
    assert {pid for job in jobs for pid in job['player_ids'][1:]} == {'naive_sp_0_h1'}
    assert {job['branch'] for job in jobs} == {'nash+nash'}


def test_the_closing_report_prints_each_evaluated_player_s_rates_by_opponent(tmp_path):
    co = coordinator(tmp_path)
    results = [[['random', 'naive_sp_0_h0'], [1, 0, 2], None], [['random', 'naive_sp_0_h0'], [0, 0, 2], None]]
    co.record_evaluation('naive_sp_0', results, [0.5, 1.5])
    lines = []
    closing_report(co.league, co.last_eval, str(tmp_path), lines.append, MultiSeatEvaluation.opponent_rates)
    # the pairwise games worked by hand: behind random then tied with it; ahead of the snapshot twice
    assert ('naive_sp_0 vs random: ahead 25.0% (win 0.0% draw 50.0% loss 50.0%), naive_sp_0_h0: ahead 100.0% '
            '(win 100.0% draw 0.0% loss 0.0%)') in lines


def test_two_seat_closing_lines_are_unchanged_and_a_player_without_rates_has_none():
    two_seat = dict(p=dict(bot=dict(win=0.5, draw=0.25, loss=0.25, games=4)), q={})
    assert opponent_lines(two_seat, GameEvaluation.opponent_rates) == ['p vs bot: win 50.0% draw 25.0% loss 25.0%']
