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
  ``num_simulations`` per move; one search tree per game in the batch, a batch searched in
  lockstep with numpy (:mod:`.mcts`, :mod:`.playout`), a few positions one by one
  (:mod:`.mcts_reference`).
"""
from __future__ import annotations

import numpy as np

from sparring.config.schema import in_range, of_type
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.mcts import LockstepUCT
from sparring.dizoo.board_games.mcts_reference import SequentialUCT
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
    """UCT with random rollouts, one search tree per game of the batch.

    A batch of at least ``lockstep_from_batch`` positions is searched in lockstep
    (:class:`.mcts.LockstepUCT`); fewer, one after another (:class:`.mcts_reference.SequentialUCT`).
    Both run the same algorithm; the lockstep search pays a fixed numpy cost per simulation that
    only a batch repays (measured on connect four, benchmarks/bots_speed.py's positions: it is
    slower for 1-6 positions, up to 9x faster for 50).
    """

    lockstep_from_batch = 8

    @classmethod
    def default_config(cls) -> dict:
        return dict(super().default_config(), num_simulations=200, exploration=1.4)

    config_constraints = dict(LineGameBot.config_constraints, num_simulations=in_range(1, None),
                              exploration=in_range(0.0, None))

    def __init__(self, cfg, observation_space, action_space, seed: int = 0) -> None:
        super().__init__(cfg, observation_space, action_space, seed)
        search_args = (self.geometry, self.cfg['num_simulations'], self.cfg['exploration'], self.rng)
        self.lockstep_search, self.sequential_search = LockstepUCT(*search_args), SequentialUCT(*search_args)

    def _choose(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        own, opp = self._stones(obs)
        search = self.lockstep_search if len(obs) >= self.lockstep_from_batch else self.sequential_search
        return search.search(own, opp, action_mask)


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
