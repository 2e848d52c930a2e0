"""Text boards for PettingZoo's classic board games, whose own ``render()`` draws only pictures.

Connect four, tic-tac-toe and go observe the board as planes ``[rows, cols, k]``: plane 0 the
observing agent's stones, plane 1 the other agent's. Seen by the first agent, that is the whole
position, drawn here as text (X: the first agent, O: the second) with how moves are numbered, so
``sparring play`` can show it.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np


def board_from_planes(planes, num_actions: int, agents: Sequence[str], mover: Optional[str]) -> Optional[str]:
    """The board of ``planes`` (observed by ``agents[0]``) as text, or None when they are not a board whose
    cells or columns are the actions."""
    planes = np.asarray(planes)
    if planes.ndim != 3 or planes.shape[2] < 2:
        return None
    rows, cols = planes.shape[:2]
    cells = rows * cols
    if num_actions == cols:
        moves = ''.join(str(c % 10) for c in range(cols)) + '   (moves: column numbers)'
    elif num_actions in (cells, cells + 1):
        moves = f'(moves: cells numbered row by row, 0 at the top left to {cells - 1}'
        moves += f'; {cells}: pass)' if num_actions == cells + 1 else ')'
    else:
        return None
    board = [''.join('X' if planes[r, c, 0] else 'O' if planes[r, c, 1] else '.' for c in range(cols))
             for r in range(rows)]
    playing = mover is not None and mover in agents
    turn = f'{"XO"[list(agents).index(mover)]} ({mover}) to move' if mover is not None and playing else 'game over'
    return '\n'.join(board + [moves, f'X: {agents[0]}, O: {agents[1]}; {turn}'])
