"""The connect-four solver's compiled core (numba): negamax with alpha-beta over bitboards.

The approach of Pascal Pons' solver write-up ("Solving Connect 4: how to build a perfect AI"), in our own
code: a position is the bitboard of the player to move (``cur``) and of every stone (``mask``), in
:class:`~sparring.dizoo.board_games.bitboard.BoardGeometry`'s layout (``height + 1`` bits per column,
bottom row lowest, a sentinel on top). The search

* never plays a move that lets the opponent win at once (it blocks a single threat, and gives the game
  up against two; it never plays under a cell that completes the opponent's line),
* narrows its window to the scores still reachable, reads and writes a transposition table of lower and
  upper bounds, and tries moves that make the most threats first, centre columns first among equals,
* finds a position's exact score by null-window searches that bisect the score range (:func:`solve`).

Scores: 0 for a draw; a win with the winner's k-th stone scores ``(width * height + 1) // 2 + 1 - k``,
positive when the side to move wins, negative when it loses: the faster the win, the larger.

Every kernel takes the board's shape (``width``, ``height``, ``bottom``: the bottom cell of each column,
``board``: every cell) as arguments, so tests can compare small boards against brute force. A table entry
stores the key modulo 2**32 at index key modulo a prime over 2**17: two positions whose keys are below
2**49 (7x6) cannot share both, so an entry is never misread.
"""
from __future__ import annotations

import numpy as np
from numba import njit

ONE = np.uint64(1)
TWO = np.uint64(2)
THREE = np.uint64(3)
LOW_32 = np.uint64(0xFFFFFFFF)


@njit(cache=True)
def popcount(bits):
    bits = bits - ((bits >> ONE) & np.uint64(0x5555555555555555))
    bits = (bits & np.uint64(0x3333333333333333)) + ((bits >> TWO) & np.uint64(0x3333333333333333))
    bits = (bits + (bits >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (bits * np.uint64(0x0101010101010101)) >> np.uint64(56)


@njit(cache=True)
def winning_cells(stones, mask, height, board):
    """The empty cells (playable now or not) that would complete a line of four of ``stones``."""
    # Up a column: three stones below the cell.
    found = (stones << ONE) & (stones << TWO) & (stones << THREE)
    # Along a row and both diagonals: neighbours are ``step`` bits apart; the cell may sit at either end
    # of the line or in one of its two middle places.
    for step_int in (height + 1, height, height + 2):
        step = np.uint64(step_int)
        pair = (stones << step) & (stones << (TWO * step))
        found |= pair & (stones << (THREE * step))
        found |= pair & (stones >> step)
        pair = (stones >> step) & (stones >> (TWO * step))
        found |= pair & (stones << step)
        found |= pair & (stones >> (THREE * step))
    return found & (board ^ mask)


@njit(cache=True)
def can_win_now(cur, mask, height, bottom, board):
    return (winning_cells(cur, mask, height, board) & ((mask + bottom) & board)) != 0


@njit(cache=True)
def safe_moves(cur, mask, height, bottom, board):
    """The moves (landing cells) that do not lose at once: 0 when every move does."""
    possible = (mask + bottom) & board
    threats = winning_cells(cur ^ mask, mask, height, board)
    forced = possible & threats
    if forced != 0:
        if forced & (forced - ONE) != 0:  # two cells to block: the opponent wins either way
            return np.uint64(0)
        possible = forced
    return possible & ~(threats >> ONE)  # never under a cell that completes the opponent's line


@njit(cache=True)
def _order_moves(cur, mask, moves_bits, width, height, board, order, slot_moves, slot_scores):
    """Fill the slots with the moves of ``moves_bits``, most threats made first (centre first among equals);
    returns how many."""
    column_cells = (ONE << np.uint64(height)) - ONE
    count = 0
    for i in range(width):
        move = moves_bits & (column_cells << np.uint64(order[i] * (height + 1)))
        if move == 0:
            continue
        score = popcount(winning_cells(cur | move, mask | move, height, board))
        j = count
        while j > 0 and slot_scores[j - 1] < score:  # insertion: earlier (more central) columns stay first
            slot_moves[j] = slot_moves[j - 1]
            slot_scores[j] = slot_scores[j - 1]
            j -= 1
        slot_moves[j] = move
        slot_scores[j] = score
        count += 1
    return count


@njit(cache=True)
def negamax(cur, mask, played, alpha, beta, width, height, bottom, board, order, keys, values, slots_m, slots_s,
            stats, budget):
    """The score of a position whose player to move cannot win at once, within [alpha, beta]: exact inside the
    window, a bound at or beyond its edges. ``stats``: [nodes searched, 1 if ``budget`` nodes ran out]."""
    stats[0] += 1
    if budget > 0 and stats[0] > budget:
        stats[1] = 1
    if stats[1] != 0:
        return 0
    size = width * height
    candidates = safe_moves(cur, mask, height, bottom, board)
    if candidates == 0:
        return -((size - played) // 2)  # the opponent wins with its next stone
    if played >= size - 2:
        return 0  # neither side can still complete a line
    lowest = -((size - 2 - played) // 2)  # the opponent cannot win before its stone after next
    if alpha < lowest:
        alpha = lowest
        if alpha >= beta:
            return alpha
    highest = (size - 1 - played) // 2  # no win now, so at best with the stone after next
    min_score, max_score = -(size // 2) + 3, (size + 1) // 2 - 3
    key = cur + mask
    index = key % np.uint64(len(keys))
    if keys[index] == np.uint32(key & LOW_32) and values[index] != 0:
        stored = np.int64(values[index])
        if stored > max_score - min_score + 1:  # a lower bound
            bound = stored + 2 * min_score - max_score - 2
            if alpha < bound:
                alpha = bound
                if alpha >= beta:
                    return alpha
        else:
            highest = stored + min_score - 1
    if beta > highest:
        beta = highest
        if alpha >= beta:
            return beta
    slot_moves, slot_scores = slots_m[played], slots_s[played]
    count = _order_moves(cur, mask, candidates, width, height, board, order, slot_moves, slot_scores)
    for i in range(count):
        move = slot_moves[i]
        score = -negamax(cur ^ mask, mask | move, played + 1, -beta, -alpha, width, height, bottom, board, order,
                         keys, values, slots_m, slots_s, stats, budget)
        if stats[1] != 0:
            return 0
        if score >= beta:
            keys[index] = np.uint32(key & LOW_32)
            values[index] = np.int8(score + max_score - 2 * min_score + 2)
            return score
        if score > alpha:
            alpha = score
    keys[index] = np.uint32(key & LOW_32)
    values[index] = np.int8(alpha - min_score + 1)
    return alpha


@njit(cache=True)
def solve(cur, mask, played, width, height, bottom, board, order, keys, values, slots_m, slots_s, stats, budget):
    """The exact score of a position (the game not over), by null-window searches that bisect the score range."""
    size = width * height
    if can_win_now(cur, mask, height, bottom, board):
        return (size + 1 - played) // 2
    low, high = -((size - played) // 2), (size + 1 - played) // 2
    while low < high:
        probe = low + (high - low) // 2
        # Probe nearer zero first: most positions are decided, or drawn, by a small margin.
        half_low, half_high = -((-low) // 2) if low < 0 else low // 2, high // 2
        if probe <= 0 and half_low < probe:
            probe = half_low
        elif probe >= 0 and half_high > probe:
            probe = half_high
        found = negamax(cur, mask, played, probe, probe + 1, width, height, bottom, board, order, keys, values,
                        slots_m, slots_s, stats, budget)
        if stats[1] != 0:
            return 0
        if found <= probe:
            high = found
        else:
            low = found
    return low


@njit(cache=True)
def limited(cur, mask, played, depth, alpha, beta, width, height, bottom, board, order, slots_m, slots_s, stats):
    """Like :func:`negamax` to ``depth`` plies and without the table; a position still open there scores 0,
    so a nonzero score is a result proved within the horizon."""
    stats[0] += 1
    size = width * height
    if can_win_now(cur, mask, height, bottom, board):
        return (size + 1 - played) // 2
    candidates = safe_moves(cur, mask, height, bottom, board)
    if candidates == 0:
        return -((size - played) // 2)
    if played >= size - 2 or depth <= 0:
        return 0
    slot_moves, slot_scores = slots_m[played], slots_s[played]
    count = _order_moves(cur, mask, candidates, width, height, board, order, slot_moves, slot_scores)
    best = -size
    for i in range(count):
        score = -limited(cur ^ mask, mask | slot_moves[i], played + 1, depth - 1, -beta, -alpha, width, height,
                         bottom, board, order, slots_m, slots_s, stats)
        if score > best:
            best = score
            if score > alpha:
                alpha = score
                if alpha >= beta:
                    break
    return best
