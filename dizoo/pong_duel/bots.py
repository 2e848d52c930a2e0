"""The reference bot of Pong duel: a paddle that tracks the ball, with a reaction speed that makes it beatable.

It plays both variants: stay/up/down in the discrete game, a velocity proportional to the gap in the
continuous one (``continuous=True``). The random bot of either variant is the generic ``random``.
"""
from __future__ import annotations

import numpy as np

from sparring.config.schema import in_range
from sparring.dizoo.pong_duel.pong_duel_env import DOWN, OBS_FIELDS, OBS_INDEX, STAY, UP
from sparring.config.registry import BOT_REGISTRY
from sparring.policy.bot import ACTION_KINDS, Bot


@BOT_REGISTRY.register('pong_duel_heuristic')
class PongTrackerBot(Bot):
    """Moves its paddle toward the ball's height; on each step it reacts only with probability
    ``reaction`` (else it stays), and it stays while the ball is within ``dead_zone`` (in
    observation units, the court's height being 2) of the paddle's centre. In the continuous game
    its velocity is ``gain`` times the gap, clipped to [-1, 1]: full speed when far, slowing down as
    it arrives, where the discrete bot can only move a whole step."""

    action_kinds = ACTION_KINDS

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            reaction=0.7,  # probability of moving on a step (else it stays)
            dead_zone=0.05,  # no move while the ball is this close to the paddle's centre (observation units)
            # continuous game: velocity per unit of gap; 12.5 = 1 / 0.08, the gap one step of the default
            # paddle_speed (0.04 court heights, 0.08 observation units) closes
            gain=12.5,
        )

    config_constraints = {'reaction': in_range(0.0, 1.0), 'dead_zone': in_range(0.0, None),
                          'gain': in_range(0.0, None, open_lo=True)}

    def __init__(self, cfg, observation_space, action_space, seed: int = 0, env=None) -> None:
        super().__init__(cfg, observation_space, action_space, seed, env)
        # Extra features (``extra_features=True``) come after OBS_FIELDS, which the bot reads.
        actions_fit = self.action_shape == (1,) if self.continuous else self.num_actions == 3
        if len(self.obs_shape) != 1 or self.obs_shape[0] < len(OBS_FIELDS) or not actions_fit:
            got = f'actions {self.action_shape}' if self.continuous else f'{self.num_actions} actions'
            raise ValueError(f'bot {self.name!r}: observation shape {self.obs_shape} and {got}; expected Pong '
                             f'duel\'s ({len(OBS_FIELDS)},) or longer, and 3 actions or a velocity of shape (1,)')

    def _choose(self, obs: np.ndarray, action_mask) -> np.ndarray:
        gap = obs[:, OBS_INDEX['ball_y']] - obs[:, OBS_INDEX['own_paddle_y']]
        reacts = (np.abs(gap) > self.cfg['dead_zone']) & (self.rng.random(len(obs)) < self.cfg['reaction'])
        if self.continuous:
            velocity = np.clip(self.cfg['gain'] * gap, -1.0, 1.0)
            return np.where(reacts, velocity, 0.0)[:, None]
        toward = np.where(gap > 0.0, UP, DOWN)
        return np.where(reacts, toward, STAY).astype(np.int64)
