"""Scripted bots of pursuit and evasion, one for each role: a pursuer that runs at the evader and an evader
that runs from the pursuer. Each plays its own role's seat only (``roles``); both play either action variant.
The random bot of either role is the generic ``random``."""
from __future__ import annotations

import numpy as np

from sparring.config.registry import BOT_REGISTRY
from sparring.config.schema import in_range
from sparring.dizoo.pursuit.pursuit_env import DIRECTIONS, EVADER_FIELDS, PURSUER_FIELDS
from sparring.policy.bot import ACTION_KINDS, Bot

_P = {name: i for i, name in enumerate(PURSUER_FIELDS)}
_E = {name: i for i, name in enumerate(EVADER_FIELDS)}


class _PursuitBot(Bot):
    """What both bots share: a direction per row, played as a velocity or as the nearest of ``DIRECTIONS``, and
    on each step only with probability ``reaction`` (else it keeps still)."""

    action_kinds = ACTION_KINDS
    fields: tuple = ()
    default_reaction = 0.9

    @classmethod
    def default_config(cls) -> dict:
        return dict(reaction=cls.default_reaction)  # probability of moving on a step (else it stays)

    config_constraints = {'reaction': in_range(0.0, 1.0)}

    def __init__(self, cfg, observation_space, action_space, seed: int = 0, env=None) -> None:
        super().__init__(cfg, observation_space, action_space, seed, env)
        if self.obs_shape != (len(self.fields),):
            role = self.roles[0] if self.roles else 'a seat'  # each pursuit bot names its one role
            raise ValueError(f'bot {self.name!r} plays the {role} of pursuit: observation shape '
                             f'{self.obs_shape}; expected ({len(self.fields)},) ({", ".join(self.fields)})')

    def _direction(self, obs: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _choose(self, obs: np.ndarray, action_mask) -> np.ndarray:
        direction = self._direction(obs)
        direction /= np.maximum(np.linalg.norm(direction, axis=1, keepdims=True), 1e-6)
        moves = self.rng.random(len(obs)) < self.cfg['reaction']
        if self.continuous:
            return np.where(moves[:, None], direction, 0.0).astype(np.float32)
        nearest = np.argmax(direction @ DIRECTIONS[1:].T, axis=1) + 1
        return np.where(moves, nearest, 0).astype(np.int64)


@BOT_REGISTRY.register('pursuit_chase')
class ChaseBot(_PursuitBot):
    """The pursuer's bot: runs straight at where the evader is now (no anticipation, so an evader that turns
    away gains time), moving on three steps in five by default: slower than an evader that keeps moving, so an
    evader that stays out of the corners escapes it."""

    roles = ('pursuer',)
    fields = PURSUER_FIELDS
    default_reaction = 0.6

    def _direction(self, obs: np.ndarray) -> np.ndarray:
        return obs[:, [_P['evader_dx'], _P['evader_dy']]].copy()


@BOT_REGISTRY.register('pursuit_flee')
class FleeBot(_PursuitBot):
    """The evader's bot: runs straight away from the pursuer, pushed off the walls within ``wall_margin`` (so it
    slides along them rather than waiting in a corner)."""

    roles = ('evader',)
    fields = EVADER_FIELDS

    @classmethod
    def default_config(cls) -> dict:
        return dict(super().default_config(),
                    wall_margin=0.2)  # within this distance of a wall (arena units) the evader is pushed off it

    config_constraints = {**_PursuitBot.config_constraints, 'wall_margin': in_range(0.0, 1.0)}

    def _direction(self, obs: np.ndarray) -> np.ndarray:
        away = -obs[:, [_E['pursuer_dx'], _E['pursuer_dy']]]
        away /= np.maximum(np.linalg.norm(away, axis=1, keepdims=True), 1e-6)
        own = obs[:, [_E['own_x'], _E['own_y']]]
        margin = self.cfg['wall_margin']
        push = np.where(own > 1.0 - margin, -1.0, np.where(own < -1.0 + margin, 1.0, 0.0))
        return away + push
