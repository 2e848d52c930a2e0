"""Uniformly random playouts of many k-in-a-row positions at once, without a move-by-move loop.

A playout plays uniformly random legal moves until a line or a full board. Stepping a batch of
boards move by move costs a dozen numpy calls per move, and at the few dozen boards an MCTS batch
holds those calls cost far more than their arithmetic. Instead, each playout's random moves are
drawn up front, each empty cell gets the *time* (move number) at which the playout fills it,
and the winner is whoever first completes a line: for each line and player, the time its last
cell is filled by that player; the least such time over both players ends the game.

The move orders have exactly the distribution of move-by-move random play:

* Without gravity (tic-tac-toe), a uniformly random legal move at every step is a uniformly
  random order of the empty cells: the cells sorted by i.i.d. uniform keys.
* With gravity (connect four), give every column a Poisson clock of rate 1 and play in a column
  when its clock rings, ignoring the rings of full columns. The next ring among the columns that
  still have room is equally likely to be any of them (competing exponential waits, memoryless),
  so the moves are a uniformly random legal column at every step. A column's k-th empty cell is
  filled at its k-th ring: the sum of k exponential waits, a cumulative sum up the column.

Moves after the game's end are filled in too, but they never matter: only the first completed
line counts.
"""
from __future__ import annotations

import numpy as np

from sparring.dizoo.board_games.bitboard import BoardGeometry

# A cell's code: its state in the top two bits, and for an empty cell the move number at which the
# playout fills it (0, 1, ...; the mover plays the even ones) in the low six.
EMPTY, MOVER_STONE, OTHER_STONE, NOT_A_CELL = 0, 64, 128, 192
MOVE_NUMBER_BITS = 63
# The time at which a cell becomes a player's, and NEVER if it does not; stones already on the
# board are theirs from time -1.
NEVER, ALREADY = 127, -1


def _time_tables() -> np.ndarray:
    """``[player, code]`` -> the time the cell of that code becomes the player's (int8)."""
    codes = np.arange(256)
    move_number = codes & MOVE_NUMBER_BITS
    tables = np.full((2, 256), NEVER, np.int8)
    for player in (0, 1):
        played = (codes & ~MOVE_NUMBER_BITS == EMPTY) & (move_number % 2 == player)
        tables[player, played] = move_number[played]
    tables[0, codes & ~MOVE_NUMBER_BITS == MOVER_STONE] = ALREADY
    tables[1, codes & ~MOVE_NUMBER_BITS == OTHER_STONE] = ALREADY
    return tables


class RandomPlayouts:
    """Results of uniformly random playouts for batches of positions on one board geometry."""

    def __init__(self, geometry: BoardGeometry, rng: np.random.Generator) -> None:
        self.geometry, self.rng = geometry, rng
        g = geometry
        # Cells are addressed by their bit index (sentinel bits included, never empty).
        self.num_bits = g.cols * g.column_bits
        self.is_cell = np.zeros(self.num_bits, bool)
        self.is_cell[g.cell_bit_index.astype(np.int64)] = True
        self.lines = self._line_bits()
        self.lines_by_position = np.ascontiguousarray(self.lines.T)
        self.places = np.arange(self.num_bits, dtype=np.uint8)
        self.not_a_cell_codes = np.where(self.is_cell, EMPTY, NOT_A_CELL).astype(np.uint8)
        self.sentinel_waits = np.where(self.is_cell, 0.0, np.inf)
        self.not_a_cell_keys = np.where(self.is_cell, 0.0, 2.0)
        self.time_tables = _time_tables()

    def _line_bits(self) -> np.ndarray:
        """Bit indices ``[lines, win_length]`` of every winning line: ``win_length`` cells a
        line's shift apart (a run that would cross the board's edge meets a sentinel bit or runs
        off the end, as in :meth:`BoardGeometry.has_line`)."""
        g, k = self.geometry, self.geometry.win_length
        lines = []
        for shift in g.shifts:
            for start in range(self.num_bits - (k - 1) * shift):
                bits = [start + i * shift for i in range(k)]
                if self.is_cell[bits].all():
                    lines.append(bits)
        return np.array(lines, np.int64)

    def unpack(self, stones: np.ndarray) -> np.ndarray:
        """uint64 bitboards ``[...]`` as bools ``[..., num_bits]`` (bit i at index i)."""
        as_bytes = np.ascontiguousarray(stones, dtype='<u8').view(np.uint8).reshape(stones.shape + (8,))
        return np.unpackbits(as_bytes, axis=-1, bitorder='little')[..., :self.num_bits].view(bool)

    def __call__(self, mover: np.ndarray, other: np.ndarray):
        """``(result, over)`` for positions with ``mover`` to move (uint64 bitboards ``[n]``).

        ``result`` is +1 where random play from the position is won by ``mover``, -1 where it is
        lost, 0 for a draw (float64). ``over`` marks positions that were already decided: the
        opponent already has a line (result -1) or the board is full (result 0).
        """
        n = len(mover)
        occupied = mover | other
        mover_cells, other_cells = self.unpack(np.stack([mover, other]))
        stone_cells = mover_cells | other_cells
        # Sorting puts the stones first, then the empty cells in the order they are filled, then
        # the bits that are no cell; so an empty cell's move number is its place less the stones.
        order = np.argsort(self._fill_keys(stone_cells), axis=1)
        place = np.empty((n, self.num_bits), np.uint8)
        place[np.arange(n)[:, None], order] = self.places
        move_number = (place - np.bitwise_count(occupied).astype(np.uint8)[:, None]) & np.uint8(MOVE_NUMBER_BITS)
        states = (mover_cells.view(np.uint8) << 6) | (other_cells.view(np.uint8) << 7) | self.not_a_cell_codes
        # Rows: player 0 (the mover) of every position, then player 1; [2n, position in line, line],
        # because reducing over a middle axis is far cheaper than over a short last one.
        times = np.take(self.time_tables, move_number | states, axis=1).reshape(2 * n, self.num_bits)
        first_line = times[:, self.lines_by_position].max(axis=1).min(axis=1)  # when each player first has a line
        mover_first, other_first = first_line[:n], first_line[n:]
        result = (mover_first < other_first).astype(np.float64) - (other_first < mover_first)
        over = (other_first == ALREADY) | (occupied == self.geometry.full_board)
        return result, over

    def _fill_keys(self, stone_cells: np.ndarray) -> np.ndarray:
        """Sort keys ``[n, num_bits]``: empty cells in the order random play fills them, below them
        the stones, above them the bits that are no cell."""
        g = self.geometry
        if g.gravity:
            # Stones wait 0 and sit at the bottom of their columns; a column's top (sentinel) bit
            # waits forever.
            waits = self.rng.standard_exponential(stone_cells.shape) * ~stone_cells + self.sentinel_waits
            keys = np.cumsum(waits.reshape(len(waits), g.cols, g.column_bits), axis=2).reshape(stone_cells.shape)
        else:
            keys = self.rng.random(stone_cells.shape) + self.not_a_cell_keys
        keys -= stone_cells  # below every empty cell, even one whose wait came out as 0
        return keys
