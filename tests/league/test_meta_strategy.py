"""Meta-strategies: the zero-sum LP solver, the league's meta-game and its Nash mixture, and the ``nash`` branch."""
import sys
from collections import Counter

import numpy as np
import pytest

from sparring.league import (BaseLeague, OneVsOneLeague, meta_game, payoff_nash, solve_zero_sum_matrix,
                             symmetric_nash)

pytest.importorskip('scipy.optimize')

RPS = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])
EXACT = dict(decay=1.0, min_win_rate_games=0)
N = 20000


def assert_equilibrium(matrix, row, col, value, tol=1e-7):
    """Each strategy guarantees the value whatever the other side plays."""
    matrix = np.asarray(matrix, float)
    for strategy in (row, col):
        assert np.all(strategy >= 0) and abs(strategy.sum() - 1.0) < 1e-12
    assert (row @ matrix).min() >= value - tol
    assert (matrix @ col).max() <= value + tol


# ---------------------------------------------------------------------------------- the solver
def test_two_by_two_game_has_the_known_mixed_equilibrium():
    matrix = [[3.0, -2.0], [-2.0, 1.0]]
    row, col, value = solve_zero_sum_matrix(matrix)
    np.testing.assert_allclose(row, [0.375, 0.625], atol=1e-9)
    np.testing.assert_allclose(col, [0.375, 0.625], atol=1e-9)
    assert value == pytest.approx(-1 / 8, abs=1e-9)
    assert_equilibrium(matrix, row, col, value)


def test_rock_paper_scissors_is_uniform_with_value_zero():
    row, col, value = solve_zero_sum_matrix(RPS)
    np.testing.assert_allclose(row, np.full(3, 1 / 3), atol=1e-9)
    np.testing.assert_allclose(col, np.full(3, 1 / 3), atol=1e-9)
    assert value == pytest.approx(0.0, abs=1e-9)


def test_a_dominated_strategy_gets_no_probability():
    # A fourth row that does worse than rock against everything; and a fourth column worse for its player.
    matrix = np.vstack([RPS, RPS[0] - 0.5])
    matrix = np.hstack([matrix, np.array([[1.5], [1.5], [1.5], [1.0]])])
    row, col, value = solve_zero_sum_matrix(matrix)
    assert row[3] < 1e-9 and col[3] < 1e-9
    np.testing.assert_allclose(row[:3], np.full(3, 1 / 3), atol=1e-8)
    assert_equilibrium(matrix, row, col, value)


@pytest.mark.parametrize('matrix, row, col, value', [
    (np.full((4, 3), 2.0), np.full(4, 0.25), np.full(3, 1 / 3), 2.0),  # all equal: uniform on both sides
    ([[1.0, 2.0, 3.0]], [1.0], [1.0, 0.0, 0.0], 1.0),  # one row: the column player takes its best column
    ([[1.0], [2.0], [3.0]], [0.0, 0.0, 1.0], [1.0], 3.0),  # one column
    ([[5.0]], [1.0], [1.0], 5.0),
])
def test_degenerate_matrices(matrix, row, col, value):
    got_row, got_col, got_value = solve_zero_sum_matrix(matrix)
    np.testing.assert_allclose(got_row, row, atol=1e-9)
    np.testing.assert_allclose(got_col, col, atol=1e-9)
    assert got_value == pytest.approx(value, abs=1e-9)


def test_random_games_are_solved_to_equilibrium():
    rng = np.random.default_rng(0)
    for _ in range(20):
        matrix = rng.normal(size=tuple(rng.integers(1, 12, size=2)))
        assert_equilibrium(matrix, *solve_zero_sum_matrix(matrix))
        square = rng.normal(size=(9, 9))
        antisymmetric = square - square.T
        assert (symmetric_nash(antisymmetric) @ antisymmetric).min() >= -1e-7


@pytest.mark.parametrize('matrix, message', [
    (np.zeros((0, 3)), 'at least one row'),
    (np.zeros(3), '2-D'),
    ([[0.0, np.nan]], 'NaN'),
])
def test_bad_matrices_are_rejected(matrix, message):
    with pytest.raises(ValueError, match=message):
        solve_zero_sum_matrix(matrix)


def test_symmetric_nash_wants_an_antisymmetric_matrix():
    with pytest.raises(ValueError, match='antisymmetric'):
        symmetric_nash([[3.0, -2.0], [-2.0, 1.0]])


def test_missing_scipy_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, 'scipy.optimize', None)
    with pytest.raises(ImportError, match=r'pip install sparring\[league\]'):
        solve_zero_sum_matrix(RPS)


# ---------------------------------------------------------------------------------- the meta-game
def cyclic_league(extra_snapshots=1):
    """A league whose snapshots h1, h2, h3 beat each other in a cycle and all beat h0 (and any later ones)."""
    league = OneVsOneLeague(dict(payoff=EXACT, players=dict(naive_sp=dict(branch_probs=dict(nash=1.0),
                                                                          one_phase_step=1))))
    for step in range(2, 2 * (3 + extra_snapshots), 2):
        league.update_active_player(dict(player_id='naive_sp_0', train_iteration=step))
        assert league.judge_snapshot('naive_sp_0')['snapshot']
    h = [f'naive_sp_0_h{i}' for i in range(1 + 3 + extra_snapshots - 1)]
    for a, b in ((1, 2), (2, 3), (3, 1)):
        league.payoff.record(h[a], h[b], ['win'] * 3 + ['draw'] * 2 + ['loss'])
    for weak in [0] + list(range(4, len(h))):
        for strong in (1, 2, 3):
            league.payoff.record(h[strong], h[weak], ['win'] * 4)
    return league, h


def test_meta_game_is_the_centred_score_and_antisymmetric():
    league, h = cyclic_league()
    game = meta_game(league.payoff, h)
    assert game[1, 2] == pytest.approx((3 + 0.5 * 2) / 6 - 0.5) and game[2, 1] == pytest.approx(-game[1, 2])
    assert game[1, 0] == pytest.approx(0.5) and np.all(np.diag(game) == 0.0)
    np.testing.assert_array_equal(game, -game.T)
    league.payoff.record(h[0], 'naive_sp_0', ['win'])
    assert meta_game(league.payoff, [h[0], 'naive_sp_0'])[0, 1] == pytest.approx(0.5)


def test_pairs_below_min_win_rate_games_count_as_even():
    league = OneVsOneLeague(dict(payoff=dict(decay=1.0, min_win_rate_games=5)))
    league.payoff.record('naive_sp_0', 'naive_sp_0_h0', ['win'] * 4)
    assert meta_game(league.payoff, ['naive_sp_0', 'naive_sp_0_h0'])[0, 1] == 0.0
    league.payoff.record('naive_sp_0', 'naive_sp_0_h0', ['win'])
    assert meta_game(league.payoff, ['naive_sp_0', 'naive_sp_0_h0'])[0, 1] == 0.5


def test_payoff_nash_mixes_the_cycle_and_drops_the_beaten():
    league, h = cyclic_league(extra_snapshots=2)
    mixture = payoff_nash(league.payoff, h)
    np.testing.assert_allclose(mixture[1:4], np.full(3, 1 / 3), atol=1e-8)
    assert mixture[0] < 1e-9 and mixture[4] < 1e-9
    # No games at all: every player is as good as any other.
    fresh = OneVsOneLeague(dict(payoff=EXACT))
    np.testing.assert_allclose(payoff_nash(fresh.payoff, ['naive_sp_0', 'naive_sp_0_h0']), [0.5, 0.5])
    with pytest.raises(ValueError, match='repeat'):
        payoff_nash(league.payoff, [h[0], h[0]])


# ---------------------------------------------------------------------------------- the nash branch
@pytest.mark.slow
def test_nash_branch_samples_opponents_from_the_mixture(helpers):
    league, h = cyclic_league(extra_snapshots=1)
    # Make the cycle lopsided so the mixture is not uniform: h1 crushes h2.
    league.payoff.record(h[1], h[2], ['win'] * 30)
    player = league.get_player('naive_sp_0')
    mixture = payoff_nash(league.payoff, h)
    assert mixture.max() - mixture[mixture > 1e-9].min() > 0.1  # a non-uniform mixture, to make the test sharp
    choices = [player.get_opponent() for _ in range(N)]
    assert {branch for _, branch in choices} == {'nash'}
    counts = {pid: 0 for pid in h}
    for opponent, _ in choices:
        counts[opponent.player_id] += 1
    for pid, p in zip(h, mixture):
        helpers.assert_frequency(counts[pid], N, p, pid)


def test_nash_branch_solves_again_only_when_the_meta_game_changes(monkeypatch):
    league, h = cyclic_league()
    player = league.get_player('naive_sp_0')
    solves = []
    import sparring.league.player as player_module
    real = player_module.symmetric_nash
    monkeypatch.setattr(player_module, 'symmetric_nash', lambda game: solves.append(1) or real(game))
    for _ in range(5):
        player.get_opponent()
    assert len(solves) == 1
    league.payoff.record(h[1], h[2], ['win'])
    player.get_opponent()
    assert len(solves) == 2


def test_nash_branch_without_historical_players_falls_back_to_self_play():
    league = OneVsOneLeague(dict(initial_snapshots=False, players=dict(naive_sp=dict(branch_probs=dict(nash=1.0)))))
    player = league.get_player('naive_sp_0')
    assert player.get_opponent() == (player, 'sp')


def test_nash_branch_draws_the_same_opponents_after_save_and_load(tmp_path):
    league, h = cyclic_league()
    player = league.get_player('naive_sp_0')
    for _ in range(10):
        player.get_opponent()
    path = str(tmp_path / 'league.npz')
    league.save(path)
    restored = BaseLeague.load(path)
    expected = [player.get_opponent()[0].player_id for _ in range(200)]
    got = [restored.get_player('naive_sp_0').get_opponent()[0].player_id for _ in range(200)]
    assert got == expected


def test_nash_branch_solves_the_meta_game_source_when_one_is_set():
    league, h = cyclic_league(extra_snapshots=2)
    seen = []

    def exact(ids):  # h[4] beats everyone: the whole Nash mixture goes to it
        seen.append(list(ids))
        game = np.zeros((len(ids), len(ids)))
        strong = ids.index(h[4])
        game[strong, :], game[:, strong] = 1.0, -1.0
        game[strong, strong] = 0.0
        return game

    league.set_meta_game_source(exact)
    player = league.get_player('naive_sp_0')
    picks = Counter(player._nash_branch().player_id for _ in range(200))
    assert picks == Counter({h[4]: 200})
    assert sorted(seen[0]) == sorted(h)
    league.set_meta_game_source(None)  # back to win rates: the cycle is mixed again
    picks = Counter(player._nash_branch().player_id for _ in range(3000))
    assert set(picks) == set(h[1:4])


def test_a_given_value_no_strategy_guarantees_is_solved_for_instead_of_refused():
    """A parallel league's exact meta-game (antisymmetric up to rounding) once had a value a hair below the 0 that
    symmetric_nash asks a strategy to guarantee: the program was infeasible and the commander failed every 'jobs'
    request. A given value that no strategy guarantees now makes the solver find the value itself."""
    from sparring.league.meta_strategy import _maximin_strategy
    matrix = np.array([[-1e-3, -0.5], [0.5, -1e-3]])  # every row loses a little somewhere: the value is below 0
    strategy, value = _maximin_strategy(matrix, value=0.0)
    np.testing.assert_allclose(strategy, [0.0, 1.0], atol=1e-6)  # the second row dominates
    assert value == pytest.approx(-1e-3)


def role_league_with_pennies():
    """A league of roles a and b whose snapshots play matching pennies across the roles: a's h1 beats b's h0 and
    loses to b's h1, a's h2 the other way round, and b's h2 loses to both; snapshots of one role never meet."""
    league = OneVsOneLeague(dict(payoff=EXACT, roles=True, player_category=['a', 'b'], reference_players=[],
                                 players=dict(naive_sp=dict(branch_probs=dict(nash=1.0), one_phase_step=1))))
    for step in (2, 4):
        for pid in ('naive_sp_a_0', 'naive_sp_b_0'):
            league.update_active_player(dict(player_id=pid, train_iteration=step))
            assert league.judge_snapshot(pid)['snapshot']
    a, b = ([f'naive_sp_{r}_0_h{i}' for i in range(3)] for r in 'ab')
    for row, outcomes in ((a[1], ('win', 'loss', 'win')), (a[2], ('loss', 'win', 'win'))):
        for col, outcome in zip(b, outcomes):
            league.payoff.record(row, col, [outcome])
    return league, a, b


def test_nash_branch_of_a_role_solves_the_two_populations_game():
    """Against the other role's snapshots the mixture is the Nash strategy of the game between the two populations
    (half each on b's h0 and h1, none on the beaten h2), not the uniform answer of b's snapshots among
    themselves, which never meet."""
    league, a, b = role_league_with_pennies()
    player = league.get_player('naive_sp_a_0')
    group = player._nash_candidates()
    assert group.ids == b
    np.testing.assert_allclose(player.nash_mixture(group), [0.5, 0.5, 0.0], atol=1e-8)
    assert {player.get_opponent()[0].player_id for _ in range(20)} <= {b[0], b[1]}
