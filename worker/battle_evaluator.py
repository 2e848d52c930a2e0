"""Battle evaluator: plays a policy against fixed opponents and reports win, draw and loss rates.

Each opponent gets ``n_episodes`` games, spread over the env slots with a fixed quota per slot
and the home seat alternating, so both seats are played equally. Bots that need the true game
state (MCTS over OpenSpiel games) get it from the env. Besides each game's outcome, the result keeps
the home side's return of each game (a team's: the mean over its agents), since where a game pays
more than win or lose (poker's chips) the outcome alone does not say how much was won, and its seat,
since in a turn-based game moving first or second can matter more than the opponent, and how many
distinct games the recorded ones were (:mod:`sparring.worker.game_fingerprints`): greedy players on a
game without chance repeat the same few games.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from sparring.policy.base import Policy
from sparring.worker.role_arena import make_arena
from sparring.worker.game_fingerprints import GameFingerprints


@dataclasses.dataclass
class BattleEvalResult:
    opponent_id: str
    outcomes: List[str]
    returns: List[float] = dataclasses.field(default_factory=list)  # the home side's, game by game
    seats: List[int] = dataclasses.field(default_factory=list)  # the home side's seat, game by game (0 moves first)
    distinct_games: Optional[int] = None  # how many of the games differ (None: not counted)

    @property
    def mean_return(self) -> float:
        if not self.returns:
            raise ValueError(f'BattleEvalResult against {self.opponent_id!r} holds no returns')
        return float(np.mean(self.returns))

    @property
    def games(self) -> int:
        return len(self.outcomes)

    def rate(self, outcome: str) -> float:
        return self.outcomes.count(outcome) / max(len(self.outcomes), 1)

    @property
    def win_rate(self) -> float:
        return self.rate('win')

    @property
    def score(self) -> float:
        """Wins plus half the draws, per game."""
        return self.rate('win') + 0.5 * self.rate('draw')

    def summary(self) -> Dict[str, float]:
        return dict(win=self.rate('win'), draw=self.rate('draw'), loss=self.rate('loss'), games=self.games)


class BattleEvaluator:
    """Plays a policy against fixed opponents and reports win, draw and loss rates (see the module docstring).

    Args:
        make_env: ``make_env()`` returns a fresh VecBattleEnv (the evaluator's own envs).
        n_episodes: games per opponent, the home seat alternating.
        deterministic: greedy actions (False: sampled).
    """

    def __init__(self, make_env, n_episodes: int, deterministic: bool = False) -> None:
        if n_episodes < 1:
            raise ValueError(f'BattleEvaluator: n_episodes must be >= 1, got {n_episodes}')
        self.make_env = make_env
        self.n_episodes = n_episodes
        self.deterministic = deterministic

    def evaluate(self, policy: Policy, opponents: Sequence[Tuple[str, Policy]],
                 role: Optional[str] = None) -> List[BattleEvalResult]:
        """``policy`` against each opponent; in a game with roles it plays the seat of ``role``."""
        env = self.make_env()
        try:
            return [self._play(env, policy, opponent_id, opponent, role) for opponent_id, opponent in opponents]
        finally:
            env.close()

    def _play(self, env, policy: Policy, opponent_id: str, opponent: Policy, role: Optional[str]) -> BattleEvalResult:
        arena = make_arena(env, policy, role=role, deterministic=self.deterministic)
        B = env.num_envs
        quota = np.full(B, self.n_episodes // B)
        quota[: self.n_episodes % B] += 1
        for slot in range(B):
            arena.set_opponent(slot, opponent_id, opponent)
        arena.reset()
        outcomes: List[str] = []
        returns: List[float] = []
        seats: List[int] = []
        fingerprints = GameFingerprints(B)
        distinct: Set[str] = set()  # the fingerprints of the recorded games
        running = np.zeros(B)  # the home side's return of each slot's current game
        slots = np.arange(B)
        while (quota > 0).any():
            actions, _ = arena.act()
            step = arena.step(actions)
            ended = fingerprints.step(actions, arena.step_result)  # the env's own step: every seat's view
            # Read before finished(): it flips the home seat of the slots whose game ended.
            home_seat = arena.home_seat.copy()
            home_reward = step.reward[slots, home_seat]
            running += home_reward.reshape(B, -1).mean(axis=1)  # a team's agents: their mean
            for slot, _, outcome in arena.finished(step):
                if quota[slot] > 0:
                    outcomes.append(outcome)
                    returns.append(float(running[slot]))
                    seats.append(int(arena.env_seat(home_seat)[slot]))
                    distinct.add(ended[slot])
                    quota[slot] -= 1
                running[slot] = 0.0
        return BattleEvalResult(opponent_id, outcomes, returns, seats, distinct_games=len(distinct))
