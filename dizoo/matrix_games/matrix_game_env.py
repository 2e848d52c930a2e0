"""One-shot two-player matrix games as natively vectorised battle envs: each episode is one
simultaneous move.

The observation is the one-hot of the player's own seat (so one policy can learn a different
strategy per seat). ``payoffs[seat, own_action, opponent_action]`` is the seat's reward;
``result`` compares the two seats' payoffs (higher wins, equal draws). Each class exposes its
``payoffs`` and known Nash equilibrium ``nash[seat]`` (mixed strategies) so a benchmark can
measure how far a learned strategy is from it.

Registered games:

* ``'zero_sum_2x2'``: seat 0 (rows) receives ``M = [[3, -2], [-2, 1]]``, seat 1 receives ``-M``.
  ``M`` has no saddle point (maximin -2 < minimax 1); the unique equilibrium has both seats play
  (3/8, 5/8): row indifference 3p - 2(1-p) = -2p + (1-p) gives p = 3/8, and as ``M`` is symmetric
  the column player's condition is the same. The game's value for seat 0 is (3*1 - (-2)(-2)) /
  (3 + 1 + 2 + 2) = -1/8.
* ``'prisoners_dilemma'``: actions (cooperate, defect), payoffs R=3, S=0, T=5, P=1 for both
  seats; general-sum; the unique equilibrium is mutual defection (dominant strategy).
* ``'rock_paper_scissors'``: +1 / 0 / -1; the unique equilibrium is uniform, value 0.
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
from gymnasium import spaces

from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.battle_api import NativeVecBattleEnv


def zero_sum_payoffs(row_payoff) -> np.ndarray:
    """``payoffs[seat, own, opponent]`` of the zero-sum game where seat 0 (rows) receives ``row_payoff``."""
    m = np.asarray(row_payoff, np.float32)
    return np.stack([m, -m.T])


def symmetric_payoffs(own_payoff) -> np.ndarray:
    """``payoffs[seat, own, opponent]`` of the game where both seats receive ``own_payoff[own, opponent]``."""
    m = np.asarray(own_payoff, np.float32)
    return np.stack([m, m])


class MatrixGameEnv(NativeVecBattleEnv):
    """A one-shot simultaneous game given by ``payoffs[seat, own_action, opponent_action]``."""

    turn_based = False
    payoffs: np.ndarray  # [seat, own action, opponent action], set by each game's class
    nash: np.ndarray  # [seat, action] equilibrium mixed strategies, set by each game's class
    zero_sum = False
    #: the expected reward of seat 0 at the equilibrium
    game_value: float = 0.0
    action_names: tuple = ()

    def __init__(self, cfg: Optional[Mapping], num_envs: int, seed: Optional[int] = None) -> None:
        super().__init__(cfg, num_envs, seed)
        num_actions = self.payoffs.shape[1]
        self.observation_space = spaces.Box(0.0, 1.0, (2,), np.float32)
        self.action_space = spaces.Discrete(num_actions)
        self.num_actions = int(num_actions)
        self._seat_one_hot = np.eye(2, dtype=np.float32)

    @classmethod
    def exact_analysis(cls, env_cfg=None):
        """Exact evaluation of policies (zero-sum games only; see :mod:`.analysis`)."""
        if not cls.zero_sum:
            return None
        from sparring.dizoo.matrix_games.analysis import MatrixGameAnalysis
        return MatrixGameAnalysis(cls.payoffs, cls.nash)

    def _reset_games(self, rows: np.ndarray) -> None:
        pass  # a one-shot game has no state

    def _advance(self, actions: np.ndarray):
        seat_0, seat_1 = actions[:, 0], actions[:, 1]
        reward = np.stack([self.payoffs[0, seat_0, seat_1], self.payoffs[1, seat_1, seat_0]], axis=1)
        seat_0_result = np.sign(reward[:, 0] - reward[:, 1]).astype(np.int8)
        result = np.stack([seat_0_result, -seat_0_result], axis=1)
        return reward, np.ones(self.num_envs, bool), np.zeros(self.num_envs, bool), result

    def _observe(self, rows: np.ndarray):
        n = len(rows)
        obs = np.broadcast_to(self._seat_one_hot, (n, 2, 2)).copy()
        return obs, np.ones((n, 2, self.num_actions), bool), np.ones((n, 2), bool)


@ENV_REGISTRY.register('zero_sum_2x2')
class ZeroSum2x2Env(MatrixGameEnv):
    payoffs = zero_sum_payoffs([[3.0, -2.0], [-2.0, 1.0]])
    nash = np.array([[0.375, 0.625], [0.375, 0.625]])
    zero_sum = True
    game_value = -0.125


@ENV_REGISTRY.register('prisoners_dilemma')
class PrisonersDilemmaEnv(MatrixGameEnv):
    payoffs = symmetric_payoffs([[3.0, 0.0], [5.0, 1.0]])
    nash = np.array([[0.0, 1.0], [0.0, 1.0]])
    game_value = 1.0
    action_names = ('cooperate', 'defect')


@ENV_REGISTRY.register('rock_paper_scissors')
class RockPaperScissorsEnv(MatrixGameEnv):
    payoffs = symmetric_payoffs([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])
    nash = np.full((2, 3), 1.0 / 3.0)
    zero_sum = True
    game_value = 0.0
    action_names = ('rock', 'paper', 'scissors')
