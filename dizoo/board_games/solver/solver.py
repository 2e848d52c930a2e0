"""A perfect connect-four player: every legal move's exact score, and a depth-limited search for graded play.

:class:`Solver` holds one transposition table (kept between calls, so a game's or a data set's positions
reuse each other's work) and calls the compiled kernels of :mod:`.engine`. Positions are the bitboards
of :class:`~sparring.dizoo.board_games.bitboard.BoardGeometry` (the player to move's stones ``own``, the
other's ``opp``), or a string of columns played from the empty board, ``'4453'`` (1-based, the notation
of Pons' test sets).

Scores: positive when the player to move wins, negative when it loses, 0 for a draw; a win with the
winner's k-th stone scores ``(width * height + 1) // 2 + 1 - k`` (on 7x6, 22 - k), so a larger score is a
faster win and a less negative one a slower loss. A move's score is the score of the position it leads to,
from the mover's side; a full column scores :data:`ILLEGAL`.
"""
from __future__ import annotations

import importlib
from typing import Tuple

import numpy as np

from sparring.dizoo.board_games.bitboard import BoardGeometry

ILLEGAL = -128  # a full column's score: below any real score, and it fits the data sets' int8
# Keys below 2**49 (7x6) are told apart by their low 32 bits and their index modulo a prime over 2**17.
_KEY_LOW_BITS = 32


def require_engine():
    """The compiled kernels, or one ImportError naming the extra that provides numba."""
    try:
        return importlib.import_module('sparring.dizoo.board_games.solver.engine')
    except ImportError as err:
        raise ImportError(f'the connect-four solver needs numba ({err}); install the extra: '
                          f'pip install "sparring[perfect]"') from None


def largest_prime_below(limit: int) -> int:
    candidate = limit - 1
    while candidate > 2 and any(candidate % d == 0 for d in range(2, int(candidate ** 0.5) + 1)):
        candidate -= 1
    return candidate


def outcome(scores):
    """+1 / 0 / -1 (win / draw / loss for the mover) of scores; ILLEGAL stays below -1 (as -2)."""
    scores = np.asarray(scores)
    return np.where(scores == ILLEGAL, -2, np.sign(scores))


class Solver:
    """Exact scores of connect-four positions on a ``width`` x ``height`` board (four in a row wins).

    ``table_bits``: the table holds the largest prime below ``2**table_bits`` entries of 5 bytes (the
    default, 23: 8.4M entries, 42 MB). ``max_nodes``: a node budget per call of :meth:`solve` or
    :meth:`move_scores` (0: none); a call that runs out raises :class:`SearchBudgetExceeded`, and the table
    keeps only what was proved.
    """

    def __init__(self, width: int = 7, height: int = 6, table_bits: int = 23, max_nodes: int = 0) -> None:
        self.engine = require_engine()
        self.geometry = BoardGeometry(height, width, 4, gravity=True)
        self.width, self.height = int(width), int(height)
        self.size = self.width * self.height
        key_bits = self.width * (self.height + 1)
        if not 2 ** max(0, key_bits - _KEY_LOW_BITS) < 2 ** table_bits <= 2 ** 31:
            raise ValueError(f'solver: table_bits {table_bits}; expected a table larger than 2**'
                             f'{max(0, key_bits - _KEY_LOW_BITS)} (so a {width}x{height} key is never misread) '
                             f'and at most 2**31')
        if max_nodes < 0:
            raise ValueError(f'solver: max_nodes {max_nodes}; expected 0 (no budget) or a positive node count')
        self.max_nodes = int(max_nodes)
        table_size = largest_prime_below(2 ** table_bits)
        self.keys = np.zeros(table_size, np.uint32)
        self.values = np.zeros(table_size, np.int8)
        self.bottom = np.uint64(sum(1 << (c * (self.height + 1)) for c in range(self.width)))
        self.board = np.uint64(self.geometry.full_board)
        # Centre first, then outwards alternating left and right: central cells lie on more lines.
        self.order = np.array(sorted(range(self.width), key=lambda c: (abs(2 * c - (self.width - 1)), c)), np.int64)
        self._slot_moves = np.zeros((self.size + 1, self.width), np.uint64)
        self._slot_scores = np.zeros((self.size + 1, self.width), np.uint64)
        self.nodes = 0  # searched since the solver was made

    def reset(self) -> None:
        """Forget the table (scores do not depend on it; only the time does)."""
        self.keys[:] = 0
        self.values[:] = 0

    # -- positions ------------------------------------------------------------------------------
    def position(self, moves: str) -> Tuple[int, int]:
        """``(own, opp)`` after the 1-based columns ``moves`` from the empty board (the player to move's stones
        first); raises ValueError on a full column, a column off the board, or a move after the game is won."""
        own, opp = 0, 0
        g = self.geometry
        for i, char in enumerate(moves):
            column = ord(char) - ord('1')
            if not 0 <= column < self.width:
                raise ValueError(f'solver: move {char!r} at {i} of {moves!r}; expected a column 1-{self.width}')
            if g.has_line(opp):
                raise ValueError(f'solver: move {i} of {moves!r} comes after the game was won')
            occupied = own | opp
            if occupied & g.guard_table[column]:
                raise ValueError(f'solver: move {i} of {moves!r} plays column {char}, which is full')
            own |= (occupied + g.move_table[column]) & ~occupied
            own, opp = opp, own
        return own, opp

    def _checked(self, own, opp) -> Tuple[np.uint64, np.uint64, int]:
        """``(cur, mask, stones played)`` of a position the game has not ended in; ValueError otherwise."""
        own, opp = int(own), int(opp)
        g = self.geometry
        mask = own | opp
        if own & opp or mask & ~g.full_board:
            raise ValueError(f'solver: stones {own:#x} and {opp:#x} overlap or lie off the {self.width}x'
                             f'{self.height} board')
        column_cells = (1 << self.height) - 1
        for c in range(self.width):
            column = (mask >> (c * (self.height + 1))) & column_cells
            if column & (column + 1):
                raise ValueError(f'solver: column {c} has a stone above an empty cell; expected stones stacked '
                                 f'from the bottom')
        played, surplus = bin(mask).count('1'), bin(opp).count('1') - bin(own).count('1')
        if surplus != played % 2:  # the first player has one stone more after its move, as many after the other's
            raise ValueError(f'solver: {bin(own).count("1")} stones to move and {bin(opp).count("1")} for the '
                             f'other player; expected equal counts or one more for the player who just moved')
        if g.has_line(own) or g.has_line(opp) or played == self.size:
            raise ValueError('solver: the game is over in this position (four in a row or a full board)')
        return np.uint64(own), np.uint64(mask), played

    # -- scores ---------------------------------------------------------------------------------
    def _args(self):
        return (self.width, self.height, self.bottom, self.board, self.order)

    def solve(self, own, opp) -> int:
        """The exact score of the position for the player to move (``own``)."""
        cur, mask, played = self._checked(own, opp)
        stats = np.zeros(2, np.int64)
        try:
            return self._solve(cur, mask, played, stats)
        finally:
            self.nodes += int(stats[0])

    def _solve(self, cur, mask, played, stats) -> int:
        score = self.engine.solve(cur, mask, played, *self._args(), self.keys, self.values, self._slot_moves,
                                  self._slot_scores, stats, self.max_nodes)
        if stats[1]:
            raise SearchBudgetExceeded(f'solver: no exact score within max_nodes={self.max_nodes} nodes')
        return int(score)

    def move_scores(self, own, opp) -> np.ndarray:
        """Every column's exact score ``[width]`` (int64; :data:`ILLEGAL` for a full column); ``max_nodes``
        bounds the nodes of all of them together."""
        cur, mask, played = self._checked(own, opp)
        scores = np.full(self.width, ILLEGAL, np.int64)
        wins = self.engine.winning_cells(cur, mask, self.height, self.board)
        stats = np.zeros(2, np.int64)
        try:
            for column, move in self._moves(mask):
                if move & wins:
                    scores[column] = (self.size + 1 - played) // 2
                elif played + 1 == self.size:
                    scores[column] = 0
                else:
                    scores[column] = -self._solve(cur ^ mask, mask | move, played + 1, stats)
        finally:
            self.nodes += int(stats[0])
        return scores

    def limited_scores(self, own, opp, depth: int) -> np.ndarray:
        """Every column's score ``[width]`` by a search ``depth`` plies beyond the move: exact where the game is
        decided within them, 0 where it is not (or is drawn); :data:`ILLEGAL` for a full column."""
        if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 0:
            raise ValueError(f'solver: depth {depth!r}; expected an int >= 0')
        cur, mask, played = self._checked(own, opp)
        e, args = self.engine, self._args()
        scores = np.full(self.width, ILLEGAL, np.int64)
        stats = np.zeros(2, np.int64)
        wins = e.winning_cells(cur, mask, self.height, self.board)
        for column, move in self._moves(mask):
            if move & wins:
                scores[column] = (self.size + 1 - played) // 2
            else:
                scores[column] = -e.limited(cur ^ mask, mask | move, played + 1, depth, -self.size, self.size, *args,
                                            self._slot_moves, self._slot_scores, stats)
        self.nodes += int(stats[0])
        return scores

    def _moves(self, mask):
        possible = int((mask + self.bottom) & self.board)
        for column in range(self.width):
            move = possible & (((1 << self.height) - 1) << (column * (self.height + 1)))
            if move:
                yield column, np.uint64(move)


class SearchBudgetExceeded(RuntimeError):
    """A solve ran past the solver's ``max_nodes``."""


def position_score(move_scores: np.ndarray) -> int:
    """A position's score from its moves' scores: the best of them."""
    return int(np.max(move_scores))


def moves_to_end(score: int, played: int, size: int = 42) -> int:
    """Plies until the game ends under perfect play, from ``played`` stones and the position's ``score``."""
    if score == 0:
        return size - played
    winner_stone = (size + 1) // 2 + 1 - abs(score)  # the winner's stone that completes its line
    if score > 0:  # the player to move, who has played played // 2 stones, wins
        return 2 * (winner_stone - played // 2) - 1
    return 2 * (winner_stone - (played - played // 2))
