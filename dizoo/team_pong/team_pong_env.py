"""Team Pong: Pong for two teams of N paddles, natively vectorised, each team one shared policy.

The court is the unit square. Team 0 defends the left goal line, team 1 the right one; each
team's N paddles slide along its goal line, paddle i confined to lane i (heights [i/N, (i+1)/N]),
so the agents must share the work. The physics are Pong duel's (:mod:`sparring.dizoo.pong_duel`):
walls reflect, a paddle returns the ball at an angle set by where it hits and a little faster,
a ball past the goal line is a point for the other team and the next ball is served from the
centre. A game ends at ``points_to_win`` (terminated) or after ``max_steps`` (truncated); the
result compares the scores.

Individual rewards (mixed and symmetrised by :mod:`sparring.worker.env.team`): -1 for the agent
in whose lane a ball crossed its goal line, ``hit_reward`` for the agent that returned a ball.
After symmetrisation a point is worth +1 to the scoring team and -1 to the other, split by the
team spirit between the agent that missed and its teammates.

An agent's observation, from its team's perspective (x mirrored for team 1, as in Pong duel),
is ``AGENT_FIELDS`` then the paddles of its own team and of the opponents (lane order), the
score difference, and the one-hot of its index. Actions: 0 stay, 1 up, 2 down.
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
from gymnasium import spaces

from sparring.config.schema import ConfigError, in_range
from sparring.dizoo.pong_duel.pong_duel_env import (COURT_CONSTRAINTS, COURT_DEFAULTS, OBS_FIELDS, PongCourt,
                                                    check_ball_speeds, return_ball)
from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.team import TeamVecBattleEnv

# An agent's first features are Pong duel's (so its tracker bot reads them too): the ball, its own paddle.
AGENT_FIELDS = OBS_FIELDS[:5]


@ENV_REGISTRY.register('team_pong')
class TeamPongEnv(PongCourt, TeamVecBattleEnv):
    turn_based = False
    reference_bots = ('random', 'team_pong_heuristic')
    seconds_per_step = 1.0 / 30.0  # as Pong duel: a serve crosses the court in about 1.7 s

    @classmethod
    def default_config(cls) -> dict:
        return {
            **super().default_config(),
            **COURT_DEFAULTS,
            'points_to_win': 3,  # points that win a game
            'max_steps': 600,  # then the game is truncated and the score decides
            'paddle_half_height': 0.08,  # court height 1; a lane is 1 / team_size of the court's height
            'hit_reward': 0.0,  # individual reward for returning the ball
        }

    config_constraints = dict(TeamVecBattleEnv.config_constraints, **COURT_CONSTRAINTS, hit_reward=in_range(0.0, None))

    @classmethod
    def validate_config(cls, section: dict) -> None:
        check_ball_speeds(section)
        lane = 1.0 / section['team_size']
        if section['paddle_half_height'] > lane / 2:
            raise ConfigError(f'config key "env.paddle_half_height": {section["paddle_half_height"]} does not fit a '
                              f'lane of height 1/{section["team_size"]}; expected at most {lane / 2:.4g}')

    def __init__(self, cfg: Optional[Mapping], num_envs: int, seed: Optional[int] = None) -> None:
        super().__init__(cfg, num_envs, seed)
        n = self.team_size
        self._set_agent_features(AGENT_FIELDS + tuple(f'team_paddle_{i}' for i in range(n))
                                 + tuple(f'opponent_paddle_{i}' for i in range(n)) + ('score_difference',))
        self.action_space = spaces.Discrete(3)
        lane, half = 1.0 / n, self.cfg.paddle_half_height
        # Each paddle's centre stays in its lane.
        self._init_court((n,), np.arange(n) * lane + half, (np.arange(n) + 1) * lane - half)

    def _advance(self, actions: np.ndarray):
        cfg = self.cfg
        self._move(actions)
        ball = self.ball
        individual = np.zeros((self.num_envs, 2, self.team_size))
        points = np.zeros((self.num_envs, 2), np.int64)
        for seat, past_line in ((0, ball[:, 0] < 0.0), (1, ball[:, 0] > 1.0)):
            rows = np.flatnonzero(past_line)
            if not rows.size:
                continue
            gaps = np.abs(ball[rows, 1, None] - self.paddle_y[rows, seat])
            hitter = gaps.argmin(axis=1)
            returned = gaps[np.arange(len(rows)), hitter] <= self._reach
            if returned.any():
                hit_rows = rows[returned]
                return_ball(ball, self.velocity, hit_rows, seat, self.paddle_y[hit_rows, seat, hitter[returned]],
                            self._reach, cfg.max_ball_speed)
                individual[hit_rows, seat, hitter[returned]] += cfg.hit_reward
            missed = rows[~returned]
            lane = np.minimum((ball[missed, 1] * self.team_size).astype(np.int64), self.team_size - 1)
            individual[missed, seat, lane] -= 1.0
            points[missed, 1 - seat] = 1
        terminated, truncated, result = self._count(points)
        return individual, terminated, truncated, result

    def _observe_agents(self, rows: np.ndarray):
        n, N = len(rows), self.team_size
        ball, velocity, paddles, score = self.ball[rows], self.velocity[rows], self.paddle_y[rows], self.score[rows]
        speed_scale = 1.0 / self.cfg.max_ball_speed
        features = np.empty((n, 2, N, len(AGENT_FIELDS) + 2 * N + 1), np.float32)
        for seat, mirror in ((0, 1.0), (1, -1.0)):
            f = features[:, seat]
            f[:, :, 0] = (mirror * (2.0 * ball[:, 0] - 1.0))[:, None]
            f[:, :, 1] = (2.0 * ball[:, 1] - 1.0)[:, None]
            f[:, :, 2] = (mirror * velocity[:, 0] * speed_scale)[:, None]
            f[:, :, 3] = (velocity[:, 1] * speed_scale)[:, None]
            f[:, :, 4] = 2.0 * paddles[:, seat] - 1.0
            f[:, :, 5:5 + N] = (2.0 * paddles[:, seat] - 1.0)[:, None, :]
            f[:, :, 5 + N:5 + 2 * N] = (2.0 * paddles[:, 1 - seat] - 1.0)[:, None, :]
            f[:, :, -1] = ((score[:, seat] - score[:, 1 - seat]) / self.cfg.points_to_win)[:, None]
        return features, np.ones((n, 2, N, 3), bool)
