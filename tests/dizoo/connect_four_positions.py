"""Connect-four positions for tests: from a string of columns, and as the player to move sees them."""
import numpy as np

from sparring.dizoo.board_games.bitboard import BoardGeometry

C4 = BoardGeometry(6, 7, 4, gravity=True)


def after(moves: str):
    """``(own, opp)`` after 1-based columns from the empty board (the player to move's stones first)."""
    own, opp = 0, 0
    for char in moves:
        occupied = own | opp
        own, opp = opp, own | ((occupied + C4.move_table[int(char) - 1]) & ~occupied)
    return own, opp


def seat_view(positions):
    """Observations and masks of the player to move for positions ``(own, opp)``, as the env shows them."""
    stones = np.array(positions, np.uint64).reshape(-1, 2)
    obs = np.zeros((len(stones), 3, C4.rows, C4.cols), np.float32)
    obs[:, :2], obs[:, 2] = C4.planes(stones), 1.0
    return obs, C4.legal_mask(stones[:, 0] | stones[:, 1])
