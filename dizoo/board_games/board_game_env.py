"""Tic-tac-toe and connect four as natively vectorised, turn-based battle envs.

Both are k-in-a-row games on bitboards (:mod:`.bitboard`): seat 0 moves first, the seats
alternate, a line of ``win_length`` wins (+1 to the winner, -1 to the loser), a full board is a
draw (0), and no game is ever truncated. Rewards come only on the final move.

An observation, from the seat's own perspective, is ``[3, rows, cols]`` float32: the seat's own
stones, the opponent's stones, and a plane of ones when the seat is to move (zeros otherwise).
Actions: a cell ``r * cols + c`` (row 0 at the top) in tic-tac-toe, a column in connect four.

With ``random_opening_plies = [lo, hi]`` a training game starts after k uniformly random plies, k drawn
per game from lo..hi by the env's own seeded generator: self-play then also meets positions its own
games never lead to. The random plies never finish a game (a move that would complete a line is not
drawn), so every start has a move to make; seat k % 2 moves first. With ``tactical_openings`` = p, a share p
of the training games have their opening drawn again until the player to move can win at once or has exactly
one cell to block (:meth:`~.bitboard.BoardGeometry.tactic_moves`): a self-playing network then meets many more
of the plain tactics that random play's positions are full of and its own games rarely leave on the board.
Evaluation envs (:meth:`LineGameEnv.evaluator_config`) always start from the empty board.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np
from gymnasium import spaces

from sparring.config.schema import ConfigError, described, in_range
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.search_acting import SearchActing
from sparring.config.registry import ENV_REGISTRY
from sparring.policy.bot import choose_best
from sparring.worker.env.battle_api import BATTLE_ENV_CONSTRAINTS, NativeVecBattleEnv

# obs[:, seat, :2] = stones[:, PLANE_SEATS[seat]]: own stones first, then the opponent's.
_PLANE_SEATS = np.array([[0, 1], [1, 0]])
# A tactical opening is drawn at most this many times; a game still without a tactic keeps its last one. Of
# connect four's openings of 0-30 plies about half leave one, so nearly every game finds one well within it.
TACTIC_DRAWS = 16


def ply_range():
    """A constraint: None, or ``[lo, hi]`` ints with 0 <= lo <= hi (plies of a random opening)."""
    def check(value: Any) -> None:
        if value is None:
            return
        ints = isinstance(value, (list, tuple)) and len(value) == 2 and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)
        if not ints or not 0 <= value[0] <= value[1]:
            raise ConfigError(f'expected None or [lo, hi] of ints with 0 <= lo <= hi, got {value!r}')

    return described(check, 'None or [lo, hi] of ints with 0 <= lo <= hi', allow_none=True)


class LineGameEnv(NativeVecBattleEnv):
    """A k-in-a-row board game; subclasses fix the rules' kind (``gravity``) and default board."""

    turn_based = True
    gravity = False
    default_board = dict(rows=3, cols=3, win_length=3)

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            super().default_config(),
            rows=cls.default_board['rows'],  # rows of the board
            cols=cls.default_board['cols'],  # columns of the board
            win_length=cls.default_board['win_length'],  # stones in a row (across, down or diagonal) that win
            random_opening_plies=None,  # [lo, hi]: a training game starts after k random plies, k drawn per game from lo..hi; None: from the empty board
            tactical_openings=0.0,  # the share of training games whose random opening is drawn again until the player to move has a win in one or one cell to block
        )

    config_constraints = dict(BATTLE_ENV_CONSTRAINTS, rows=in_range(1, 63), cols=in_range(1, 32),
                              win_length=in_range(2, None), random_opening_plies=ply_range(),
                              tactical_openings=in_range(0.0, 1.0))

    @classmethod
    def validate_config(cls, section: dict) -> None:
        try:
            geometry = BoardGeometry(section['rows'], section['cols'], section['win_length'], cls.gravity)
        except ValueError as err:
            raise ConfigError(f'config keys "env.rows", "env.cols", "env.win_length": {err}') from None
        plies = section.get('random_opening_plies')
        if plies is not None and plies[1] >= geometry.num_cells:
            # A full board is a finished game: at least one cell must stay empty for the first real move.
            raise ConfigError(f'config key "env.random_opening_plies": {list(plies)} would fill the '
                              f'{geometry.rows}x{geometry.cols} board; expected hi < {geometry.num_cells}')
        if section.get('tactical_openings', 0.0) > 0 and (plies is None or plies[1] == 0):
            raise ConfigError(f'config key "env.tactical_openings": {section["tactical_openings"]} draws random openings '
                              f'again until they leave a tactic, but env.random_opening_plies is {plies!r}; expected '
                              f'[lo, hi] with hi > 0, or tactical_openings 0')

    @classmethod
    def evaluator_config(cls, section: Mapping) -> dict:
        """Evaluation plays whole games from the empty board: no random openings."""
        return {**section, 'random_opening_plies': None, 'tactical_openings': 0.0}

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
        if self.cfg.random_opening_plies is not None:
            self._play_random_openings(rows)
            if self.cfg.tactical_openings > 0:  # no draws otherwise, so runs without it keep their random streams
                self._redraw_until_tactical(rows)

    def _redraw_until_tactical(self, rows: np.ndarray) -> None:
        """A share ``tactical_openings`` of the new games ``rows`` get their opening drawn again (at most
        :data:`TACTIC_DRAWS` times) until the player to move can win at once or has one cell to block."""
        g = self.geometry
        games = rows[self.np_random.random(len(rows)) < self.cfg.tactical_openings]
        for _ in range(TACTIC_DRAWS):
            own, opp = self.stones[games, self.mover[games]], self.stones[games, 1 - self.mover[games]]
            games = games[~g.tactic_moves(own, opp).any(axis=1)]
            if not games.size:
                break
            self.stones[games] = 0
            self.mover[games] = 0
            self._play_random_openings(games)

    def _play_random_openings(self, rows: np.ndarray) -> None:
        """k uniformly random plies in each new game ``rows``, none of them completing a line."""
        g = self.geometry
        lo, hi = self.cfg.random_opening_plies
        plies = self.np_random.integers(lo, hi + 1, size=len(rows))
        for ply in range(hi):
            games = rows[plies > ply]
            if not games.size:
                break
            mover = self.mover[games]
            occupied = self.stones[games, 0] | self.stones[games, 1]
            own = self.stones[games, mover]
            allowed = g.legal_mask(occupied) & ~g.completing_moves(own, occupied)
            # A game whose every legal move would win stops its opening here: its mover then wins at once.
            games, mover, occupied, allowed = (x[allowed.any(axis=1)] for x in (games, mover, occupied, allowed))
            if not games.size:
                continue
            action = choose_best(allowed.astype(np.float64), self.np_random)  # uniform among the allowed moves
            self.stones[games, mover] |= g.move_bits(occupied, action)
            self.mover[games] = 1 - mover

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
