"""Bitboards of k-in-a-row games (tic-tac-toe, connect four): layout, moves and line detection.

One player's stones are one integer: a Python ``int`` (the MCTS bot's search) or a numpy
``uint64`` array (the vectorised env and the heuristic bot). :meth:`BoardGeometry.has_line`, the
one line detector of both games, accepts either, because it uses only ``&``, ``|`` and shifts.

Layout: column-major, each column ``rows + 1`` bits from the bottom row up; the top bit of each
column is an always-empty *sentinel*, so shifting a line across the board's edge lands on a
sentinel (or past the last column) and never wraps into a false line. Cell ``r * cols + c`` of
an observation plane (row 0 at the top) is bit ``c * (rows + 1) + (rows - 1 - r)``.
"""
from __future__ import annotations

import numpy as np


class BoardGeometry:
    """A ``rows`` x ``cols`` board won by ``win_length`` in a row (horizontal, vertical, diagonal).

    With ``gravity`` an action is a column and the stone drops to its lowest empty cell (connect
    four); without, an action is a cell ``r * cols + c`` (tic-tac-toe).
    """

    def __init__(self, rows: int, cols: int, win_length: int, gravity: bool) -> None:
        for name, value in (('rows', rows), ('cols', cols), ('win_length', win_length)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f'board geometry: {name} must be an int >= 1, got {value!r}')
        if cols * (rows + 1) > 64:
            raise ValueError(f'board geometry: a {rows}x{cols} board needs cols * (rows + 1) = {cols * (rows + 1)} '
                             f'bits; expected at most 64 (one uint64 per player)')
        if not 2 <= win_length <= max(rows, cols):
            raise ValueError(f'board geometry: win_length {win_length} cannot fit a {rows}x{cols} board; expected '
                             f'2 <= win_length <= {max(rows, cols)}')
        self.rows, self.cols, self.win_length, self.gravity = int(rows), int(cols), int(win_length), bool(gravity)
        self.column_bits = self.rows + 1
        self.num_cells = self.rows * self.cols
        self.num_actions = self.cols if self.gravity else self.num_cells

        row, col = np.divmod(np.arange(self.num_cells), self.cols)
        self.cell_bit_index = (col * self.column_bits + (self.rows - 1 - row)).astype(np.uint64)
        self.cell_bits = np.left_shift(np.uint64(1), self.cell_bit_index)
        self.full_board = int(np.bitwise_or.reduce(self.cell_bits))
        # A line may run up a column, along a row, or along either diagonal: neighbouring stones
        # are 1, rows + 1, rows + 2 and rows bits apart.
        self.shifts = (1, self.column_bits, self.column_bits + 1, self.column_bits - 1)
        column_bottom = [1 << (c * self.column_bits) for c in range(self.cols)]
        column_top = [1 << (c * self.column_bits + self.rows - 1) for c in range(self.cols)]
        # Per action: the bit to add (the column's bottom for gravity, whose carry finds the lowest
        # empty cell) and the bit that must be empty for the action to be legal.
        self.move_table = column_bottom if self.gravity else [int(b) for b in self.cell_bits]
        self.guard_table = column_top if self.gravity else self.move_table
        self.move_array = np.array(self.move_table, np.uint64)
        self.guard_array = np.array(self.guard_table, np.uint64)
        self.cell_line_counts = self._count_lines_through_cells()

    # -- rules (Python ints or uint64 arrays) --------------------------------------------------

    def has_line(self, stones):
        """Whether ``stones`` hold ``win_length`` in a row: a bool, or a bool array for an array."""
        found = 0
        k = self.win_length
        for shift in self.shifts:
            # ``run`` has a bit where a run of ``length`` stones starts; doubling the length costs
            # one shift and one and, and a last overlapping step reaches exactly k.
            run, length = stones, 1
            while 2 * length <= k:
                run = run & (run >> (length * shift))
                length *= 2
            if length < k:
                run = run & (run >> ((k - length) * shift))
            found = found | run
        return found != 0

    def move_bits(self, occupied, actions):
        """The bit each action's stone lands on (for legal actions), for uint64 arrays that broadcast."""
        if self.gravity:
            # Adding the column's bottom bit carries through the column's stones to its lowest empty cell.
            return (occupied + self.move_array[actions]) & ~occupied
        return self.cell_bits[actions]

    def legal_mask(self, occupied: np.ndarray) -> np.ndarray:
        """Legal actions ``[..., num_actions]`` for occupied-cell bitboards ``[...]``."""
        return (occupied[..., None] & self.guard_array) == 0

    def completing_moves(self, stones: np.ndarray, occupied: np.ndarray) -> np.ndarray:
        """The legal actions ``[..., num_actions]`` whose stone would give ``stones`` a line: a win in one for the
        player who holds them (a cell to block when they are the other player's), for uint64 arrays ``[...]``."""
        landing = self.move_bits(occupied[..., None], np.arange(self.num_actions))
        # The legal mask matters: a full column's carry lands on its sentinel, which can extend a run upwards.
        return self.has_line(stones[..., None] | landing) & self.legal_mask(occupied)

    def tactic_moves(self, own: np.ndarray, opp: np.ndarray) -> np.ndarray:
        """The plain tactic of each position ``[...]`` for the player holding ``own``, as actions ``[..., num_actions]``:
        its winning moves where it can complete a line, else the one cell where ``opp`` could (none where there
        are two or more: every move loses then)."""
        occupied = own | opp
        wins, threats = self.completing_moves(own, occupied), self.completing_moves(opp, occupied)
        can_win = np.any(wins, axis=-1)
        single_block = ~can_win & (threats.sum(axis=-1) == 1)
        return np.where(can_win[..., None], wins, threats & single_block[..., None])

    # -- observation planes --------------------------------------------------------------------

    def planes(self, stones: np.ndarray) -> np.ndarray:
        """Bitboards ``[...]`` as float32 planes ``[..., rows, cols]`` (1 where a stone is)."""
        cells = (stones[..., None] >> self.cell_bit_index) & np.uint64(1)
        return cells.astype(np.float32).reshape(stones.shape + (self.rows, self.cols))

    def stones_from_plane(self, plane: np.ndarray) -> np.ndarray:
        """Planes ``[..., rows, cols]`` (stones where > 0.5) as bitboards ``[...]``."""
        cells = plane.reshape(plane.shape[:-2] + (self.num_cells,)) > 0.5
        return np.where(cells, self.cell_bits, np.uint64(0)).sum(axis=-1, dtype=np.uint64)

    def cell_of_bits(self, bits: np.ndarray) -> np.ndarray:
        """The cell index of single-bit boards ``[...]`` (0 where the bit is on no cell)."""
        return (bits[..., None] == self.cell_bits).argmax(axis=-1)

    # -- plain Python, for search --------------------------------------------------------------

    def legal_actions(self, occupied: int) -> list:
        guard = self.guard_table
        return [a for a in range(self.num_actions) if not occupied & guard[a]]

    def _count_lines_through_cells(self) -> np.ndarray:
        """How many winning lines pass through each cell ``[rows, cols]``: the classic positional
        value of a cell (the centre of tic-tac-toe: 4; a corner: 3; an edge: 2)."""
        counts = np.zeros((self.rows, self.cols), np.int64)
        k = self.win_length
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            for r in range(self.rows):
                for c in range(self.cols):
                    end_r, end_c = r + (k - 1) * dr, c + (k - 1) * dc
                    if 0 <= end_r < self.rows and 0 <= end_c < self.cols:
                        for i in range(k):
                            counts[r + i * dr, c + i * dc] += 1
        return counts

    def render(self, stones_0: int, stones_1: int, marks: str = 'XO') -> str:
        """The board as text, top row first ('.' for empty)."""
        lines = []
        for r in range(self.rows):
            row = ''
            for c in range(self.cols):
                bit = 1 << int(self.cell_bit_index[r * self.cols + c])
                row += marks[0] if int(stones_0) & bit else marks[1] if int(stones_1) & bit else '.'
            lines.append(row)
        return '\n'.join(lines)
