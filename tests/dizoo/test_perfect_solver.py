"""The connect-four solver: scores worked out by hand and by brute force, its errors, and the perfect bot."""
import functools

import numpy as np
import pytest
from gymnasium import spaces

from sparring.config.registry import BOT_REGISTRY
from sparring.config.schema import ConfigError
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.solver import ILLEGAL, SearchBudgetExceeded, Solver, moves_to_end
from sparring.dizoo.board_games.solver.testset import random_position

pytest.importorskip('numba', reason='the solver needs the "perfect" extra (numba)')


@pytest.fixture(scope='module')
def solver():
    return Solver(table_bits=20)


def brute_force_move_scores(own: int, opp: int, width: int, height: int):
    """Every column's score by plain minimax over every line of play (memoised, never pruned)."""
    g = BoardGeometry(height, width, 4, gravity=True)
    size = width * height

    @functools.lru_cache(maxsize=None)
    def value(own, opp):
        return max(s for s in move_scores(own, opp) if s != ILLEGAL)

    def move_scores(own, opp):
        occupied = own | opp
        played = bin(occupied).count('1')
        scores = []
        for column in range(width):
            if occupied & g.guard_table[column]:
                scores.append(ILLEGAL)
                continue
            new = own | ((occupied + g.move_table[column]) & ~occupied)
            if g.has_line(new):
                scores.append((size + 1 - played) // 2)
            elif played + 1 == size:
                scores.append(0)
            else:
                scores.append(-value(opp, new))
        return scores

    return move_scores(own, opp)


def test_hand_worked_wins_losses_and_a_draw(solver):
    # X has three up column 1, O three up column 2, X to move: column 1 wins now, with X's 4th stone (22 - 4);
    # after any column but 1 and 2, O (to move) wins at once with its 4th stone.
    assert solver.solve(*solver.position('121212')) == 18
    for column in '34567':
        assert solver.solve(*solver.position('121212' + column)) == 18
    # X on columns 4 and 5 of the bottom row (O on top of them), X to move: columns 3 and 6 make an open three
    # on the bottom row, two threats O cannot both block, so X wins with its 4th stone (a win in 2 moves) ...
    assert solver.solve(*solver.position('4455')) == 18
    # ... and O, to move after either, loses to that 4th stone; the same with O's stones wasted in column 1.
    for moves in ('44553', '44556', '41513'):
        assert solver.solve(*solver.position(moves)) == -18
    # A full board without four in a row, less the top two cells of column 7: whoever plays there, a draw.
    assert solver.move_scores(*solver.position(_draw_moves())).tolist() == [ILLEGAL] * 6 + [0]


def _draw_moves():
    """A board of columns XOXOXO (1, 2, 5, 6) and OXOXOX (3, 4, 7), bottom up, has no four in a row; its moves
    pair a column starting with X with one starting with O, and stop two cells short of column 7's top."""
    return '133113311331' + '244224422442' + '5775577555' + '666666'


def test_positions_of_random_play_near_the_end_equal_brute_force(solver):
    rng = np.random.default_rng(5)
    g = solver.geometry
    checked = 0
    while checked < 12:
        position = random_position(rng, g, int(rng.integers(30, 38)))
        if position is None:
            continue
        expected = brute_force_move_scores(*position, 7, 6)
        assert solver.move_scores(*position).tolist() == expected
        checked += 1


@pytest.mark.parametrize('width,height,stones,count', [(4, 4, 0, 1), (5, 4, 6, 3), (4, 5, 6, 3)])
def test_small_boards_equal_brute_force(width, height, stones, count):
    small = Solver(width, height, table_bits=18)
    rng = np.random.default_rng(width * 10 + height)
    checked = 0
    while checked < count:
        position = random_position(rng, small.geometry, stones)
        if position is not None:
            assert small.move_scores(*position).tolist() == brute_force_move_scores(*position, width, height)
            checked += 1


def test_wins_in_three_found_by_brute_force_are_the_solvers_too(solver):
    # A win with the mover's 3rd stone from now: score 22 - (stones it has + 3).
    rng = np.random.default_rng(11)
    found = 0
    while found < 2:
        played = int(rng.integers(30, 34))
        position = random_position(rng, solver.geometry, played)
        if position is None:
            continue
        best = max(brute_force_move_scores(*position, 7, 6))
        if best == 22 - (played // 2 + 3):
            assert solver.solve(*position) == best and moves_to_end(best, played) == 5
            found += 1


def test_moves_to_end_counts_plies_from_the_score():
    assert moves_to_end(18, 4) == 3  # '4455': X's 3rd stone, O's block, X's 4th
    assert moves_to_end(18, 6) == 1 and moves_to_end(-18, 5) == 2  # X has 3 stones: it wins now / after O's move
    assert moves_to_end(0, 40) == 2 and moves_to_end(1, 40) == 1  # a draw fills the board; X's 21st stone


def test_bad_positions_and_budget_raise_clear_errors(solver):
    with pytest.raises(ValueError, match='expected a column 1-7'):
        solver.position('8')
    with pytest.raises(ValueError, match='which is full'):
        solver.position('1111111')
    with pytest.raises(ValueError, match='after the game was won'):
        solver.position('12121211')
    with pytest.raises(ValueError, match='game is over'):
        solver.solve(*solver.position('1212121'))
    with pytest.raises(ValueError, match='stacked from the bottom'):
        solver.solve(2, 0)
    with pytest.raises(ValueError, match='stones to move'):
        solver.solve(1, 0)
    with pytest.raises(SearchBudgetExceeded, match='max_nodes=100'):
        Solver(table_bits=18, max_nodes=100).move_scores(0, 0)


def test_perfect_bot_plays_a_best_move_and_refuses_other_rules(solver):
    obs_space, act_space = spaces.Box(0.0, 1.0, (3, 6, 7), np.float32), spaces.Discrete(7)
    perfect = BOT_REGISTRY.get('connect_four_perfect')
    bot = perfect(dict(table_bits=18), obs_space, act_space, seed=1)
    g, rng = solver.geometry, np.random.default_rng(3)
    positions = []
    while len(positions) < 6:
        position = random_position(rng, g, int(rng.integers(30, 36)))
        positions += [position] if position else []
    own, opp = (np.array(stones, np.uint64) for stones in zip(*positions))
    obs = np.concatenate([g.planes(own)[:, None], g.planes(opp)[:, None], np.ones((len(own), 1, 6, 7), np.float32)], 1)
    legal = g.legal_mask(own | opp)
    for _ in range(3):  # ties at random: every choice must be a best move
        moves = bot.act(obs, action_mask=legal).action
        for position, move in zip(positions, moves):
            scores = brute_force_move_scores(*position, 7, 6)
            assert scores[move] == max(scores)
    # The graded bot sees X's double threat on the bottom row one ply beyond its move.
    graded = perfect(dict(depth=1, table_bits=18), obs_space, act_space)
    assert graded.move_scores(*solver.position('4455'))[[2, 5]].tolist() == [18, 18]
    assert graded.move_scores(*solver.position('4455'))[[0, 1, 3, 4, 6]].max() < 18
    with pytest.raises(ConfigError, match='win_length'):
        perfect(dict(win_length=3), obs_space, act_space)


def test_perfect_bot_falls_back_to_its_search_where_the_exact_one_runs_out():
    obs_space, act_space = spaces.Box(0.0, 1.0, (3, 6, 7), np.float32), spaces.Discrete(7)
    bot = BOT_REGISTRY.get('connect_four_perfect')(dict(max_nodes=1000, fallback_depth=2, table_bits=18),
                                                    obs_space, act_space)
    empty = np.zeros((1, 3, 6, 7), np.float32)
    empty[:, 2] = 1.0
    move = bot.act(empty, action_mask=np.ones((1, 7), bool)).action[0]
    assert 0 <= move < 7 and bot.fallbacks == 1  # the empty board takes far more than 1000 nodes
