"""Opponent branches (seeded statistical checks), snapshot rules, resets, and custom players."""
import re
from collections import Counter

import numpy as np
import pytest

from sparring.config.schema import ConfigError
from sparring.config.registry import PLAYER_REGISTRY
from sparring.league import (AlphaStarLeague, LeagueError, NaiveSpPlayer, OneVsOneLeague, pfsp_probabilities)
from sparring.league.alphastar_player import forgotten_prefix_length

EXACT = dict(decay=1.0, min_win_rate_games=0)  # win rates are exact fractions of the recorded games
N = 20000


def opponents(league, player_id, n=N):
    """Counts of (opponent id) and (branch) over ``n`` opponent choices of ``player_id``.

    Calls the player's ``get_opponent`` directly (what ``get_job_info`` uses) to keep the
    statistical tests fast; test_league.py covers the job dicts.
    """
    player = league.get_player(player_id)
    choices = [player.get_opponent() for _ in range(n)]
    return Counter(o.player_id for o, _ in choices), Counter(b for _, b in choices)


# ---------------------------------------------------------------------------------- naive sp
def test_naive_sp_branch_probabilities(helpers):
    league = OneVsOneLeague(dict(players=dict(naive_sp=dict(branch_probs=dict(pfsp=0.3, sp=0.7)))))
    by_opponent, by_branch = opponents(league, 'naive_sp_0')
    helpers.assert_frequency(by_branch['sp'], N, 0.7, 'sp')
    assert by_opponent['naive_sp_0'] == by_branch['sp']  # sp: itself
    assert by_opponent['naive_sp_0_h0'] == by_branch['pfsp']  # pfsp: its only snapshot


@pytest.mark.parametrize('weighting', ['squared', 'variance', 'linear', 'linear_capped'])
@pytest.mark.slow
def test_pfsp_branch_follows_its_weighting(weighting, helpers):
    league = OneVsOneLeague(dict(payoff=EXACT, players=dict(naive_sp=dict(
        branch_probs=dict(pfsp=1.0), one_phase_step=1, pfsp_weighting=weighting))))
    for step in (2, 4, 6):
        assert helpers.advance(league, 'naive_sp_0', step)['snapshot']
    snapshots = [f'naive_sp_0_h{i}' for i in range(4)]
    for snapshot, wins in zip(snapshots, (9, 6, 3, 0)):
        helpers.record(league, 'naive_sp_0', snapshot, wins=wins, losses=10 - wins)
    probs = pfsp_probabilities([0.9, 0.6, 0.3, 0.0], weighting)
    by_opponent, _ = opponents(league, 'naive_sp_0')
    for snapshot, p in zip(snapshots, probs):
        helpers.assert_frequency(by_opponent[snapshot], N, p, f'{weighting} {snapshot}')
    if weighting == 'variance':
        assert by_opponent['naive_sp_0_h3'] == 0  # weight 0: never drawn


# ---------------------------------------------------------------------------------- AlphaStar
@pytest.mark.slow
def test_main_player_branch_probabilities(helpers):
    league = AlphaStarLeague(dict(payoff=EXACT))
    # It loses to the main exploiter's snapshot, so verification has something to check.
    helpers.record(league, 'main_player_0', 'main_exploiter_0_h0', wins=1, losses=9)
    by_opponent, by_branch = opponents(league, 'main_player_0')
    for branch, p in dict(pfsp=0.5, sp=0.35, verification=0.15).items():
        helpers.assert_frequency(by_branch[branch], N, p, branch)
    assert by_opponent['main_player_0'] == by_branch['sp']


def test_main_player_verification_falls_back_to_self_play(helpers):
    league = AlphaStarLeague(dict(payoff=EXACT))  # nothing lost, nothing forgotten
    by_opponent, by_branch = opponents(league, 'main_player_0', n=5000)
    assert by_branch['verification'] == 0
    helpers.assert_frequency(by_branch['sp'], 5000, 0.5, 'sp incl. fallback')


@pytest.mark.slow
def test_main_player_self_play_against_a_too_strong_main_uses_variance_over_its_snapshots(helpers):
    league = AlphaStarLeague(dict(payoff=EXACT, active_players=dict(main_player=2), players=dict(
        main_player=dict(branch_probs=dict(sp=1.0), one_phase_step=1))))
    for step in (2, 4):
        assert helpers.advance(league, 'main_player_1', step)['snapshot']
    helpers.record(league, 'main_player_0', 'main_player_1', wins=1, losses=9)  # 0.1 <= min_valid_win_rate 0.3
    rates = {'main_player_1_h0': 2, 'main_player_1_h1': 5, 'main_player_1_h2': 9}
    for snapshot, wins in rates.items():
        helpers.record(league, 'main_player_0', snapshot, wins=wins, losses=10 - wins)
    probs = pfsp_probabilities([w / 10 for w in rates.values()], 'variance')
    by_opponent, _ = opponents(league, 'main_player_0')
    helpers.assert_frequency(by_opponent['main_player_0'], N, 0.5, 'itself')  # it is not too strong for itself
    assert by_opponent['main_player_1'] == 0
    for snapshot, p in zip(rates, probs):
        helpers.assert_frequency(by_opponent[snapshot], N, 0.5 * p, snapshot)


@pytest.mark.slow
def test_main_player_verification_checks_exploiters_first_then_forgotten_selves(helpers):
    league = AlphaStarLeague(dict(payoff=EXACT, players=dict(main_player=dict(
        branch_probs=dict(verification=1.0), one_phase_step=1))))
    for step in (2, 4, 6):
        helpers.advance(league, 'main_player_0', step)
    for snapshot, wins in zip(['main_player_0_h0', 'main_player_0_h1', 'main_player_0_h2', 'main_player_0_h3'],
                              (2, 9, 6, 4)):
        helpers.record(league, 'main_player_0', snapshot, wins=wins, losses=10 - wins)
    # Forgotten: the trailing run 0.9 >= 0.6 >= 0.4 is progress; h0 (0.2) and h1 (0.9) remain.
    by_opponent, by_branch = opponents(league, 'main_player_0')
    assert by_branch['verification'] == N
    assert set(by_opponent) == {'main_player_0_h0', 'main_player_0_h1'}
    p_h0 = pfsp_probabilities([0.2, 0.9], 'squared')[0]
    helpers.assert_frequency(by_opponent['main_player_0_h0'], N, p_h0, 'forgotten h0')
    # An exploiter snapshot it loses to comes first.
    helpers.record(league, 'main_player_0', 'main_exploiter_0_h0', wins=2, losses=8)
    by_opponent, _ = opponents(league, 'main_player_0', n=200)
    assert set(by_opponent) == {'main_exploiter_0_h0'}


@pytest.mark.parametrize('rates, expected', [
    ([0.2, 0.9, 0.6, 0.4], 2), ([0.9, 0.6, 0.4], 0), ([0.4, 0.6], 2), ([0.5, 0.5], 0), ([0.3], 0), ([], 0),
    ([0.1, 0.5, 0.3, 0.8, 0.8], 4),
])
def test_forgotten_prefix_length(rates, expected):
    assert forgotten_prefix_length(np.array(rates)) == expected


def test_main_exploiter_plays_main_player_above_min_valid_win_rate(helpers):
    league = AlphaStarLeague(dict(payoff=EXACT, active_players=dict(main_player=1, main_exploiter=1),
                                  players=dict(main_player=dict(one_phase_step=1))))
    helpers.advance(league, 'main_player_0', 2)  # main_player_0_h1
    helpers.record(league, 'main_exploiter_0', 'main_player_0', wins=2, losses=8)  # 0.2 > 0.1
    by_opponent, by_branch = opponents(league, 'main_exploiter_0', n=500)
    assert by_opponent == Counter({'main_player_0': 500}) and by_branch == Counter({'main_players': 500})


@pytest.mark.slow
def test_main_exploiter_uses_variance_over_snapshots_at_or_below_min_valid_win_rate(helpers):
    league = AlphaStarLeague(dict(payoff=EXACT, active_players=dict(main_player=1, main_exploiter=1),
                                  players=dict(main_player=dict(one_phase_step=1))))
    helpers.advance(league, 'main_player_0', 2)
    helpers.record(league, 'main_exploiter_0', 'main_player_0', wins=1, losses=9)  # exactly 0.1: not above
    helpers.record(league, 'main_exploiter_0', 'main_player_0_h0', wins=5, losses=5)
    helpers.record(league, 'main_exploiter_0', 'main_player_0_h1', wins=8, losses=2)
    by_opponent, _ = opponents(league, 'main_exploiter_0')
    assert by_opponent['main_player_0'] == 0
    p_h0 = pfsp_probabilities([0.5, 0.8], 'variance')[0]
    helpers.assert_frequency(by_opponent['main_player_0_h0'], N, p_h0, 'h0')


@pytest.mark.slow
def test_league_exploiter_pfsp_linear_capped_over_all_snapshots(helpers):
    league = AlphaStarLeague(dict(payoff=EXACT))
    snapshots = [p.player_id for p in league.historical_players]
    wins = (0, 3, 8, 10)
    for snapshot, w in zip(snapshots, wins):
        helpers.record(league, 'league_exploiter_0', snapshot, wins=w, losses=10 - w)
    probs = pfsp_probabilities([w / 10 for w in wins], 'linear_capped')  # [.5, .5, .2, 0] / 1.2
    by_opponent, _ = opponents(league, 'league_exploiter_0')
    for snapshot, p in zip(snapshots, probs):
        helpers.assert_frequency(by_opponent[snapshot], N, p, snapshot)


def test_resets_after_snapshots(helpers):
    league = AlphaStarLeague(dict(model=dict(hidden=64), players=dict(
        main_player=dict(one_phase_step=1), main_exploiter=dict(one_phase_step=1),
        league_exploiter=dict(one_phase_step=1))))
    league.update_active_player(dict(player_id='main_exploiter_0', train_iteration=2, model=dict(hidden=128)))
    league.ratings.elo.set_rating('main_exploiter_0', 1500.0)
    judged = league.judge_snapshot('main_exploiter_0')
    assert judged['snapshot'] and judged['reset'] and judged['reset_param_ref'] == 'init'
    exploiter = league.get_player('main_exploiter_0')
    assert exploiter.model == dict(hidden=64) and exploiter.reset_count == 1
    assert league.ratings.elo['main_exploiter_0'] == 1200.0  # back to the initial rating
    assert league.ratings.elo['main_exploiter_0_h1'] == 1500.0  # the snapshot keeps the trained one
    assert league.get_player('main_exploiter_0_h1').model == dict(hidden=128)
    for step in range(2, 40, 2):
        assert not helpers.advance(league, 'main_player_0', step)['reset']  # main players never reset
    # League exploiters reset with mutate_prob = 0.25.
    player, rng = league.get_player('league_exploiter_0'), np.random.default_rng(3)
    helpers.assert_frequency(sum(player.mutate(rng) for _ in range(N)), N, 0.25, 'league exploiter reset')
    resets = sum(helpers.advance(league, 'league_exploiter_0', step)['reset'] for step in range(2, 4002, 2))
    helpers.assert_frequency(resets, 2000, 0.25, 'league exploiter resets in the league')


# ---------------------------------------------------------------------------------- snapshot rules
def test_snapshot_rule_at_each_boundary(helpers):
    league = OneVsOneLeague(dict(payoff=EXACT, players=dict(naive_sp=dict(one_phase_step=100, strong_win_rate=0.7))))
    pid = 'naive_sp_0'
    helpers.record(league, pid, 'naive_sp_0_h0', wins=10)
    assert not helpers.advance(league, pid, 99)['snapshot']  # one step short of a phase, though winning
    judged = helpers.advance(league, pid, 100)  # a phase, beating every snapshot (1.0 > 0.7)
    assert judged['snapshot'] and judged['historical_player']['player_id'] == 'naive_sp_0_h1'
    assert not helpers.advance(league, pid, 199)['snapshot']  # h1 is new: win rate unknown (0.5)
    helpers.record(league, pid, 'naive_sp_0_h1', wins=7, losses=3)
    assert not helpers.advance(league, pid, 200)['snapshot']  # exactly 0.7 is not above 0.7
    helpers.record(league, pid, 'naive_sp_0_h1', wins=1)
    assert helpers.advance(league, pid, 200)['snapshot']  # 8/11 > 0.7
    assert not helpers.advance(league, pid, 399)['snapshot']  # loses to the new h2 (0.5)
    assert helpers.advance(league, pid, 400)['snapshot']  # two phases: regardless of win rates
    assert [p.step for p in league.historical_players] == [0, 100, 200, 400]


def test_without_relevant_opponents_only_the_two_phase_rule_applies(helpers):
    league = OneVsOneLeague(dict(initial_snapshots=False, players=dict(naive_sp=dict(one_phase_step=10))))
    assert league.historical_players == []
    assert not helpers.advance(league, 'naive_sp_0', 19)['snapshot']
    assert helpers.advance(league, 'naive_sp_0', 20)['snapshot']


def test_main_exploiter_snapshots_once_it_beats_the_main_players(helpers):
    league = AlphaStarLeague(dict(payoff=EXACT, active_players=dict(main_player=1, main_exploiter=1),
                                  players=dict(main_exploiter=dict(one_phase_step=10))))
    helpers.record(league, 'main_exploiter_0', 'main_player_0_h0', losses=10)  # irrelevant to its rule
    helpers.record(league, 'main_exploiter_0', 'main_player_0', wins=8, losses=2)
    assert not helpers.advance(league, 'main_exploiter_0', 9)['snapshot']
    assert helpers.advance(league, 'main_exploiter_0', 10)['snapshot']


def test_snapshot_records_parent_step_model_and_parameters():
    league = OneVsOneLeague(dict(model=dict(hidden=64), snapshot_param_ref='ckpt/{player_id}.pt',
                                 players=dict(naive_sp=dict(one_phase_step=5))))
    league.update_active_player(dict(player_id='naive_sp_0', train_iteration=10, param_ref='live/naive_sp_0',
                                     model=dict(hidden=64, layers=2)))
    judged = league.judge_snapshot('naive_sp_0')
    assert judged['source_param_ref'] == 'live/naive_sp_0'
    info = judged['historical_player']
    assert info == dict(player_id='naive_sp_0_h1', kind='historical', param_ref='ckpt/naive_sp_0_h1.pt',
                        model=dict(hidden=64, layers=2), step=10, parent_id='naive_sp_0', parent_type='naive_sp',
                        snapshot_index=1)
    # The parent's network changes shape (surgery): the snapshot still describes the old one.
    league.update_active_player(dict(player_id='naive_sp_0', train_iteration=11, model=dict(hidden=128, layers=3)))
    assert league.get_player('naive_sp_0_h1').info()['model'] == dict(hidden=64, layers=2)
    assert league.get_player('naive_sp_0_h0').param_ref == 'init'  # the initial snapshot: initial parameters
    job = next(j for j in (league.get_job_info('naive_sp_0') for _ in range(50)) if j['player_ids'][1] == 'naive_sp_0_h1')
    assert job['players'][1]['model'] == dict(hidden=64, layers=2)
    assert job['players'][0]['model'] == dict(hidden=128, layers=3)


# ---------------------------------------------------------------------------------- ML-Agents / OpenAI Five
def mlagents_league(**cfg):
    return OneVsOneLeague(dict(active_players=dict(mlagents_sp=1), players=dict(mlagents_sp=cfg)))


def test_mlagents_window_and_latest_ratio(helpers):
    league = mlagents_league(save_steps=1, swap_steps=0, window=3, play_against_latest_model_ratio=0.3)
    for step in range(1, 6):
        assert helpers.advance(league, 'mlagents_sp_0', step, agent_steps=step)['snapshot']
    by_opponent, by_branch = opponents(league, 'mlagents_sp_0')
    helpers.assert_frequency(by_branch['latest'], N, 0.3, 'latest')
    assert by_opponent['mlagents_sp_0'] == by_branch['latest']
    window = ['mlagents_sp_0_h3', 'mlagents_sp_0_h4', 'mlagents_sp_0_h5']  # older snapshots left the window
    assert set(by_opponent) == {'mlagents_sp_0', *window}
    for snapshot in window:
        helpers.assert_frequency(by_opponent[snapshot], N, 0.7 / 3, snapshot)


def report(league, agent_steps, train_iteration=1, pid='mlagents_sp_0'):
    league.update_active_player(dict(player_id=pid, train_iteration=train_iteration, agent_steps=agent_steps))


def test_mlagents_keeps_an_opponent_for_swap_steps(helpers):
    league = mlagents_league(save_steps=10 ** 6, swap_steps=10, window=5)
    first = {league.get_job_info('mlagents_sp_0')['player_ids'][1] for _ in range(50)}
    assert len(first) == 1
    report(league, 9)
    assert {league.get_job_info('mlagents_sp_0')['player_ids'][1] for _ in range(50)} == first
    seen = set()
    for steps in range(10, 400, 10):  # every 10 agent steps: a new draw (latest or the initial snapshot)
        report(league, steps)
        seen.add(league.get_job_info('mlagents_sp_0')['player_ids'][1])
    assert seen == {'mlagents_sp_0', 'mlagents_sp_0_h0'}


def test_mlagents_save_steps():
    league = mlagents_league(save_steps=5)
    results = [(steps, report(league, steps) or league.judge_snapshot('mlagents_sp_0')['snapshot'])
               for steps in (4, 5, 9, 10)]
    assert results == [(4, False), (5, True), (9, False), (10, True)]


def test_mlagents_counts_agent_steps_as_the_guide_does():
    """The guide's defaults (save 20,000 / swap 10,000 trainer steps) in an ordinary run: 34,816 agent
    steps in 68 learner iterations give a snapshot and a new opponent, not none."""
    league = mlagents_league()  # the guide's defaults
    player = league.get_player('mlagents_sp_0')
    first = player.get_opponent()
    report(league, 9_999, train_iteration=20)
    assert player.get_opponent() == first and not league.judge_snapshot('mlagents_sp_0')['snapshot']
    report(league, 34_816, train_iteration=68)
    assert league.judge_snapshot('mlagents_sp_0')['snapshot']
    player.get_opponent()
    assert player._last_swap_agent_steps == 34_816  # swapped after 10,000 agent steps
    report(league, 54_815, train_iteration=100)
    assert not league.judge_snapshot('mlagents_sp_0')['snapshot']  # 19,999 agent steps since the snapshot
    report(league, 54_816, train_iteration=100)
    assert league.judge_snapshot('mlagents_sp_0')['snapshot']


def test_mlagents_needs_agent_steps_in_reports():
    league = mlagents_league()
    with pytest.raises(LeagueError, match='agent_steps'):
        league.update_active_player(dict(player_id='mlagents_sp_0', train_iteration=3))
    report(league, 100)
    with pytest.raises(LeagueError, match='"agent_steps" of .* >= its current count 100, got 99'):
        report(league, 99)


def test_mlagents_accepts_the_guides_name_for_the_latest_ratio(helpers):
    league = mlagents_league(save_steps=1, swap_steps=0, play_against_current_self_ratio=0.3)
    assert league.cfg.players.mlagents_sp.play_against_latest_model_ratio == 0.3
    assert 'play_against_current_self_ratio' not in league.cfg.players.mlagents_sp
    helpers.advance(league, 'mlagents_sp_0', 1, agent_steps=1)
    _, by_branch = opponents(league, 'mlagents_sp_0')
    helpers.assert_frequency(by_branch['latest'], N, 0.3, 'latest')
    same = mlagents_league(play_against_current_self_ratio=0.3, play_against_latest_model_ratio=0.3)
    assert same.cfg.players.mlagents_sp.play_against_latest_model_ratio == 0.3
    with pytest.raises(ConfigError, match='play_against_current_self_ratio.*play_against_latest_model_ratio'):
        mlagents_league(play_against_current_self_ratio=0.3, play_against_latest_model_ratio=0.5)


def openai_five_league(**cfg):
    return OneVsOneLeague(dict(active_players=dict(openai_five_sp=1), players=dict(openai_five_sp=cfg)))


def test_openai_five_plays_its_latest_self_with_latest_prob(helpers):
    league = openai_five_league(latest_prob=0.8)
    by_opponent, by_branch = opponents(league, 'openai_five_sp_0')
    helpers.assert_frequency(by_branch['latest'], N, 0.8, 'latest')
    assert by_opponent['openai_five_sp_0'] == by_branch['latest']


def test_openai_five_quality_scores(helpers):
    league = openai_five_league(save_steps=1, latest_prob=0.0, quality_lr=1.0)
    pid = 'openai_five_sp_0'
    player = league.get_player(pid)
    helpers.advance(league, pid, 1)  # h1 enters at the highest score, 0
    assert player.quality_scores == {f'{pid}_h0': 0.0, f'{pid}_h1': 0.0}
    league.finish_job(dict(player_ids=[pid, f'{pid}_h0'], result=['win']))
    q0 = -1.0 / (2 * 0.5)  # -= lr / (N p_i), N = 2 snapshots, p_0 = 0.5
    assert player.quality_scores[f'{pid}_h0'] == pytest.approx(q0)
    league.finish_job(dict(player_ids=[pid, f'{pid}_h0'], result=['loss', 'draw', 'win']))  # only wins count
    q0 -= 1.0 / (2 * (np.exp(q0) / (np.exp(q0) + 1.0)))
    assert player.quality_scores[f'{pid}_h0'] == pytest.approx(q0)
    league.finish_job(dict(player_ids=[f'{pid}_h1', pid], result=['loss']))  # a win seen from the other side
    q1 = -1.0 / (2 * (1.0 / (np.exp(q0) + 1.0)))
    assert player.quality_scores[f'{pid}_h1'] == pytest.approx(q1)
    helpers.advance(league, pid, 2)  # h2 enters at the highest score, max(q0, q1)
    assert player.quality_scores[f'{pid}_h2'] == pytest.approx(max(q0, q1))
    probs = np.exp([q0, q1, max(q0, q1)])
    probs /= probs.sum()
    np.testing.assert_allclose(player.past_probabilities(), probs)
    by_opponent, by_branch = opponents(league, pid)
    assert by_branch == Counter(past=N)
    for i, p in enumerate(probs):
        helpers.assert_frequency(by_opponent[f'{pid}_h{i}'], N, p, f'h{i}')


@pytest.mark.parametrize('quality_lr, streak, per_job', [(0.01, 1000, 1), (0.05, 300, 30)])
def test_openai_five_quality_scores_stay_finite_in_a_winning_streak(helpers, quality_lr, streak, per_job):
    """Beating one snapshot again and again: the paper's step lr / (N p) grows as p shrinks and once overflowed
    to -inf (never drawn again); with N p floored each win lowers the score by at most lr / min_relative_prob."""
    league = openai_five_league(save_steps=1, latest_prob=0.0, quality_lr=quality_lr)
    pid = 'openai_five_sp_0'
    player = league.get_player(pid)
    helpers.advance(league, pid, 1)
    with np.errstate(divide='raise', over='raise', invalid='raise'):  # no division by zero, no overflow
        for _ in range(streak // per_job):
            league.finish_job(dict(player_ids=[pid, f'{pid}_h0'], result=['win'] * per_job))
        probabilities = player.past_probabilities()
    scores = player.quality_scores
    assert np.isfinite(list(scores.values())).all() and np.isfinite(probabilities).all()
    assert scores[f'{pid}_h0'] >= -streak * quality_lr / player.cfg.min_relative_prob
    assert scores[f'{pid}_h0'] < scores[f'{pid}_h1'] == 0.0  # still the paper's direction: the beaten one sinks
    assert probabilities.sum() == pytest.approx(1.0)


# ---------------------------------------------------------------------------------- custom players
@PLAYER_REGISTRY.register('test_newest_snapshot_sp')
class NewestSnapshotPlayer(NaiveSpPlayer):
    """Plays its own newest snapshot: a new opponent rule added by a subclass."""

    def _newest_branch(self):
        mine = self.league.roster.snapshots_of(self.player_id)
        return mine.players[-1] if len(mine) else None


def test_custom_player_with_its_own_branch_from_config(helpers):
    league = OneVsOneLeague(dict(active_players=dict(test_newest_snapshot_sp=1), players=dict(
        test_newest_snapshot_sp=dict(branch_probs=dict(sp=0.6, newest=0.4), one_phase_step=1))))
    pid = 'test_newest_snapshot_sp_0'
    for step in (2, 4):
        helpers.advance(league, pid, step)
    by_opponent, by_branch = opponents(league, pid)
    assert set(by_branch) == {'sp', 'newest'}
    helpers.assert_frequency(by_branch['newest'], N, 0.4, 'newest')
    assert by_opponent[f'{pid}_h2'] == by_branch['newest'] and by_opponent[pid] == by_branch['sp']


def test_unknown_branch_names_the_branch_and_lists_the_available_ones():
    with pytest.raises(ConfigError) as err:
        OneVsOneLeague(dict(active_players=dict(test_newest_snapshot_sp=1), players=dict(
            test_newest_snapshot_sp=dict(branch_probs=dict(sp=0.5, newst=0.5)))))
    message = str(err.value)
    assert "'newst'" in message and 'league.players.test_newest_snapshot_sp.branch_probs' in message
    assert 'nash, newest, pfsp, reference, sp' in message


@pytest.mark.parametrize('probs, message', [
    (dict(sp=0.5, pfsp=0.6), 'sum to 1'),
    (dict(sp=1.5, pfsp=-0.5), '>= 0'),
    (dict(sp='half', pfsp=0.5), '>= 0'),
    ({}, 'non-empty'),
])
def test_branch_probabilities_are_validated(probs, message):
    with pytest.raises(ConfigError, match=message):
        OneVsOneLeague(dict(players=dict(naive_sp=dict(branch_probs=probs))))


def test_player_outside_a_league_says_so():
    player = NaiveSpPlayer('solo')
    assert player.cfg.branch_probs == dict(pfsp=0.5, sp=0.5)
    with pytest.raises(LeagueError, match='not in a league'):
        player.get_opponent()


def test_reference_branch_draws_reference_players_by_pfsp(helpers):
    league = OneVsOneLeague(dict(payoff=EXACT, players=dict(naive_sp=dict(branch_probs=dict(reference=1.0))),
                                 reference_players=[dict(player_id='random', param_ref='bot:random'),
                                                    dict(player_id='heuristic', param_ref='bot:heuristic')]))
    league.payoff.record('naive_sp_0', 'random', ['win'] * 9 + ['loss'])
    league.payoff.record('naive_sp_0', 'heuristic', ['win'] * 5 + ['loss'] * 5)
    by_opponent, by_branch = opponents(league, 'naive_sp_0')
    assert set(by_opponent) == {'random', 'heuristic'} and by_branch == Counter(reference=N)
    # squared PFSP: weights (1 - 0.9)^2 and (1 - 0.5)^2
    helpers.assert_frequency(by_opponent['heuristic'], N, 0.25 / 0.26, 'heuristic')


def test_reference_branch_without_reference_players_falls_back_to_self_play():
    league = OneVsOneLeague(dict(players=dict(naive_sp=dict(branch_probs=dict(reference=1.0)))))
    by_opponent, by_branch = opponents(league, 'naive_sp_0', n=50)
    assert by_opponent == Counter(naive_sp_0=50) and by_branch == Counter(sp=50)


@pytest.mark.parametrize('entry, message', [
    (dict(player_id=''), '"league.reference_players.0.player_id": expected a non-empty string'),
    (dict(player_id='bot', param_ref=3), '"league.reference_players.0.param_ref": expected str or None'),
    (dict(player_id='bot', elo=True), '"league.reference_players.0.elo": expected int or float or None'),
    (dict(player_id='bot', trueskill=[25, 0]), '"league.reference_players.0.trueskill": expected [mu, sigma] with sigma > 0'),
    (dict(player_id='bot', anchor=1), '"league.reference_players.0.anchor": expected bool'),
    (dict(player_id='bot', rating=3), "unknown key 'rating'"),
])
def test_reference_player_config_is_checked_by_its_declared_constraints(entry, message):
    from sparring.league.player import ReferencePlayer
    with pytest.raises(ConfigError, match=re.escape(message)):
        ReferencePlayer.resolve_config(entry, 'league.reference_players.0')
    assert ReferencePlayer.resolve_config(dict(player_id='bot', elo=1200, trueskill=(25, 8.3)), 'p')['elo'] == 1200
