"""The scripted bot of target chase: it heads for where the target is going, as fast as it may."""
from __future__ import annotations

import numpy as np

from sparring.config.registry import BOT_REGISTRY
from sparring.config.schema import in_range
from sparring.dizoo.target_chase.target_chase_env import FIELDS, TargetChaseEnv
from sparring.policy.bot import Bot

_F = {name: i for i, name in enumerate(FIELDS)}


@BOT_REGISTRY.register('target_chase_greedy')
class GreedyChaseBot(Bot):
    """Runs at the point ``lead`` arena units ahead of the target along its heading, at full speed until it is
    within a step of it (then it steps onto it). It ignores the other players: it never blocks one."""

    action_kinds = ('continuous',)
    config_constraints = {'lead': in_range(0.0, 2.0)}

    @classmethod
    def default_config(cls) -> dict:
        return dict(lead=0.1)  # how far ahead of the target it aims (arena units)

    def __init__(self, cfg, observation_space, action_space, seed: int = 0, env=None) -> None:
        super().__init__(cfg, observation_space, action_space, seed, env)
        extra = self.obs_shape[0] - len(FIELDS) if len(self.obs_shape) == 1 else -1
        if self.action_shape != (2,) or extra < 4 or extra % 2:
            raise ValueError(f'bot {self.name!r} plays target chase: observation shape {self.obs_shape} and action '
                             f'shape {self.action_shape}; expected ({len(FIELDS)} + 2 per other seat,) and (2,)')
        speed = self.env_cfg.get('player_speed') if self.env_cfg else None
        self.speed = float(speed or TargetChaseEnv.default_config()['player_speed'])

    def _choose(self, obs: np.ndarray, action_mask) -> np.ndarray:
        heading = obs[:, [_F['target_heading_x'], _F['target_heading_y']]]
        aim = obs[:, [_F['target_dx'], _F['target_dy']]] + self.cfg['lead'] * heading
        distance = np.linalg.norm(aim, axis=1, keepdims=True)
        return (aim / np.maximum(distance, 1e-6) * np.minimum(1.0, distance / self.speed)).astype(np.float32)
