"""Leagues of three or more seats: a job draws a tuple of opponents, results come as rankings (free-for-all or
teams), the payoff and Elo take their pairwise games, TrueSkill rates the rankings natively; two seats unchanged."""
from collections import Counter

import numpy as np
import pytest

from sparring.config.schema import ConfigError
from sparring.league import LeagueError, OneVsOneLeague
from sparring.league.rating import EloRating

EXACT = dict(decay=1.0, min_win_rate_games=0)


def league_of(seats=3, **cfg):
    return OneVsOneLeague(dict(dict(seats=seats, active_players=dict(naive_sp=1), payoff=EXACT), **cfg))


def record(league, ids, result, **extra):
    league.finish_job(dict(player_ids=ids, result=result, **extra))


HOME, PAST = 'naive_sp_0', 'naive_sp_0_h0'


# ------------------------------------------------------------------------------- jobs
def test_a_job_draws_one_opponent_per_other_seat_each_by_its_branch():
    league = league_of(seats=4)
    jobs = [league.get_job_info(HOME) for _ in range(400)]
    assert all(len(j['player_ids']) == 4 and len(j['players']) == 4 and j['player_ids'][0] == HOME for j in jobs)
    assert all([p['player_id'] for p in j['players']] == j['player_ids'] for j in jobs)
    assert all(j['branch'] == '+'.join(j['branches']) and len(j['branches']) == 3 for j in jobs)
    # naive_sp's branches are pfsp 0.5 / sp 0.5, drawn per seat: every mix of the two appears
    mixes = Counter(tuple(sorted(j['branches'])) for j in jobs)
    assert set(mixes) == {('pfsp',) * 3, ('pfsp', 'pfsp', 'sp'), ('pfsp', 'sp', 'sp'), ('sp',) * 3}
    for j in jobs:
        for opponent, branch in zip(j['player_ids'][1:], j['branches']):
            assert opponent == (HOME if branch == 'sp' else PAST)


def test_two_seat_jobs_keep_their_shape():
    job = OneVsOneLeague(dict(active_players=dict(naive_sp=1))).get_job_info(HOME)
    assert len(job['player_ids']) == 2 and 'branches' not in job


def test_an_evaluation_job_seats_the_reference_players_in_turn():
    refs = [dict(player_id=f'bot_{i}', param_ref=f'bot:{i}') for i in range(3)]
    league = league_of(reference_players=refs)
    ids = [league.get_job_info(HOME, eval_flag=True)['player_ids'] for _ in range(3)]
    assert ids == [[HOME, 'bot_0', 'bot_1'], [HOME, 'bot_2', 'bot_0'], [HOME, 'bot_1', 'bot_2']]


def test_seats_must_be_two_or_more():
    with pytest.raises(ConfigError, match='seats'):
        league_of(seats=1)


# ------------------------------------------------------------------------------- results
def test_a_ranking_is_decomposed_into_pairwise_games():
    refs = [dict(player_id='bot', param_ref='bot:random')]
    league = league_of(reference_players=refs)
    record(league, [HOME, PAST, 'bot'], [[0, 1, 2], [2, 0, 0], [1, 1, 0]])
    # home against the snapshot: win, loss, draw; against the bot: win, loss, loss; snapshot against bot: win, draw, loss
    assert dict(league.payoff.get_record(HOME, PAST)) == dict(wins=1, draws=1, losses=1, games=3)
    assert dict(league.payoff.get_record(HOME, 'bot')) == dict(wins=1, draws=0, losses=2, games=3)
    assert dict(league.payoff.get_record(PAST, 'bot')) == dict(wins=1, draws=1, losses=1, games=3)


def test_a_player_seated_twice_does_not_play_itself():
    league = league_of()
    record(league, [HOME, HOME, PAST], [[0, 1, 2], [2, 1, 0]])
    assert league.get_player(HOME).self_play_games == 2
    # two seats of the home player against the snapshot, two episodes: four games
    assert dict(league.payoff.get_record(HOME, PAST)) == dict(wins=2, draws=0, losses=2, games=4)


def test_team_results_compare_only_players_of_different_teams():
    refs = [dict(player_id=f'bot_{i}', param_ref=f'bot:{i}') for i in range(2)]
    league = league_of(seats=4, reference_players=refs)
    record(league, [HOME, 'bot_0', PAST, 'bot_1'], [[0, 1, 0, 1]], teams=['a', 'b', 'a', 'b'])
    assert dict(league.payoff.get_record(HOME, PAST)) == dict(wins=0, draws=0, losses=0, games=0)
    assert dict(league.payoff.get_record('bot_0', 'bot_1'))['games'] == 0
    for ours in (HOME, PAST):
        for theirs in ('bot_0', 'bot_1'):
            assert dict(league.payoff.get_record(ours, theirs)) == dict(wins=1, draws=0, losses=0, games=1)


@pytest.mark.parametrize('result, teams, message', [
    ([[0, 1, 3]], None, r'result\[0\]: expected 3 ranks in 0..2'),
    (['win'], None, r'result\[0\]: expected 3 ranks'),
    ([], None, 'non-empty list of rankings'),
    ([[0, 1, 1]], [0, 0, 0], 'one team'),
    ([[0, 1, 1]], [0, 1], 'one team label per player id'),
    ([[0, 1, 0]], [0, 0, 1], r'teammates \(seats \[0, 1\]\) have ranks \[0, 1\]'),
])
def test_a_malformed_ranking_is_refused_and_records_nothing(result, teams, message):
    league = league_of()
    extra = {} if teams is None else dict(teams=teams)
    with pytest.raises(LeagueError, match=message):
        record(league, [HOME, PAST, PAST], result, **extra)
    assert league.payoff.totals(HOME)['games'] == 0


def test_a_job_of_the_wrong_size_names_the_seats():
    with pytest.raises(LeagueError, match=r'\[home_id, \.\.\.\] \(3 ids, one per seat\)'):
        record(league_of(), [HOME, PAST], ['win'])
    with pytest.raises(LeagueError, match='three or more seats'):
        record(OneVsOneLeague(dict(active_players=dict(naive_sp=1))), [HOME, PAST], ['win'], teams=[0, 1])


# ------------------------------------------------------------------------------- ratings
def test_elo_rates_the_pairwise_games_and_trueskill_the_ranking():
    refs = [dict(player_id='bot', param_ref='bot:random', anchor=False)]
    league = league_of(reference_players=refs, rating=dict(trueskill=dict(enabled=True)))
    record(league, [HOME, PAST, 'bot'], [[1, 0, 2]])
    elo = EloRating()
    for a, b, result in ((HOME, PAST, 'loss'), (HOME, 'bot', 'win'), (PAST, 'bot', 'win')):  # pair by pair
        elo.update(a, b, result)
    assert [league.ratings.elo[p] for p in (HOME, PAST, 'bot')] == pytest.approx([elo[p] for p in (HOME, PAST, 'bot')])
    env = league.ratings.trueskill.env
    start = env.create_rating()
    expected = env.rate([(start,), (start,), (start,)], ranks=[1, 0, 2])
    for pid, (rating,) in zip((HOME, PAST, 'bot'), expected):
        assert (league.ratings.trueskill[pid].mu, league.ratings.trueskill[pid].sigma) == \
            pytest.approx((rating.mu, rating.sigma))


def test_trueskill_rates_teams_at_their_rank_and_keeps_anchors_fixed():
    refs = [dict(player_id='anchor', param_ref='bot:a'), dict(player_id='bot', param_ref='bot:b', anchor=False)]
    league = league_of(seats=4, reference_players=refs, rating=dict(trueskill=dict(enabled=True)))
    ts = league.ratings.trueskill
    before = {pid: ts[pid] for pid in (HOME, PAST, 'anchor', 'bot')}
    record(league, [HOME, 'anchor', PAST, 'bot'], [[0, 1, 0, 1]], teams=[0, 1, 0, 1])
    expected = ts.env.rate([{HOME: before[HOME], PAST: before[PAST]}, {'anchor': before['anchor'], 'bot': before['bot']}],
                           ranks=[0, 1])
    for group in expected:
        for pid, rating in group.items():
            want = before[pid] if pid == 'anchor' else rating
            assert (ts[pid].mu, ts[pid].sigma) == pytest.approx((want.mu, want.sigma))
    assert ts[HOME].mu > before[HOME].mu and ts['bot'].mu < before['bot'].mu


def test_a_player_seated_twice_enters_trueskill_once():
    league = league_of(rating=dict(trueskill=dict(enabled=True)))
    ts = league.ratings.trueskill
    start = ts[HOME]
    record(league, [HOME, PAST, HOME], [[2, 1, 0]])  # rated by its first seat: last of two
    (home,), (past,) = ts.env.rate([(start,), (start,)], ranks=[2, 1])
    assert ts[HOME].mu == pytest.approx(home.mu) and ts[PAST].mu == pytest.approx(past.mu)


def test_a_three_seat_league_saves_and_restores(tmp_path):
    league = league_of(rating=dict(trueskill=dict(enabled=True)))
    record(league, [HOME, PAST, PAST], [[0, 1, 2]])
    league.save(str(tmp_path / 'league.pkl'))
    restored = type(league).load(str(tmp_path / 'league.pkl'))
    assert restored.cfg.seats == 3
    assert dict(restored.payoff.get_record(HOME, PAST)) == dict(league.payoff.get_record(HOME, PAST))
    assert [restored.get_job_info(HOME)['player_ids'] for _ in range(5)] == \
        [league.get_job_info(HOME)['player_ids'] for _ in range(5)]
    assert np.isclose(restored.ratings.trueskill[HOME].mu, league.ratings.trueskill[HOME].mu)


# ------------------------------------------------------------------------------- the nash branch
def nash_league(snapshots=2):
    """A three-seat league whose player draws every opponent by the ``nash`` branch, with ``snapshots`` snapshots
    beside the initial one."""
    league = league_of(players=dict(naive_sp=dict(branch_probs=dict(nash=1.0), one_phase_step=1)))
    for step in range(2, 2 * (snapshots + 1), 2):
        league.update_active_player(dict(player_id=HOME, train_iteration=step))
        assert league.judge_snapshot(HOME)['snapshot']
    return league


def opponents_drawn(league, jobs=300):
    job_infos = [league.get_job_info(HOME) for _ in range(jobs)]
    assert all(j['branches'] == ['nash', 'nash'] for j in job_infos)
    return Counter(pid for j in job_infos for pid in j['player_ids'][1:])


def test_without_a_source_the_nash_branch_solves_the_pairwise_meta_game_of_the_payoff():
    league = nash_league()
    # h1 finished ahead of h0 and h2 in every game they met: the pairwise meta-game's Nash is h1 alone
    record(league, ['naive_sp_0_h1', 'naive_sp_0_h0', 'naive_sp_0_h2'], [[0, 1, 2]] * 5)
    record(league, ['naive_sp_0_h1', 'naive_sp_0_h2', 'naive_sp_0_h0'], [[0, 1, 2]] * 5)
    assert league.meta_strategy(['naive_sp_0_h0', 'naive_sp_0_h1']) is None
    assert set(opponents_drawn(league)) == {'naive_sp_0_h1'}


def test_a_meta_strategy_source_gives_the_nash_branch_its_mixture_each_seat_drawn_on_its_own(helpers):
    league = nash_league()
    asked = []

    def source(ids):
        asked.append(list(ids))
        return [0.0 if pid.endswith('h0') else 0.25 if pid.endswith('h1') else 0.75 for pid in ids]

    league.set_meta_strategy_source(source)
    counts = opponents_drawn(league, jobs=400)
    assert asked[0] == ['naive_sp_0_h0', 'naive_sp_0_h1', 'naive_sp_0_h2']  # the candidates: every snapshot
    assert counts['naive_sp_0_h0'] == 0 and sum(counts.values()) == 800
    helpers.assert_frequency(counts['naive_sp_0_h2'], 800, 0.75, 'naive_sp_0_h2')
