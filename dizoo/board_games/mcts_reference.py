"""The sequential UCT search: one game at a time, on Python-int bitboards, with a move-by-move
random rollout.

It was the board-game MCTS bots' only search before :mod:`.mcts`; now they use it for batches
too small to repay the lockstep search's fixed cost per simulation. It is also the readable
statement of the algorithm and the baseline the lockstep search is measured against
(``benchmarks/bots_speed.py``): same UCB1, same uniformly random expansion and rollouts, same
most-visited choice.
"""
from __future__ import annotations

import math
import random

import numpy as np

from sparring.dizoo.board_games.bitboard import BoardGeometry


class SequentialUCT:
    """UCT with random rollouts, one search per game; the interface of :class:`.mcts.LockstepUCT`."""

    def __init__(self, geometry: BoardGeometry, num_simulations: int, exploration: float,
                 rng: np.random.Generator) -> None:
        self.geometry, self.num_simulations, self.exploration, self.rng = geometry, num_simulations, exploration, rng

    def search(self, own: np.ndarray, opp: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """The most visited root action of each position (``own`` to move; uint64 ``[n]``, legal ``[n, A]``)."""
        actions = np.empty(len(own), np.int64)
        for i in range(len(own)):
            # Python's generator is several times cheaper per draw than numpy's in the rollouts;
            # seeding it from the bot's generator keeps the bot reproducible.
            rnd = random.Random(int(self.rng.integers(2 ** 63))).random
            actions[i] = self.search_one(int(own[i]), int(opp[i]), np.flatnonzero(legal[i]).tolist(), rnd)
        return actions

    def search_one(self, own: int, opp: int, legal: list, rnd) -> int:
        """The most visited root action after ``num_simulations`` UCT simulations (``own`` to move)."""
        if len(legal) == 1:
            return legal[0]
        root = _Node(list(legal), None)
        for _ in range(self.num_simulations):
            self._simulate(root, own, opp, rnd)
        most = max(child.visits for child in root.children.values())
        best = [a for a, child in root.children.items() if child.visits == most]
        return best[int(rnd() * len(best))]

    def _simulate(self, root: '_Node', mover: int, other: int, rnd) -> None:
        """One selection-expansion-rollout-backup pass; ``mover`` is the player to move at ``root``."""
        g, c = self.geometry, self.exploration
        node, path = root, [root]
        while not node.untried and node.outcome is None:  # fully expanded: descend by UCB1
            log_visits = math.log(node.visits)
            best_score, best_action, best_child = -math.inf, None, None
            for action, child in node.children.items():
                score = child.value / child.visits + c * math.sqrt(log_visits / child.visits)
                if score > best_score:
                    best_score, best_action, best_child = score, action, child
            assert best_child is not None and best_action is not None  # a fully expanded node has children
            mover, other = other, mover | self._landing(mover | other, best_action)
            node = best_child
            path.append(node)
        if node.outcome is None:  # expand one untried action
            action = node.untried.pop(int(rnd() * len(node.untried)))
            placed = mover | self._landing(mover | other, action)
            if g.has_line(placed):
                outcome = 1.0
            elif (placed | other) == g.full_board:
                outcome = 0.0
            else:
                outcome = None
            child = _Node([] if outcome is not None else g.legal_actions(placed | other), outcome)
            node.children[action] = child
            path.append(child)
            node, mover, other = child, other, placed
        # ``value`` is from the view of the player who moved into the node; a rollout's result is
        # from the view of the player to move there, the opposite side.
        value = node.outcome if node.outcome is not None else -self._rollout(mover, other, rnd)
        for visited in reversed(path):
            visited.visits += 1
            visited.value += value
            value = -value

    def _landing(self, occupied: int, action: int) -> int:
        bit = self.geometry.move_table[action]
        return (occupied + bit) & ~occupied if self.geometry.gravity else bit

    def _rollout(self, mover: int, other: int, rnd) -> float:
        """Random play to the end: +1 if ``mover`` (to move now) wins, -1 if it loses, 0 for a draw."""
        g = self.geometry
        full, guard, move, has_line, gravity = g.full_board, g.guard_table, g.move_table, g.has_line, g.gravity
        actions = range(g.num_actions)
        sign = 1.0
        while True:
            occupied = mover | other
            if occupied == full:
                return 0.0
            legal = [a for a in actions if not occupied & guard[a]]
            bit = move[legal[int(rnd() * len(legal))]]
            mover |= (occupied + bit) & ~occupied if gravity else bit
            if has_line(mover):
                return sign
            mover, other, sign = other, mover, -sign


class _Node:
    """A search-tree node: the position after a move, valued from the view of the player who made it."""
    __slots__ = ('untried', 'outcome', 'children', 'visits', 'value')

    def __init__(self, untried: list, outcome) -> None:
        self.untried = untried  # legal actions not expanded yet
        self.outcome = outcome  # 1.0 won by the move, 0.0 a draw, None the game goes on
        self.children: dict = {}
        self.visits = 0
        self.value = 0.0
