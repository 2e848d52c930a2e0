"""Team battle envs: each of the two seats is a team of N agents played by one shared policy.

OpenAI Five's five heroes were replicas of one policy, each told which hero it controls, with
rewards symmetrised so that one team's gain is the other's loss. A :class:`TeamVecBattleEnv`
is a natively vectorised battle env whose every per-seat array has an *agent axis* after the
seat axis (``team_size`` = N):

================  =====================  ========================================================
``obs``           [B, 2, N, *obs_shape]  the agent's own features, then a one-hot of its index
``action_mask``   [B, 2, N, A] bool
``to_move``       [B, 2] bool            a team moves as one (all its agents, or none)
``reward``        [B, 2, N] float32      team rewards (below)
``result``        [B, 2] int8            per team, as in every battle env
actions           [B, 2, N] int
================  =====================  ========================================================

Rewards. A game gives *individual* rewards ``r[b, s, i]`` (what happened to agent i). The env
mixes them with the team's mean by the *team spirit* tau, and subtracts the opposing team's
mean, so every step is zero-sum between the teams::

    mixed[s, i] = (1 - tau) * r[s, i] + tau * mean_j r[s, j]
    reward[s, i] = mixed[s, i] - mean_j mixed[1 - s, j]

tau = 0: each agent is paid for its own deeds; tau = 1: every agent gets the team's mean.
The battle arena flattens a team into N policy rows, and the battle collector stores one
column per (game, seat, agent): chunks are ``[T, 2 * B * N, ...]``.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence, Tuple, cast

import numpy as np
from gymnasium import spaces

from sparring.config.schema import in_range
from sparring.worker.env.battle_api import NUM_SEATS, NativeVecBattleEnv
from sparring.worker.env.battle_step import BattleStep
from sparring.worker.env.errors import EnvError

TEAM_ENV_CONSTRAINTS = {'team_size': in_range(1, None), 'team_spirit': in_range(0.0, 1.0)}


def team_rewards(individual: np.ndarray, team_spirit: float) -> np.ndarray:
    """``[..., 2, N]`` individual rewards -> team-spirit-mixed, symmetrised rewards (module docstring)."""
    individual = np.asarray(individual, np.float64)
    mixed = (1.0 - team_spirit) * individual + team_spirit * individual.mean(axis=-1, keepdims=True)
    opposing_mean = mixed.mean(axis=-1)[..., ::-1]  # seat s gets seat 1 - s's mean
    return (mixed - opposing_mean[..., None]).astype(np.float32)


def with_agent_index(obs: np.ndarray) -> np.ndarray:
    """``[..., N, D]`` features with a one-hot of each agent's index appended: ``[..., N, D + N]``."""
    n = obs.shape[-2]
    one_hot = np.broadcast_to(np.eye(n, dtype=obs.dtype), (*obs.shape[:-2], n, n))
    return np.concatenate([obs, one_hot], axis=-1)


class TeamVecBattleEnv(NativeVecBattleEnv):
    """Base of vectorised team games (see the module docstring).

    A subclass sets ``action_space``, calls :meth:`_set_agent_features` with its per-agent
    feature names, and implements ``_reset_games(rows)``, ``_advance(actions) -> (individual
    reward [B, 2, N], terminated, truncated, result)`` and ``_observe_agents(rows) ->
    (features [n, 2, N, D], action_mask [n, 2, N, A])``; teams move simultaneously.
    """

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            super().default_config(),
            team_size=2,  # agents per team, all played by the team's one shared policy
            team_spirit=0.5,  # OpenAI Five's team spirit: 0 each agent's own reward, 1 the team's mean for all
        )

    config_constraints = dict(NativeVecBattleEnv.config_constraints, **TEAM_ENV_CONSTRAINTS)

    def __init__(self, cfg: Optional[Mapping], num_envs: int, seed: Optional[int] = None) -> None:
        super().__init__(cfg, num_envs, seed)
        self.team_size = int(self.cfg.team_size)

    def _set_agent_features(self, feature_names: Sequence[str], low: float = -1.0, high: float = 1.0) -> None:
        self.observation_names = tuple(feature_names) + tuple(f'agent_{i}' for i in range(self.team_size))
        self.observation_space = spaces.Box(min(low, 0.0), max(high, 1.0), (len(self.observation_names),),
                                            np.float32)

    def _observe_agents(self, rows: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """``(features [n, 2, N, D], action_mask [n, 2, N, A])`` of the games ``rows``; the subclass's hook."""
        raise NotImplementedError

    # -- the NativeVecBattleEnv hooks, with the agent axis ----------------------------------------
    def _observe(self, rows: np.ndarray):
        features, mask = self._observe_agents(rows)
        return with_agent_index(features.astype(np.float32)), mask, np.ones((len(rows), NUM_SEATS), bool)

    def _reset(self, seed: Optional[int], reseed: bool) -> BattleStep:
        step = super()._reset(seed, reseed)
        return step._replace(reward=np.zeros((self.num_envs, NUM_SEATS, self.team_size), np.float32))

    def _step(self, actions: np.ndarray) -> BattleStep:
        step = super()._step(actions)
        return step._replace(reward=team_rewards(step.reward, self.cfg.team_spirit))

    def _check_actions(self, actions) -> np.ndarray:
        batch = np.asarray(actions)
        expected = (self.num_envs, NUM_SEATS, self.team_size)
        if batch.shape != expected:
            raise EnvError(f'{self.label}: actions of shape {batch.shape}; expected {expected} (num_envs, seats, '
                           f'agents per team)')
        if batch.dtype.kind not in 'iu':
            raise EnvError(f'{self.label}: actions of dtype {batch.dtype}; expected integers (indices into '
                           f'{self.action_space!r})')
        batch = batch.astype(np.int64)
        n = int(cast(spaces.Discrete, self.action_space).n)
        to_move = np.broadcast_to(self._to_move[:, :, None], batch.shape)
        out_of_range = to_move & ((batch < 0) | (batch >= n))
        safe = np.where(out_of_range, 0, batch)
        illegal = out_of_range | (to_move & ~np.take_along_axis(self._mask, safe[..., None], -1)[..., 0])
        if illegal.any():
            env, seat, agent = (int(i) for i in np.argwhere(illegal)[0])
            legal = np.flatnonzero(self._mask[env, seat, agent]).tolist()
            raise EnvError(f'{self.label}: env {env}, seat {seat}, agent {agent} played action '
                           f'{int(batch[env, seat, agent])}; legal actions there: {legal}')
        return safe * to_move
