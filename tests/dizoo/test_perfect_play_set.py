"""Labelled connect-four positions: the groups, a player's error rate on hand-made labels, the file, generation."""
import numpy as np
import pytest

from sparring.dizoo.board_games.solver import ILLEGAL, moves_to_end
from sparring.dizoo.board_games.solver.testset import (GROUPS, PositionSet, errors_of, group_of, load,
                                                        missed_tactics, perfect_play_report, score_policy)
from sparring.policy.base import ActOutput


class FixedMoves:
    """A player that answers each batch with the next moves of a list (checks the legal mask it is given)."""

    def __init__(self, moves):
        self.moves = list(moves)

    def act(self, obs, state=None, deterministic=False, action_mask=None):
        assert obs.shape[1:] == (3, 6, 7) and deterministic and action_mask.shape == (len(obs), 7)
        moves, self.moves = np.array(self.moves[:len(obs)]), self.moves[len(obs):]
        return ActOutput(moves, np.zeros(len(obs)), np.zeros(len(obs)), None)


def hand_set():
    scores = np.array([[3, 1, -2, ILLEGAL, 0, 0, 0],  # win (fast or slow), loss, full, draws
                       [0, 0, -5, -1, 0, 0, ILLEGAL],  # a draw at best
                       [-4, -2, -9, -2, -3, -7, -8]],  # lost whatever is played
                      np.int8)
    zeros = np.zeros(3, np.uint64)
    return PositionSet(zeros, zeros, np.array([30, 20, 20], np.int8), scores,
                       np.array(['end-easy', 'middle-easy', 'middle-medium']), dict(seed=9))


def test_groups_follow_stones_played_and_plies_to_the_end():
    assert group_of(0, 42) == 'begin-hard' and group_of(14, 28) == 'begin-hard' and group_of(14, 27) == 'begin-medium'
    assert group_of(15, 13) == 'middle-easy' and group_of(28, 14) == 'middle-medium' and group_of(29, 13) == 'end-easy'
    assert moves_to_end(0, 15) == 27  # a draw is decided when the board is full


def test_an_error_is_a_worse_outcome_not_a_slower_win():
    positions = hand_set()
    moves = np.array([[0, 1, 2, 4], [0, 2, 3, 5], [0, 2, 6, 1]])  # per position: the moves tried
    expected = [[False, False, True, True], [False, True, True, False], [False, False, False, False]]
    for k in range(4):
        assert errors_of(positions, moves[:, k]).tolist() == [row[k] for row in expected]
    report = score_policy(FixedMoves([1, 2, 6]), positions, batch=2)  # batches of 2: the moves stay in order
    assert report['end-easy'] == dict(positions=1, errors=0, error_rate=0.0, missed_wins=0, missed_blocks=0)
    assert report['middle-easy'] == dict(positions=1, errors=1, error_rate=1.0, missed_wins=0, missed_blocks=0)
    assert report['all'] == dict(positions=3, errors=1, error_rate=round(1 / 3, 4), missed_wins=0, missed_blocks=0)
    assert set(report) == {'end-easy', 'middle-easy', 'middle-medium', 'all'}
    with pytest.raises(ValueError, match='full column'):
        score_policy(FixedMoves([3, 0, 0]), positions)


def _stones(moves: str):
    """``(own, opp)`` after 1-based columns from the empty board (the player to move's stones first)."""
    from sparring.dizoo.board_games.bitboard import BoardGeometry
    g, own, opp = BoardGeometry(6, 7, 4, gravity=True), 0, 0
    for char in moves:
        occupied = own | opp
        own, opp = opp, own | ((occupied + g.move_table[int(char) - 1]) & ~occupied)
    return own, opp


def test_errors_that_miss_a_win_in_one_or_a_block_are_told_apart():
    # X three up column 1, O three up column 2, X to move: column 1 wins now; columns 3-7 let O win at once.
    # X twice up column 1 and once on 4, O three up column 2, X to move: no win in one; column 2 blocks, the
    # others let O win at once. Scores: the immediate wins and losses as the solver gives them (a win or loss
    # with a 4th stone: 22 - 4); 0 stands for the blocks, whose outcome only has to lie between.
    (own1, opp1), (own2, opp2) = _stones('121212'), _stones('121242')
    scores = np.array([[18, 0, -18, -18, -18, -18, -18],
                       [-18, 0, -18, -18, -18, -18, -18]], np.int8)
    positions = PositionSet(np.array([own1, own2], np.uint64), np.array([opp1, opp2], np.uint64),
                            np.array([6, 6], np.int8), scores, np.array(['begin-easy', 'begin-easy']))
    missed_win, missed_block = missed_tactics(positions, np.array([3, 3]))
    assert missed_win.tolist() == [True, False] and missed_block.tolist() == [False, True]
    # Column 2: an error in the first position but no missed block (X had a win to take); no error in the second.
    missed_win, missed_block = missed_tactics(positions, np.array([1, 1]))
    assert missed_win.tolist() == [True, False] and missed_block.tolist() == [False, False]
    assert not missed_tactics(positions, np.array([0, 1]))[0].any()  # the win taken
    report = score_policy(FixedMoves([3, 3]), positions)
    assert report['begin-easy'] == dict(positions=2, errors=2, error_rate=1.0, missed_wins=1, missed_blocks=1)


def test_the_file_round_trips_and_names_what_is_wrong(tmp_path):
    path = str(tmp_path / 'set.npz')
    hand_set().save(path)
    loaded = load(path)
    assert loaded.scores.tolist() == hand_set().scores.tolist() and loaded.group.tolist() == hand_set().group.tolist()
    assert loaded.meta['seed'] == 9
    report = perfect_play_report(FixedMoves([0, 0, 0]), path)
    assert report['seed'] == 9 and report['groups']['all']['errors'] == 0
    with pytest.raises(FileNotFoundError, match='perfect_play.py generate'):
        load(str(tmp_path / 'missing.npz'))


def test_generated_positions_carry_the_solvers_labels_and_their_group():
    pytest.importorskip('numba', reason='labelling needs the "perfect" extra (numba)')
    from sparring.dizoo.board_games.solver import Solver
    from sparring.dizoo.board_games.solver.testset import generate
    solver = Solver(table_bits=18)
    positions = generate(3, per_group=3, max_nodes=20_000, max_seconds=600, max_attempts=60, solver=solver)
    again = generate(3, per_group=3, max_nodes=20_000, max_seconds=600, max_attempts=60, solver=solver)
    assert positions.own.tolist() == again.own.tolist() and positions.scores.tolist() == again.scores.tolist()
    assert len(positions) >= 6 and set(positions.group.tolist()) <= set(GROUPS)
    for own, opp, played, scores, group in zip(positions.own, positions.opp, positions.played, positions.scores,
                                               positions.group):
        assert solver.move_scores(own, opp).tolist() == scores.tolist()
        assert group == group_of(int(played), moves_to_end(int(scores.max()), int(played)))


def test_without_numba_the_solver_names_the_extra(monkeypatch):
    import sys

    from sparring.dizoo.board_games.solver import Solver
    monkeypatch.setitem(sys.modules, 'numba', None)  # an import of numba now fails, as where it is not installed
    monkeypatch.delitem(sys.modules, 'sparring.dizoo.board_games.solver.engine', raising=False)
    with pytest.raises(ImportError, match=r'pip install "sparring\[perfect\]"'):
        Solver(table_bits=18)


def test_the_reported_set_ships_with_the_repository_and_its_groups_match_its_labels():
    from sparring.dizoo.board_games.solver.testset import REPORT_SET
    positions = load(REPORT_SET)
    assert positions.meta['seed'] == 2 and len(positions) >= 500 and set(positions.group.tolist()) == set(GROUPS)
    assert (positions.scores != ILLEGAL).any(axis=1).all() and positions.own.dtype == np.uint64
    assert not (positions.own & positions.opp).any()
    for played, scores, group in zip(positions.played, positions.scores, positions.group):
        assert group == group_of(int(played), moves_to_end(int(scores.max()), int(played)))
