"""Reference bots for tic-tac-toe and connect four: a one-ply heuristic and UCT Monte-Carlo tree search.

Both read the env's own-perspective observation (own stones, opponent stones, to-move plane)
back into bitboards, so they play either seat and any board size the env is configured with
(``win_length`` is a bot option, since an observation does not show it).

* Heuristic (vectorised over the batch): win now if possible, else block the opponent's
  immediate win, else prefer the cell with most winning lines through it (the centre); seeded
  random tie-breaks. Options turn parts off, for sparring partners of graded strength: with
  ``positional=false`` it plays uniformly at random whenever neither a win nor a block is on (a
  varied partner, where the positional bot repeats the same few games and a learner can beat it
  with one memorised trap); adding ``block=false`` leaves a random player that takes every
  immediate win, so it reaches the positions random play reaches and punishes each missed block.
* MCTS: UCT (UCB1 selection, exploration ``exploration``) with uniformly random rollouts,
  ``num_simulations`` per move, on Python-int bitboards; one search per game in the batch.
"""
from __future__ import annotations

import math
import random

import numpy as np

from sparring.config.schema import in_range, of_type
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.config.registry import BOT_REGISTRY
from sparring.policy.bot import Bot, choose_best


class LineGameBot(Bot):
    """A bot for a k-in-a-row game; the board geometry comes from the spaces and ``win_length``."""

    gravity = False
    config_constraints = {'win_length': in_range(2, None)}

    @classmethod
    def default_config(cls) -> dict:
        return dict(win_length=3)

    def __init__(self, cfg, observation_space, action_space, seed: int = 0) -> None:
        super().__init__(cfg, observation_space, action_space, seed)
        if len(self.obs_shape) != 3 or self.obs_shape[0] != 3:
            raise ValueError(f'bot {self.name!r}: observation shape {self.obs_shape}; expected (3, rows, cols) '
                             f'planes of a board game')
        _, rows, cols = self.obs_shape
        self.geometry = BoardGeometry(rows, cols, self.cfg['win_length'], self.gravity)
        if self.geometry.num_actions != self.num_actions:
            raise ValueError(f'bot {self.name!r}: {self.num_actions} actions for a {rows}x{cols} board; expected '
                             f'{self.geometry.num_actions} ({"columns" if self.gravity else "cells"})')

    def _stones(self, obs: np.ndarray):
        """(own, opponent) bitboards of the batch."""
        return self.geometry.stones_from_plane(obs[:, 0]), self.geometry.stones_from_plane(obs[:, 1])


class LineGameHeuristicBot(LineGameBot):
    """Win now, else block (if ``block``), else the cell with most lines through it (if ``positional``)."""

    # Priorities are far apart so that a lower one can never outweigh a higher one.
    WIN, BLOCK = 1e6, 1e3

    @classmethod
    def default_config(cls) -> dict:
        return dict(super().default_config(), positional=True, block=True)

    config_constraints = dict(LineGameBot.config_constraints, positional=of_type(bool),
                              block=of_type(bool))

    def _choose(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        g = self.geometry
        own, opp = self._stones(obs)
        occupied = own | opp
        landing = g.move_bits(occupied[:, None], np.arange(g.num_actions)[None, :])  # [N, A]
        wins = g.has_line(own[:, None] | landing)
        blocks = g.has_line(opp[:, None] | landing) if self.cfg['block'] else 0.0
        position = g.cell_line_counts.ravel()[g.cell_of_bits(landing)] if self.cfg['positional'] else 0.0
        scores = self.WIN * wins + self.BLOCK * blocks + position
        return choose_best(np.where(action_mask, scores, -np.inf), self.rng)


class LineGameMCTSBot(LineGameBot):
    """UCT with random rollouts, one search per game of the batch."""

    @classmethod
    def default_config(cls) -> dict:
        return dict(super().default_config(), num_simulations=200, exploration=1.4)

    config_constraints = dict(LineGameBot.config_constraints, num_simulations=in_range(1, None),
                              exploration=in_range(0.0, None))

    def _choose(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        own, opp = self._stones(obs)
        actions = np.empty(len(obs), np.int64)
        for i in range(len(obs)):
            # Python's generator is several times cheaper per draw than numpy's in the rollouts;
            # seeding it from the bot's generator keeps the bot reproducible.
            rnd = random.Random(int(self.rng.integers(2 ** 63))).random
            actions[i] = self.search(int(own[i]), int(opp[i]), np.flatnonzero(action_mask[i]).tolist(), rnd)
        return actions

    def search(self, own: int, opp: int, legal: list, rnd) -> int:
        """The most visited root action after ``num_simulations`` UCT simulations (``own`` to move)."""
        if len(legal) == 1:
            return legal[0]
        root = _Node(list(legal), None)
        for _ in range(self.cfg['num_simulations']):
            self._simulate(root, own, opp, rnd)
        most = max(child.visits for child in root.children.values())
        best = [a for a, child in root.children.items() if child.visits == most]
        return best[int(rnd() * len(best))]

    def _simulate(self, root: '_Node', mover: int, other: int, rnd) -> None:
        """One selection-expansion-rollout-backup pass; ``mover`` is the player to move at ``root``."""
        g, c = self.geometry, self.cfg['exploration']
        node, path = root, [root]
        while not node.untried and node.outcome is None:  # fully expanded: descend by UCB1
            log_visits = math.log(node.visits)
            best_score, best_action, best_child = -math.inf, None, None
            for action, child in node.children.items():
                score = child.value / child.visits + c * math.sqrt(log_visits / child.visits)
                if score > best_score:
                    best_score, best_action, best_child = score, action, child
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
        return (occupied + bit) & ~occupied if self.gravity else bit

    def _rollout(self, mover: int, other: int, rnd) -> float:
        """Random play to the end: +1 if ``mover`` (to move now) wins, -1 if it loses, 0 for a draw."""
        g = self.geometry
        full, guard, move, has_line, gravity = g.full_board, g.guard_table, g.move_table, g.has_line, self.gravity
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


@BOT_REGISTRY.register('tictactoe_heuristic')
class TicTacToeHeuristicBot(LineGameHeuristicBot):
    gravity = False


@BOT_REGISTRY.register('connect_four_heuristic')
class ConnectFourHeuristicBot(LineGameHeuristicBot):
    gravity = True

    @classmethod
    def default_config(cls) -> dict:
        return dict(super().default_config(), win_length=4)


@BOT_REGISTRY.register('tictactoe_mcts')
class TicTacToeMCTSBot(LineGameMCTSBot):
    gravity = False


@BOT_REGISTRY.register('connect_four_mcts')
class ConnectFourMCTSBot(LineGameMCTSBot):
    gravity = True

    @classmethod
    def default_config(cls) -> dict:
        return dict(super().default_config(), win_length=4)
