"""Reference bots for tic-tac-toe and connect four: a one-ply heuristic and UCT Monte-Carlo tree search.

Both read the env's own-perspective observation (own stones, opponent stones, to-move plane)
back into bitboards, so they play either seat and any board size the env is configured with; the line
that wins (``win_length``), which an observation does not show, comes from the run's env section or a
bot option.

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
* Perfect (connect four, the ``perfect`` extra: numba): every move's exact score by the solver of
  :mod:`.solver`, the best played; with ``depth`` = N, a graded opponent that searches N plies beyond its
  move and plays the best result it proved there (a result beyond the horizon counts as a draw).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from sparring.config.schema import all_of, in_range, of_type
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.mcts import LockstepUCT
from sparring.dizoo.board_games.mcts_reference import SequentialUCT
from sparring.dizoo.board_games.solver import SearchBudgetExceeded, Solver
from sparring.config.registry import BOT_REGISTRY
from sparring.policy.bot import Bot, choose_best, given_mask


class LineGameBot(Bot):
    """A bot for a k-in-a-row game; the board geometry comes from the spaces and the line length from the
    ``win_length`` option, else the env's ``win_length``, else the game's usual one (``usual_win_length``)."""

    gravity = False
    usual_win_length = 3
    config_constraints = {'win_length': all_of(of_type(int, allow_none=True), in_range(2, None, allow_none=True))}

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            win_length=None,  # stones in a row that win; None: the env's win_length, as the run configured it
        )

    def __init__(self, cfg, observation_space, action_space, seed: int = 0, env=None) -> None:
        super().__init__(cfg, observation_space, action_space, seed, env)
        if self.cfg['win_length'] is None:
            self.cfg['win_length'] = int(self.env_cfg.get('win_length') or self.usual_win_length)
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
        return dict(
            super().default_config(),
            positional=True,  # among the other moves, prefer the cell with the most lines through it (False: at random)
            block=True,  # block the opponent's winning move when there is no win to take
        )

    config_constraints = dict(LineGameBot.config_constraints, positional=of_type(bool),
                              block=of_type(bool))

    def _choose(self, obs: np.ndarray, action_mask: Optional[np.ndarray]) -> np.ndarray:
        action_mask = given_mask(action_mask, self.name)
        g = self.geometry
        own, opp = self._stones(obs)
        occupied = own | opp
        wins = g.completing_moves(own, occupied)  # [N, A]
        blocks = g.completing_moves(opp, occupied) if self.cfg['block'] else 0.0
        if self.cfg['positional']:
            landing = g.move_bits(occupied[:, None], np.arange(g.num_actions)[None, :])
            position = g.cell_line_counts.ravel()[g.cell_of_bits(landing)]
        else:
            position = 0.0
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
        return dict(
            super().default_config(),
            num_simulations=200,  # UCT simulations per move, each ending in a random rollout
            exploration=1.4,  # UCT's exploration constant c in Q + c * sqrt(ln N / n)
        )

    config_constraints = dict(LineGameBot.config_constraints, num_simulations=in_range(1, None),
                              exploration=in_range(0.0, None))

    def __init__(self, cfg, observation_space, action_space, seed: int = 0, env=None) -> None:
        super().__init__(cfg, observation_space, action_space, seed, env)
        search_args = (self.geometry, self.cfg['num_simulations'], self.cfg['exploration'], self.rng)
        self.lockstep_search, self.sequential_search = LockstepUCT(*search_args), SequentialUCT(*search_args)

    def _choose(self, obs: np.ndarray, action_mask: Optional[np.ndarray]) -> np.ndarray:
        action_mask = given_mask(action_mask, self.name)
        own, opp = self._stones(obs)
        search = self.lockstep_search if len(obs) >= self.lockstep_from_batch else self.sequential_search
        return search.search(own, opp, action_mask)


@BOT_REGISTRY.register('tictactoe_heuristic')
class TicTacToeHeuristicBot(LineGameHeuristicBot):
    gravity = False


@BOT_REGISTRY.register('connect_four_heuristic')
class ConnectFourHeuristicBot(LineGameHeuristicBot):
    gravity = True
    usual_win_length = 4


@BOT_REGISTRY.register('tictactoe_mcts')
class TicTacToeMCTSBot(LineGameMCTSBot):
    gravity = False


@BOT_REGISTRY.register('connect_four_mcts')
class ConnectFourMCTSBot(LineGameMCTSBot):
    gravity = True
    usual_win_length = 4


@BOT_REGISTRY.register('connect_four_perfect')
class ConnectFourPerfectBot(LineGameBot):
    """The move with the best exact score (ties at random), or with ``depth`` > 0 the best proved within
    ``depth`` plies; needs numba (``pip install "sparring[perfect]"``).

    Exact play of the first few stones of a game can take minutes (no opening book): ``max_nodes`` caps the
    search of one move, and a move that runs out of it is played by the depth-``fallback_depth`` search.
    """

    gravity = True

    @classmethod
    def default_config(cls) -> dict:
        return dict(super().default_config(), win_length=4,
                    depth=0,  # 0: perfect play; N > 0: search N plies beyond the move, a graded opponent
                    max_nodes=1_000_000,  # nodes the exact scores of one move may take before it falls back (0: no limit)
                    fallback_depth=8,  # the depth of the search that plays a move whose exact search ran out
                    table_bits=23)  # the transposition table: the largest prime below 2**table_bits entries of 5 bytes

    config_constraints = dict(LineGameBot.config_constraints, win_length=in_range(4, 4), depth=in_range(0, None),
                              max_nodes=in_range(0, None), fallback_depth=in_range(0, None),
                              table_bits=in_range(18, 31))

    def __init__(self, cfg, observation_space, action_space, seed: int = 0, env=None) -> None:
        super().__init__(cfg, observation_space, action_space, seed, env)
        cfg = self.cfg
        # The depth-limited search reads no table: the graded bot keeps the smallest one, not 42 MB.
        self.solver = Solver(self.geometry.cols, self.geometry.rows,
                             table_bits=cfg['table_bits'] if cfg['depth'] == 0 else 18, max_nodes=cfg['max_nodes'])
        self.fallbacks = 0  # moves played by the fallback search since the bot was made

    def move_scores(self, own: int, opp: int) -> np.ndarray:
        """The scores the bot chooses by for one position (see :mod:`.solver.solver` for their meaning)."""
        depth = self.cfg['depth']
        if depth > 0:
            return self.solver.limited_scores(own, opp, depth)
        try:
            return self.solver.move_scores(own, opp)
        except SearchBudgetExceeded:
            self.fallbacks += 1
            return self.solver.limited_scores(own, opp, self.cfg['fallback_depth'])

    def _choose(self, obs: np.ndarray, action_mask: Optional[np.ndarray]) -> np.ndarray:
        action_mask = given_mask(action_mask, self.name)
        own, opp = self._stones(obs)
        scores = np.stack([self.move_scores(int(o), int(p)) for o, p in zip(own, opp)]).astype(np.float64)
        return choose_best(np.where(action_mask, scores, -np.inf), self.rng)
