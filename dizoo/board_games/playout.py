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

# A cell's code: the move number at which the playout fills it (0, 1, ...; the mover plays the even
# ones), or one of these for a cell that is not empty.
MOVER_STONE, OTHER_STONE, NOT_A_CELL = 125, 126, 127
# The time at which a cell becomes a player's, and NEVER if it does not; stones already on the
# board are theirs from time -1.
NEVER, ALREADY = 127, -1


def _time_tables() -> np.ndarray:
    """``[player, code]`` -> the time the cell of that code becomes the player's (int8)."""
    codes = np.arange(128)
    tables = np.full((2, 128), NEVER, np.int8)
    for player in (0, 1):
        played = (codes < MOVER_STONE) & (codes % 2 == player)
        tables[player, played] = codes[played]
    tables[0, MOVER_STONE] = tables[1, OTHER_STONE] = ALREADY
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
        self.move_numbers = np.arange(self.num_bits, dtype=np.uint8)
        self.not_a_cell_code = np.uint8(NOT_A_CELL)
        self.time_tables = _time_tables()

    def _line_bits(self) -> np.ndarray:
        """Bit indices ``[lines, win_length]`` of every winning line."""
        g, k = self.geometry, self.geometry.win_length
        bit_of_cell = g.cell_bit_index.astype(np.int64).reshape(g.rows, g.cols)
        lines = []
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            for r in range(g.rows):
                for c in range(g.cols):
                    end_r, end_c = r + (k - 1) * dr, c + (k - 1) * dc
                    if 0 <= end_r < g.rows and 0 <= end_c < g.cols:
                        lines.append([bit_of_cell[r + i * dr, c + i * dc] for i in range(k)])
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
        mover_cells, other_cells = self.unpack(np.stack([mover, other]))
        empty = self.is_cell & ~(mover_cells | other_cells)
        stone_codes = self.not_a_cell_code - 2 * mover_cells.view(np.uint8) - other_cells.view(np.uint8)
        codes = np.where(empty, self._fill_times(empty), stone_codes)
        # Rows: player 0 (the mover) of every position, then player 1; [2n, position in line, line],
        # because reducing over a middle axis is far cheaper than over a short last one.
        times = np.take(self.time_tables, codes, axis=1).reshape(2 * n, self.num_bits)
        first_line = times[:, self.lines_by_position].max(axis=1).min(axis=1)  # when each player first has a line
        mover_first, other_first = first_line[:n], first_line[n:]
        result = (mover_first < other_first).astype(np.float64) - (other_first < mover_first)
        over = (other_first == ALREADY) | ~empty.any(axis=1)
        return result, over

    def _fill_times(self, empty: np.ndarray) -> np.ndarray:
        """The move number at which random play fills each empty cell ``[n, num_bits]`` (uint8; any
        number elsewhere)."""
        g = self.geometry
        if g.gravity:
            waits = self.rng.standard_exponential(empty.shape) * empty
            keys = np.cumsum(waits.reshape(len(empty), g.cols, g.column_bits), axis=2).reshape(empty.shape)
        else:
            keys = self.rng.random(empty.shape)
        keys[~empty] = np.inf
        fill_time = np.empty(empty.shape, np.uint8)
        fill_time[np.arange(len(empty))[:, None], np.argsort(keys, axis=1)] = self.move_numbers
        return fill_time
