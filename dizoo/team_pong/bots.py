"""Team Pong's reference bot: every paddle tracks the ball within its own lane, reacting with some probability."""
from __future__ import annotations

import numpy as np

from sparring.config.schema import in_range
from sparring.dizoo.pong_duel.pong_duel_env import DOWN, STAY, UP
from sparring.dizoo.team_pong.team_pong_env import AGENT_FIELDS
from sparring.framework.registry import BOT_REGISTRY
from sparring.policy.bot import Bot

BALL_Y, OWN_PADDLE_Y = AGENT_FIELDS.index('ball_y'), AGENT_FIELDS.index('own_paddle_y')


@BOT_REGISTRY.register('team_pong_heuristic')
class TeamPongTrackerBot(Bot):
    """Each agent (one policy row) moves its paddle toward the ball's height, reacting on a step
    only with probability ``reaction``; its lane bounds keep it where it belongs. The battle arena
    gives a team bot one row per agent, so it plays any team size."""

    @classmethod
    def default_config(cls) -> dict:
        return dict(reaction=0.7, dead_zone=0.05)

    config_constraints = {'reaction': in_range(0.0, 1.0), 'dead_zone': in_range(0.0, None)}

    def __init__(self, cfg, observation_space, action_space, seed: int = 0) -> None:
        super().__init__(cfg, observation_space, action_space, seed)
        if len(self.obs_shape) != 1 or self.obs_shape[0] <= len(AGENT_FIELDS) or self.num_actions != 3:
            raise ValueError(f'bot {self.name!r}: observation shape {self.obs_shape} and {self.num_actions} '
                             f'actions; expected Team Pong\'s per-agent vector and 3 actions')

    def _choose(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        gap = obs[:, BALL_Y] - obs[:, OWN_PADDLE_Y]
        toward = np.where(gap > 0.0, UP, DOWN)
        reacts = (np.abs(gap) > self.cfg['dead_zone']) & (self.rng.random(len(obs)) < self.cfg['reaction'])
        return np.where(reacts, toward, STAY).astype(np.int64)
