"""The reference bot of Pong duel: a paddle that tracks the ball, with a reaction speed that makes it beatable."""
from __future__ import annotations

import numpy as np

from sparring.config.schema import in_range
from sparring.dizoo.pong_duel.pong_duel_env import DOWN, OBS_FIELDS, OBS_INDEX, STAY, UP
from sparring.config.registry import BOT_REGISTRY
from sparring.policy.bot import Bot


@BOT_REGISTRY.register('pong_duel_heuristic')
class PongTrackerBot(Bot):
    """Moves its paddle toward the ball's height; on each step it reacts only with probability
    ``reaction`` (else it stays), and it stays while the ball is within ``dead_zone`` (in
    observation units, the court's height being 2) of the paddle's centre."""

    @classmethod
    def default_config(cls) -> dict:
        return dict(reaction=0.7, dead_zone=0.05)

    config_constraints = {'reaction': in_range(0.0, 1.0), 'dead_zone': in_range(0.0, None)}

    def __init__(self, cfg, observation_space, action_space, seed: int = 0) -> None:
        super().__init__(cfg, observation_space, action_space, seed)
        # Extra features (``extra_features=True``) come after OBS_FIELDS, which the bot reads.
        if len(self.obs_shape) != 1 or self.obs_shape[0] < len(OBS_FIELDS) or self.num_actions != 3:
            raise ValueError(f'bot {self.name!r}: observation shape {self.obs_shape} and {self.num_actions} '
                             f'actions; expected Pong duel\'s ({len(OBS_FIELDS)},) or longer, and 3')

    def _choose(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        gap = obs[:, OBS_INDEX['ball_y']] - obs[:, OBS_INDEX['own_paddle_y']]
        toward = np.where(gap > 0.0, UP, DOWN)
        reacts = (np.abs(gap) > self.cfg['dead_zone']) & (self.rng.random(len(obs)) < self.cfg['reaction'])
        return np.where(reacts, toward, STAY).astype(np.int64)
