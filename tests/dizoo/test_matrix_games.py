"""Matrix games: payoffs, results, one-shot episodes, and the Nash equilibria they advertise."""
import itertools

import numpy as np
import pytest

from sparring.dizoo.matrix_games import PrisonersDilemmaEnv, RockPaperScissorsEnv, ZeroSum2x2Env
from sparring.worker.env.battle import make_battle_env

GAMES = {'zero_sum_2x2': ZeroSum2x2Env, 'prisoners_dilemma': PrisonersDilemmaEnv,
         'rock_paper_scissors': RockPaperScissorsEnv}


def solve_2x2_zero_sum(m: np.ndarray):
    """The row and column players' optimal mixed strategies and the value of a 2x2 zero-sum game
    without a saddle point (each player makes the other indifferent between its two actions)."""
    (a, b), (c, d) = m
    assert max(min(a, b), min(c, d)) < min(max(a, c), max(b, d)), 'the game has a saddle point'
    denominator = a - b - c + d
    p, q = (d - c) / denominator, (d - b) / denominator
    return np.array([p, 1 - p]), np.array([q, 1 - q]), (a * d - b * c) / denominator


def test_the_2x2_game_is_solved_by_0375_0625_for_both_seats():
    m = ZeroSum2x2Env.payoffs[0]
    np.testing.assert_array_equal(m, [[3, -2], [-2, 1]])
    np.testing.assert_array_equal(ZeroSum2x2Env.payoffs[1], -m.T)  # zero-sum, seat 1's own view
    row, column, value = solve_2x2_zero_sum(m)
    np.testing.assert_allclose(row, [0.375, 0.625])
    np.testing.assert_allclose(column, [0.375, 0.625])
    np.testing.assert_allclose(ZeroSum2x2Env.nash, [row, column])
    assert value == pytest.approx(ZeroSum2x2Env.game_value) == -0.125


def test_the_2x2_game_value_by_linear_programming():
    optimize = pytest.importorskip('scipy.optimize')
    m = ZeroSum2x2Env.payoffs[0].astype(float)
    # max v s.t. (p M)_j >= v for every column j, sum p = 1, p >= 0; variables (p0, p1, v).
    res = optimize.linprog(c=[0, 0, -1], A_ub=np.c_[-m.T, np.ones(2)], b_ub=np.zeros(2), A_eq=[[1, 1, 0]], b_eq=[1],
                           bounds=[(0, 1), (0, 1), (None, None)])
    np.testing.assert_allclose(res.x, [0.375, 0.625, -0.125], atol=1e-9)


@pytest.mark.parametrize('name', GAMES)
def test_advertised_nash_strategies_are_mutual_best_responses(name):
    cls = GAMES[name]
    for seat in range(2):
        payoff = cls.payoffs[seat].astype(float)  # [own, opponent]
        action_values = payoff @ cls.nash[1 - seat]
        best = action_values.max()
        support = cls.nash[seat] > 0
        np.testing.assert_allclose(action_values[support], best)  # nothing in the support is worse
        assert cls.nash[seat] @ action_values == pytest.approx(best)
    assert cls.nash[0] @ cls.payoffs[0] @ cls.nash[1] == pytest.approx(cls.game_value)


@pytest.mark.parametrize('name', GAMES)
def test_every_action_pair_pays_the_matrix_and_ends_the_episode(name):
    cls = GAMES[name]
    n = cls.payoffs.shape[1]
    pairs = np.array(list(itertools.product(range(n), repeat=2)))
    env = make_battle_env(dict(type=name), len(pairs), 0)
    first = env.reset()
    np.testing.assert_array_equal(first.obs, np.broadcast_to(np.eye(2, dtype=np.float32), first.obs.shape))
    assert first.action_mask.all() and first.to_move.all() and not env.turn_based
    step = env.step(pairs)
    for (a0, a1), reward, result in zip(pairs, step.reward, step.result):
        assert reward.tolist() == [cls.payoffs[0, a0, a1], cls.payoffs[1, a1, a0]]
        assert result.tolist() == [int(np.sign(reward[0] - reward[1])), int(np.sign(reward[1] - reward[0]))]
    assert step.terminated.all() and not step.truncated.any()
    if cls.zero_sum:
        np.testing.assert_array_equal(step.reward.sum(axis=1), 0.0)
    np.testing.assert_array_equal(step.final_obs, step.obs)
    np.testing.assert_array_equal(step.obs, first.obs)


def test_prisoners_dilemma_is_general_sum_and_results_compare_payoffs():
    env = make_battle_env(dict(type='prisoners_dilemma'), 3, 0)
    env.reset()
    step = env.step(np.array([[0, 0], [0, 1], [1, 1]]))  # both cooperate, sucker, both defect
    assert step.reward.tolist() == [[3.0, 3.0], [0.0, 5.0], [1.0, 1.0]]
    assert step.result.tolist() == [[0, 0], [-1, 1], [0, 0]]
