"""Meta-strategies of a population: Nash equilibria of zero-sum matrix games and of the league's meta-game.

:func:`solve_zero_sum_matrix` solves a two-player zero-sum matrix game by linear programming
(``scipy.optimize.linprog``; ``pip install sparring[league]``). :func:`payoff_nash` builds the
*meta-game* of a set of players from the shared payoff, entry ``(i, j)`` = player i's score
against j minus one half, where the score is ``(wins + draws / 2) / games``, and returns its Nash
mixture: the population meta-strategy of PSRO, and what the ``nash`` branch of an active player
samples opponents from.

A matrix game often has many equilibria (every strategy is optimal when all entries are equal).
Both solvers then return the most spread-out one in a precise sense: among the optimal
strategies, one that maximises ``sum_i min(x_i, 1/n)``, so equally good strategies share the
probability (uniform for an all-equal matrix) while a strategy that no equilibrium plays still
gets 0.

Cost: two linear programs of ``n + m`` variables (one for a symmetric meta-game). Measured here:
100 players ~0.02 s; 600 players ~0.15 s when the meta-game is nearly transitive (later snapshots
beat earlier ones), ~2.7 s for a dense random one.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np


def _linprog():
    try:
        from scipy.optimize import linprog
    except ImportError as err:
        raise ImportError('solving a meta-game needs scipy: pip install sparring[league] (or pip install scipy)') \
            from err
    return linprog


def solve_zero_sum_matrix(payoff) -> Tuple[np.ndarray, np.ndarray, float]:
    """``(row_strategy, col_strategy, value)`` of the zero-sum game where the row player receives
    ``payoff[i, j]`` (and the column player ``-payoff[i, j]``): mixed strategies that guarantee each
    player the game's ``value`` (row player's expected payoff) whatever the other does.

    ``payoff`` is a finite 2-D array with at least one row and one column.
    """
    matrix = np.asarray(payoff, dtype=np.float64)
    if matrix.ndim != 2 or 0 in matrix.shape or not np.isfinite(matrix).all():
        raise ValueError(f'solve_zero_sum_matrix: expected a finite 2-D payoff matrix with at least one row and '
                         f'one column, got shape {matrix.shape}' + ('' if np.isfinite(matrix).all() else
                                                                    ' with NaN or inf entries'))
    row, value = _maximin_strategy(matrix)
    # The column player maximises -payoff; by the minimax theorem its LP finds the same value (negated).
    col, _ = _maximin_strategy(-matrix.T)
    return row, col, value


def _maximin_strategy(matrix: np.ndarray, value: Optional[float] = None) -> Tuple[np.ndarray, float]:
    """The row player's most spread-out optimal mixed strategy, and the game's value (solved for unless given)."""
    linprog = _linprog()
    n, m = matrix.shape
    first = None
    if value is None:
        # Stage 1: maximise v subject to (x^T A)_j >= v for every column j, x in the simplex.
        # Variables [x (n), v]; linprog minimises, so the objective is -v.
        objective = np.zeros(n + 1)
        objective[-1] = -1.0
        a_ub = np.hstack([-matrix.T, np.ones((m, 1))])  # v - (x^T A)_j <= 0
        a_eq = np.hstack([np.ones((1, n)), np.zeros((1, 1))])
        bounds: List[Tuple[Optional[float], Optional[float]]] = [(0.0, None)] * n + [(None, None)]
        first = linprog(objective, A_ub=a_ub, b_ub=np.zeros(m), A_eq=a_eq, b_eq=[1.0], bounds=bounds, method='highs')
        _check(first, 'value')
        value = float(first.x[-1])
    # Stage 2: among the strategies that guarantee the value, maximise sum_i t_i with t_i <= x_i and
    # t_i <= 1/n. Variables [x (n), t (n)].
    objective = np.concatenate([np.zeros(n), -np.ones(n)])
    guarantee = np.hstack([-matrix.T, np.zeros((m, n))])  # -(x^T A)_j <= -value
    t_below_x = np.hstack([-np.eye(n), np.eye(n)])  # t_i - x_i <= 0
    a_ub = np.vstack([guarantee, t_below_x])
    b_ub = np.concatenate([np.full(m, -value), np.zeros(n)])
    a_eq = np.hstack([np.ones((1, n)), np.zeros((1, n))])
    bounds = [(0.0, None)] * n + [(0.0, 1.0 / n)] * n
    second = linprog(objective, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=bounds, method='highs')
    if second.status == 0:
        x = second.x[:n]
    elif first is not None:
        # Stage 1's x satisfies stage 2 (within the tolerance HiGHS applies to both), so a failure here
        # is numerical; stage 1's optimum is an equilibrium too, only the tie-break is lost.
        x = first.x[:n]
    else:
        # The value was given (0 for a symmetric game), but a matrix antisymmetric only up to rounding can have
        # a value a hair below it, and then no strategy guarantees it: solve for the value instead.
        return _maximin_strategy(matrix)
    x = np.clip(x, 0.0, None)
    return x / x.sum(), value


def _check(result, what: str) -> None:
    if result.status != 0:
        raise RuntimeError(f'solve_zero_sum_matrix: the linear program for the {what} failed: {result.message}')


def meta_game(payoff, player_ids: Sequence[str]) -> np.ndarray:
    """The symmetric zero-sum meta-game of ``player_ids`` from a :class:`BattleSharedPayoff`:
    ``M[i, j]`` = (wins + draws / 2) / games of i against j, minus 1/2.

    Pairs with fewer than the payoff's ``min_win_rate_games`` (decayed) games, unplayed pairs and the
    diagonal count as even (0). ``M`` is antisymmetric (``M = -M^T``).
    """
    ids = list(player_ids)
    rates, _ = payoff.matrix(ids, ids)
    matrix = rates - 0.5
    # A pair's two directions come from the same record; averaging removes rounding differences.
    return 0.5 * (matrix - matrix.T)


def symmetric_nash(matrix) -> np.ndarray:
    """The Nash strategy of an antisymmetric (symmetric zero-sum, value 0) matrix game such as a
    :func:`meta_game`: one strategy serves both sides, so only the row player's program is solved."""
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or 0 in matrix.shape:
        raise ValueError(f'symmetric_nash: expected a non-empty square matrix, got shape {matrix.shape}')
    if not np.isfinite(matrix).all() or not np.allclose(matrix, -matrix.T):
        raise ValueError('symmetric_nash: expected a finite antisymmetric matrix (M = -M^T); for any other '
                         'zero-sum game use solve_zero_sum_matrix')
    strategy, _ = _maximin_strategy(matrix, value=0.0)  # a symmetric game's value is 0
    return strategy


def payoff_nash(payoff, player_ids: Sequence[str]) -> np.ndarray:
    """The Nash mixture over ``player_ids`` of their meta-game (:func:`meta_game`), a probability per
    player in the order given (the meta-game is symmetric: its value is 0)."""
    ids = list(player_ids)
    if not ids:
        raise ValueError('payoff_nash: expected at least one player id, got none')
    if len(set(ids)) != len(ids):
        raise ValueError(f'payoff_nash: player ids {ids} repeat an id; expected distinct players')
    return symmetric_nash(meta_game(payoff, ids))
