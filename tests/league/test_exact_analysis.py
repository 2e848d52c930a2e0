"""Exact analysis of the matrix games: seat values, exploitability and the Nash meta-strategy of a population,
checked against hand computation (Kuhn poker: tests/dizoo/test_openspiel_exploitability.py)."""
import numpy as np
import pytest

from sparring.dizoo.matrix_games.matrix_game_env import PrisonersDilemmaEnv, RockPaperScissorsEnv, ZeroSum2x2Env
from sparring.league.exact_analysis import ProfileCache


class SeatStrategy:
    """A matrix-game policy: a fixed mixed strategy per seat (its observation is the seat one-hot)."""

    def __init__(self, seat_0, seat_1):
        self.strategies = np.array([seat_0, seat_1], np.float64)
        self.calls = 0

    def action_probabilities(self, obs, action_mask):
        self.calls += 1
        return self.strategies[np.argmax(obs, axis=1)]


def test_matrix_exploitability_by_hand():
    analysis = ZeroSum2x2Env.exact_analysis()
    both_first = analysis.profile(SeatStrategy([1, 0], [1, 0]))
    # Seat 0 already earns its best reply (3); seat 1 earns -3 but could earn 2 by switching: NashConv 5.
    assert analysis.exploitability(both_first) == pytest.approx(2.5)
    assert analysis.exploitability(np.array(ZeroSum2x2Env.nash)) == pytest.approx(0.0, abs=1e-12)
    values = analysis.seat_values([both_first], [analysis.profile(SeatStrategy([0, 1], [0, 1]))])
    assert values[0, 0] == pytest.approx(-2.0)


def test_nash_mixture_of_pure_strategies_recovers_the_equilibrium():
    analysis = ZeroSum2x2Env.exact_analysis()
    pure = [(a, b) for a in ([1, 0], [0, 1]) for b in ([1, 0], [0, 1])]
    profiles = [analysis.profile(SeatStrategy(a, b)) for a, b in pure]
    meta = analysis.meta_game(profiles)
    assert np.allclose(meta, -meta.T)
    weights = analysis.meta_strategy(profiles)
    mixed = analysis.mixture(profiles, weights)
    assert np.allclose(mixed, [[0.375, 0.625], [0.375, 0.625]], atol=1e-6)
    report = analysis.report(dict(zip('abcd', profiles)), ['a'])
    assert report['meta_exploitability'] == pytest.approx(0.0, abs=1e-9)
    assert report['meta_distance_to_nash'] == pytest.approx(0.0, abs=1e-6)
    assert report['exploitability']['a'] == pytest.approx(2.5)


def test_rock_paper_scissors_cycle_mixes_to_uniform():
    analysis = RockPaperScissorsEnv.exact_analysis()
    eye = np.eye(3)
    profiles = [analysis.profile(SeatStrategy(eye[i], eye[i])) for i in range(3)]
    assert np.allclose(analysis.meta_strategy(profiles), 1 / 3, atol=1e-6)
    assert analysis.exploitability(profiles[0]) == pytest.approx(1.0)


def test_general_sum_games_offer_no_exact_analysis():
    assert PrisonersDilemmaEnv.exact_analysis() is None


def test_matrix_profile_rejects_a_non_distribution():
    analysis = ZeroSum2x2Env.exact_analysis()
    with pytest.raises(ValueError, match='one distribution over 2 actions per seat'):
        analysis.profile(SeatStrategy([0.5, 0.6], [1, 0]))


def test_profile_cache_evaluates_frozen_snapshots_once():
    analysis = ZeroSum2x2Env.exact_analysis()
    policy = SeatStrategy([1, 0], [0, 1])
    cache = ProfileCache(analysis)
    for _ in range(3):
        cache.profile('snap', lambda ref: policy, frozen=True)
    assert policy.calls == 1
    cache.profile('live', lambda ref: policy, frozen=False)
    cache.profile('live', lambda ref: policy, frozen=False)
    assert policy.calls == 3
    cache.forget('snap')
    cache.profile('snap', lambda ref: policy, frozen=True)
    assert policy.calls == 4


class _Player:
    def __init__(self, player_id, kind, param_ref=None):
        self.player_id, self.kind, self.param_ref = player_id, kind, param_ref or player_id


class _League:
    def __init__(self, players):
        self.players = {p.player_id: p for p in players}
        self.active_players = [p for p in players if p.kind == 'active']
        self.historical_players = [p for p in players if p.kind == 'historical']

    def get_player(self, pid):
        return self.players[pid]


def test_a_damaged_snapshot_is_quarantined_and_left_out_of_the_meta_game_and_the_report():
    from sparring.league.exact_analysis import LeagueExactAnalysis
    from sparring.worker.state_file import StateFileError

    analysis = RockPaperScissorsEnv.exact_analysis(RockPaperScissorsEnv.default_config())
    strategies = {'main': SeatStrategy([1, 0, 0], [1, 0, 0]), 'params/main_h1': SeatStrategy([0, 1, 0], [0, 1, 0]),
                  'params/main_h2': SeatStrategy([0, 0, 1], [0, 0, 1])}
    asked = []

    def policy_of(ref):
        asked.append(ref)
        if ref == 'params/main_h1':
            raise StateFileError(f'{ref}.pt is damaged or cut short')
        return strategies[ref]

    league = _League([_Player('main', 'active'), _Player('main_h1', 'historical', 'params/main_h1'),
                      _Player('main_h2', 'historical', 'params/main_h2')])
    dropped = {}
    exact = LeagueExactAnalysis(analysis, league, policy_of, damaged=dropped.__setitem__, dropped=dropped)
    matrix = exact.meta_game(['main', 'main_h1', 'main_h2'])
    assert dropped == {'params/main_h1': 'params/main_h1.pt is damaged or cut short'}
    assert matrix.shape == (3, 3) and not matrix[1].any() and not matrix[:, 1].any()  # ties everyone
    both = exact.meta_game(['main', 'main_h2'])  # rock against scissors: the readable entries are the game's own
    np.testing.assert_allclose(matrix[np.ix_([0, 2], [0, 2])], both)
    assert both[0, 1] > 0
    report = exact.report(['main'])
    assert set(report['meta_strategy']) == {'main', 'main_h2'}  # the quarantined snapshot is not reported
    assert asked.count('params/main_h1') == 1  # quarantined once, never asked for again
