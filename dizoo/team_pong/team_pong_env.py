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

from sparring.config.schema import in_range
from sparring.dizoo.pong_duel.pong_duel_env import BALL_RADIUS, DOWN, MAX_BOUNCE_ANGLE, MAX_SERVE_ANGLE, UP
from sparring.framework.registry import ENV_REGISTRY
from sparring.worker.env.team import TeamVecBattleEnv

AGENT_FIELDS = ('ball_x', 'ball_y', 'ball_vx', 'ball_vy', 'own_paddle_y')


@ENV_REGISTRY.register('team_pong')
class TeamPongEnv(TeamVecBattleEnv):
    turn_based = False
    reference_bots = ('random', 'team_pong_heuristic')
    seconds_per_step = 1.0 / 30.0  # as Pong duel: a serve crosses the court in about 1.7 s

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            super().default_config(),
            points_to_win=3,
            max_steps=600,  # then the game is truncated and the score decides
            paddle_half_height=0.08,  # court height 1; a lane is 1 / team_size high
            paddle_speed=0.04,  # per step
            ball_speed=0.02,  # per step, at the serve
            max_ball_speed=0.04,  # the ball speeds up by 5% per return up to this
            hit_reward=0.0,  # individual reward for returning the ball
        )

    config_constraints = dict(
        TeamVecBattleEnv.config_constraints,
        points_to_win=in_range(1, None),
        max_steps=in_range(1, None),
        paddle_half_height=in_range(0.0, 0.5, open_lo=True),
        paddle_speed=in_range(0.0, 1.0, open_lo=True),
        ball_speed=in_range(0.0, 0.5, open_lo=True),
        max_ball_speed=in_range(0.0, 0.5, open_lo=True),
        hit_reward=in_range(0.0, None),
    )

    def __init__(self, cfg: Optional[Mapping], num_envs: int, seed: Optional[int] = None) -> None:
        super().__init__(cfg, num_envs, seed)
        n = self.team_size
        self._set_agent_features(AGENT_FIELDS + tuple(f'team_paddle_{i}' for i in range(n))
                                 + tuple(f'opponent_paddle_{i}' for i in range(n)) + ('score_difference',))
        self.action_space = spaces.Discrete(3)
        B = self.num_envs
        lane = 1.0 / n
        half = min(self.cfg.paddle_half_height, lane / 2)
        # Each paddle's centre stays in its lane.
        self._lowest = np.arange(n) * lane + half
        self._highest = (np.arange(n) + 1) * lane - half
        self.ball = np.zeros((B, 2))
        self.velocity = np.zeros((B, 2))
        self.paddle_y = np.zeros((B, 2, n))
        self.score = np.zeros((B, 2), np.int64)
        self.steps = np.zeros(B, np.int64)
        self._reach = half + BALL_RADIUS

    def _reset_games(self, rows: np.ndarray) -> None:
        self.paddle_y[rows] = 0.5 * (self._lowest + self._highest)
        self.score[rows] = 0
        self.steps[rows] = 0
        self._serve(rows)

    def _serve(self, rows: np.ndarray) -> None:
        n = len(rows)
        direction = np.where(self.np_random.random(n) < 0.5, -1.0, 1.0)
        angle = self.np_random.uniform(-MAX_SERVE_ANGLE, MAX_SERVE_ANGLE, n)
        self.ball[rows] = 0.5
        self.velocity[rows, 0] = direction * self.cfg.ball_speed * np.cos(angle)
        self.velocity[rows, 1] = self.cfg.ball_speed * np.sin(angle)

    def _advance(self, actions: np.ndarray):
        cfg = self.cfg
        moves = (actions == UP).astype(np.float64) - (actions == DOWN)
        np.clip(self.paddle_y + cfg.paddle_speed * moves, self._lowest, self._highest, out=self.paddle_y)
        ball, velocity = self.ball, self.velocity
        ball += velocity
        y = ball[:, 1]
        off_wall = (y < 0.0) | (y > 1.0)
        if off_wall.any():
            ball[:, 1] = np.where(y < 0.0, -y, np.where(y > 1.0, 2.0 - y, y))
            velocity[off_wall, 1] *= -1.0

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
                self._return_ball(hit_rows, seat, hitter[returned])
                individual[hit_rows, seat, hitter[returned]] += cfg.hit_reward
            missed = rows[~returned]
            lane = np.minimum((ball[missed, 1] * self.team_size).astype(np.int64), self.team_size - 1)
            individual[missed, seat, lane] -= 1.0
            points[missed, 1 - seat] = 1
        scored = np.flatnonzero(points.any(axis=1))
        if scored.size:
            self.score += points
            self._serve(scored)

        self.steps += 1
        terminated = self.score.max(axis=1) >= cfg.points_to_win
        truncated = (self.steps >= cfg.max_steps) & ~terminated
        seat_0_result = np.sign(self.score[:, 0] - self.score[:, 1]) * (terminated | truncated)
        result = np.stack([seat_0_result, -seat_0_result], axis=1).astype(np.int8)
        return individual, terminated, truncated, result

    def _return_ball(self, rows: np.ndarray, seat: int, paddle: np.ndarray) -> None:
        """Bounce the ball off ``paddle`` of ``seat``, at an angle set by where it hit."""
        offset = np.clip((self.ball[rows, 1] - self.paddle_y[rows, seat, paddle]) / self._reach, -1.0, 1.0)
        angle = offset * MAX_BOUNCE_ANGLE
        speed = np.minimum(np.hypot(self.velocity[rows, 0], self.velocity[rows, 1]) * 1.05, self.cfg.max_ball_speed)
        away = 1.0 if seat == 0 else -1.0
        self.velocity[rows, 0] = away * speed * np.cos(angle)
        self.velocity[rows, 1] = speed * np.sin(angle)
        self.ball[rows, 0] = -self.ball[rows, 0] if seat == 0 else 2.0 - self.ball[rows, 0]

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
