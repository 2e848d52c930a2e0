"""Pursuit and evasion: an asymmetric, natively vectorised battle env whose two seats have roles.

Seat 0 is the **pursuer**, seat 1 the **evader**; both move at once in the square arena ``[-1, 1]^2``,
at the same speed by default (so the pursuer catches only an evader it corners). The pursuer wins when it comes within ``capture_radius`` of the evader; the
evader wins when it has not been caught after ``max_steps`` steps (both end the game by its rules, so
``terminated``; there is no draw). The games start with the two at least ``min_start_distance`` apart.

The roles see different things (``observation_spaces`` differ in size, as their roles need):

* the pursuer (``PURSUER_FIELDS``): its position, the evader's position relative to it, their distance and
  the fraction of the game left;
* the evader (``EVADER_FIELDS``): the same from its side, and the pursuer's last velocity.

Actions: a velocity in ``Box(-1, 1, (2,), float32)`` (longer than 1 is scaled down to 1), in units of the
seat's speed per step; with ``discrete=True`` one of ``DIRECTIONS`` (stay or one of eight compass
directions) instead, with an all-True action mask (both seats move every step). Positions are kept in the
arena. Reward per step: the pursuer gains ``shaping`` times the distance it closed (the evader loses as
much: zero-sum), and the winner gets +1, the loser -1, at the end.
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
from gymnasium import spaces

from sparring.config.registry import ENV_REGISTRY
from sparring.config.schema import in_range, of_type
from sparring.worker.env.battle_api import BATTLE_ENV_CONSTRAINTS, NativeVecBattleEnv, battle_env_defaults

ROLES = ('pursuer', 'evader')
PURSUER, EVADER = 0, 1
PURSUER_FIELDS = ('own_x', 'own_y', 'evader_dx', 'evader_dy', 'distance', 'time_left')
EVADER_FIELDS = ('own_x', 'own_y', 'pursuer_dx', 'pursuer_dy', 'distance', 'time_left', 'pursuer_vx',
                 'pursuer_vy')
# The discrete actions as unit velocities: stay, then the eight compass directions counter-clockwise from east.
_ANGLES = np.arange(8) * np.pi / 4
DIRECTIONS = np.concatenate([np.zeros((1, 2)), np.stack([np.cos(_ANGLES), np.sin(_ANGLES)], axis=1)]
                            ).astype(np.float32)


@ENV_REGISTRY.register('pursuit')
class PursuitEnv(NativeVecBattleEnv):
    """Pursuit and evasion for B games at once (see the module docstring)."""

    roles = ROLES
    reference_bots = ('pursuit_chase', 'pursuit_flee', 'random')
    config_constraints = {
        **BATTLE_ENV_CONSTRAINTS,
        'pursuer_speed': in_range(0.0, 1.0, open_lo=True),
        'evader_speed': in_range(0.0, 1.0, open_lo=True),
        'capture_radius': in_range(0.0, 1.0, open_lo=True),
        'max_steps': in_range(1, None),
        'min_start_distance': in_range(0.0, 2.0),
        'shaping': in_range(0.0, None),
        'discrete': of_type(bool),
    }

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            battle_env_defaults(),
            pursuer_speed=0.06,  # arena units per step (the arena is 2 wide)
            evader_speed=0.06,  # as fast: the pursuer must corner the evader, the evader must keep out of corners
            capture_radius=0.15,  # the pursuer wins when it comes this close to the evader (arena units)
            max_steps=60,  # the evader wins if not caught by then
            min_start_distance=0.8,  # the two start at least this far apart (arena units)
            shaping=1.0,  # the pursuer's reward per unit of distance closed (the evader's: minus that)
            discrete=False,  # True: nine directions (stay or a compass direction) instead of a velocity
        )

    def __init__(self, cfg: Mapping, num_envs: int, seed: Optional[int] = None) -> None:
        super().__init__(cfg, num_envs, seed)
        c = self.cfg
        self.speeds = np.array([c.pursuer_speed, c.evader_speed], np.float32)
        self.observation_spaces = (spaces.Box(-3.0, 3.0, (len(PURSUER_FIELDS),), np.float32),
                                   spaces.Box(-3.0, 3.0, (len(EVADER_FIELDS),), np.float32))
        action = spaces.Discrete(len(DIRECTIONS)) if c.discrete else spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_spaces = (action, action)
        self.observation_space = self.action_space = None  # type: ignore[assignment]  # per seat instead
        B = self.num_envs
        self.pos = np.zeros((B, 2, 2), np.float32)  # [game, seat, xy]
        self.last_velocity = np.zeros((B, 2, 2), np.float32)
        self.t = np.zeros(B, np.int64)

    def _reset_games(self, rows: np.ndarray) -> None:
        n = len(rows)
        pursuer = self.np_random.uniform(-0.9, 0.9, (n, 2))
        evader = self.np_random.uniform(-0.9, 0.9, (n, 2))
        close = np.linalg.norm(evader - pursuer, axis=1) < self.cfg.min_start_distance
        # Too close: the evader is drawn again (rarely more than twice at the default distance).
        while close.any():
            evader[close] = self.np_random.uniform(-0.9, 0.9, (int(close.sum()), 2))
            close = np.linalg.norm(evader - pursuer, axis=1) < self.cfg.min_start_distance
        self.pos[rows, PURSUER] = pursuer
        self.pos[rows, EVADER] = evader
        self.last_velocity[rows] = 0.0
        self.t[rows] = 0

    def _velocities(self, actions) -> np.ndarray:
        """Each seat's move this step ``[B, 2, 2]``: its action as a direction of length at most 1, times its speed."""
        if self.cfg.discrete:
            unit = np.stack([DIRECTIONS[actions[PURSUER]], DIRECTIONS[actions[EVADER]]], axis=1)
        else:
            unit = np.stack([actions[PURSUER], actions[EVADER]], axis=1)
            unit = unit / np.maximum(np.linalg.norm(unit, axis=2, keepdims=True), 1.0)
        return (unit * self.speeds[None, :, None]).astype(np.float32)

    def _advance(self, actions):
        before = np.linalg.norm(self.pos[:, EVADER] - self.pos[:, PURSUER], axis=1)
        velocity = self._velocities(actions)
        self.pos = np.clip(self.pos + velocity, -1.0, 1.0)
        self.last_velocity = velocity
        self.t += 1
        after = np.linalg.norm(self.pos[:, EVADER] - self.pos[:, PURSUER], axis=1)
        caught = after < self.cfg.capture_radius
        escaped = ~caught & (self.t >= self.cfg.max_steps)
        pursuer_reward = self.cfg.shaping * (before - after) + caught.astype(np.float32) - escaped
        reward = np.stack([pursuer_reward, -pursuer_reward], axis=1).astype(np.float32)
        pursuer_result = np.where(caught, 1, np.where(escaped, -1, 0)).astype(np.int8)
        result = np.stack([pursuer_result, -pursuer_result], axis=1)
        terminated = caught | escaped
        return reward, terminated, np.zeros_like(terminated), result

    def _observe(self, rows: np.ndarray):
        pos = self.pos[rows]
        gap = pos[:, EVADER] - pos[:, PURSUER]
        distance = np.linalg.norm(gap, axis=1, keepdims=True)
        time_left = (1.0 - self.t[rows] / self.cfg.max_steps)[:, None]
        pursuer = np.concatenate([pos[:, PURSUER], gap, distance, time_left], axis=1)
        speed = self.speeds[PURSUER]
        evader = np.concatenate([pos[:, EVADER], -gap, distance, time_left,
                                 self.last_velocity[rows, PURSUER] / speed], axis=1)
        n = len(rows)
        width = len(DIRECTIONS) if self.cfg.discrete else 1
        masks = (np.ones((n, width), bool), np.ones((n, width), bool))
        return (pursuer.astype(np.float32), evader.astype(np.float32)), masks, np.ones((n, 2), bool)
