"""Tic-tac-toe and connect four as natively vectorised, turn-based battle envs.

Both are k-in-a-row games on bitboards (:mod:`.bitboard`): seat 0 moves first, the seats
alternate, a line of ``win_length`` wins (+1 to the winner, -1 to the loser), a full board is a
draw (0), and no game is ever truncated. Rewards come only on the final move.

An observation, from the seat's own perspective, is ``[3, rows, cols]`` float32: the seat's own
stones, the opponent's stones, and a plane of ones when the seat is to move (zeros otherwise).
Actions: a cell ``r * cols + c`` (row 0 at the top) in tic-tac-toe, a column in connect four.
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
from gymnasium import spaces

from sparring.config.schema import ConfigError, in_range
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.search_acting import SearchActing
from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.battle_api import BATTLE_ENV_CONSTRAINTS, NativeVecBattleEnv

# obs[:, seat, :2] = stones[:, PLANE_SEATS[seat]]: own stones first, then the opponent's.
_PLANE_SEATS = np.array([[0, 1], [1, 0]])


class LineGameEnv(NativeVecBattleEnv):
    """A k-in-a-row board game; subclasses fix the rules' kind (``gravity``) and default board."""

    turn_based = True
    gravity = False
    default_board = dict(rows=3, cols=3, win_length=3)

    @classmethod
    def default_config(cls) -> dict:
        return dict(super().default_config(), **cls.default_board)

    config_constraints = dict(BATTLE_ENV_CONSTRAINTS, rows=in_range(1, 63), cols=in_range(1, 32),
                              win_length=in_range(2, None))

    @classmethod
    def validate_config(cls, section: dict) -> None:
        try:
            BoardGeometry(section['rows'], section['cols'], section['win_length'], cls.gravity)
        except ValueError as err:
            raise ConfigError(f'config keys "env.rows", "env.cols", "env.win_length": {err}') from None

    @classmethod
    def search_acting(cls, env_cfg: Mapping, search_cfg: dict, seed: int = 0) -> SearchActing:
        """Expert iteration's acting over this game's rules (``battle.collect_search``)."""
        geometry = BoardGeometry(env_cfg['rows'], env_cfg['cols'], env_cfg['win_length'], cls.gravity)
        return SearchActing(search_cfg, geometry, seed)

    def __init__(self, cfg: Optional[Mapping], num_envs: int, seed: Optional[int] = None) -> None:
        super().__init__(cfg, num_envs, seed)
        self.geometry = BoardGeometry(self.cfg.rows, self.cfg.cols, self.cfg.win_length, self.gravity)
        g = self.geometry
        self.observation_space = spaces.Box(0.0, 1.0, (3, g.rows, g.cols), np.float32)
        self.action_space = spaces.Discrete(g.num_actions)
        self.stones = np.zeros((self.num_envs, 2), np.uint64)  # one bitboard per seat
        self.mover = np.zeros(self.num_envs, np.int64)  # the seat to move

    def _reset_games(self, rows: np.ndarray) -> None:
        self.stones[rows] = 0
        self.mover[rows] = 0

    def _advance(self, actions: np.ndarray):
        games, mover, g = self._all_games, self.mover, self.geometry
        occupied = self.stones[:, 0] | self.stones[:, 1]
        placed = g.move_bits(occupied, actions[games, mover])
        own = self.stones[games, mover] | placed
        self.stones[games, mover] = own
        won = g.has_line(own)
        terminated = won | ((occupied | placed) == g.full_board)
        result = np.zeros((self.num_envs, 2), np.int8)
        result[games, mover] = won
        result[games, 1 - mover] = -result[games, mover]
        self.mover = 1 - mover  # finished games are reset to seat 0 right after
        return result.astype(np.float32), terminated, np.zeros(self.num_envs, bool), result

    def _observe(self, rows: np.ndarray):
        g = self.geometry
        stones = self.stones[rows]
        n = len(stones)
        to_move = np.zeros((n, 2), bool)
        to_move[np.arange(n), self.mover[rows]] = True
        obs = np.empty((n, 2, 3, g.rows, g.cols), np.float32)
        obs[:, :, :2] = g.planes(stones)[:, _PLANE_SEATS]
        obs[:, :, 2] = to_move[:, :, None, None]
        mask = g.legal_mask(stones[:, 0] | stones[:, 1])[:, None, :] & to_move[:, :, None]
        return obs, mask, to_move

    def render(self, index: int = 0) -> str:
        """Game ``index`` as text: X for seat 0, O for seat 1, and who is to move."""
        board = self.geometry.render(self.stones[index, 0], self.stones[index, 1])
        return f'{board}\n{"XO"[self.mover[index]]} ({self.agents[self.mover[index]]}) to move'


@ENV_REGISTRY.register('tictactoe')
class TicTacToeEnv(LineGameEnv):
    """Tic-tac-toe on 3x3 (``rows``, ``cols``, ``win_length`` configurable); actions are cells."""

    gravity = False
    default_board = dict(rows=3, cols=3, win_length=3)
    reference_bots = ('random', 'tictactoe_heuristic', 'tictactoe_mcts')


@ENV_REGISTRY.register('connect_four')
class ConnectFourEnv(LineGameEnv):
    """Connect four on 6x7 (``rows``, ``cols``, ``win_length`` configurable); actions are columns."""

    gravity = True
    default_board = dict(rows=6, cols=7, win_length=4)
    reference_bots = ('random', 'connect_four_heuristic', 'connect_four_mcts')
