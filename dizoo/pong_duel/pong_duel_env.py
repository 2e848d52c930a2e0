"""Pong for two: a real-time, natively vectorised battle env with a left (seat 0) and a right (seat 1) paddle.

The court is the unit square; the paddles slide along its left and right edges and the ball
bounces off the top and bottom walls. A paddle returns the ball at an angle set by where the ball
hits it (up to 60 degrees off the horizontal at the paddle's ends) and a little faster each time;
a ball past a paddle is a point for the other side, and the next ball is served from the centre
in a random direction. A game ends when a seat reaches ``points_to_win`` (terminated) or after
``max_steps`` steps (truncated); the result compares the scores.

Actions: 0 stay, 1 up, 2 down. With ``continuous=True`` the action is instead a paddle velocity in
``Box(-1, 1, (1,), float32)`` (clipped to it), in units of ``paddle_speed`` per step: 1 moves as
far as "up" does in the discrete game, so the two variants play the same court at the same
speeds and their players and bots can be compared. Reward per step: own points minus the opponent's points scored in
that step (zero-sum). The observation (``OBS_FIELDS``, all in about [-1, 1]) is from the seat's
own perspective: x is mirrored for the right seat, so -1 is always the own goal line and a
positive x velocity always moves away from it; one policy can play both sides.

``extra_features=True`` appends ``EXTRA_FIELDS``: ``ball_intercept_y``, the height at which the
ball will cross the goal line it is heading for (wall bounces folded in). It changes nothing
else (no randomness is drawn for it), so the two variants play the same games from the same
seed; it exists to show surgery adding an observation feature to a trained player.
``observation_names`` names every feature; ``seconds_per_step`` (1/30: a court crossing at the
serve takes about 1.7 s, as in arcade Pong) turns discount horizons into game seconds.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np
from gymnasium import spaces

from sparring.config.schema import ConfigError, in_range
from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.battle_api import BATTLE_ENV_CONSTRAINTS, NativeVecBattleEnv
from sparring.worker.env.battle_step import mask_width

OBS_FIELDS = ('ball_x', 'ball_y', 'ball_vx', 'ball_vy', 'own_paddle_y', 'opponent_paddle_y', 'score_difference')
OBS_INDEX = {name: i for i, name in enumerate(OBS_FIELDS)}
EXTRA_FIELDS = ('ball_intercept_y',)
STAY, UP, DOWN = 0, 1, 2
# The discrete actions as paddle velocities, in units of paddle_speed per step (indexed by STAY, UP, DOWN).
DISCRETE_VELOCITY = np.array([0.0, 1.0, -1.0])

BALL_RADIUS = 0.01
MAX_BOUNCE_ANGLE = np.deg2rad(60.0)
MAX_SERVE_ANGLE = np.deg2rad(30.0)

# The court every Pong game here shares (Pong duel, Team Pong): its options, their checks, its physics.
COURT_DEFAULTS = dict(
    points_to_win=5,  # points that win a game
    max_steps=1000,  # then the game is truncated and the score decides
    paddle_half_height=0.1,  # court height 1
    paddle_speed=0.04,  # per step
    ball_speed=0.02,  # per step, at the serve
    max_ball_speed=0.04,  # the ball speeds up by 5% per return up to this
)
COURT_CONSTRAINTS = dict(
    points_to_win=in_range(1, None),
    max_steps=in_range(1, None),
    paddle_half_height=in_range(0.0, 0.5, open_lo=True),
    paddle_speed=in_range(0.0, 1.0, open_lo=True),
    ball_speed=in_range(0.0, 0.5, open_lo=True),
    max_ball_speed=in_range(0.0, 0.5, open_lo=True),
)


def check_ball_speeds(section: dict) -> None:
    if section['max_ball_speed'] < section['ball_speed']:
        raise ConfigError(f'config key "env.max_ball_speed": {section["max_ball_speed"]} is below '
                          f'env.ball_speed {section["ball_speed"]}; expected max_ball_speed >= ball_speed')


def serve(rng: np.random.Generator, ball: np.ndarray, velocity: np.ndarray, rows: np.ndarray, speed: float) -> None:
    """A new ball from the centre of the courts ``rows``, toward a random side, up to MAX_SERVE_ANGLE off level."""
    n = len(rows)
    direction = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    angle = rng.uniform(-MAX_SERVE_ANGLE, MAX_SERVE_ANGLE, n)
    ball[rows] = 0.5
    velocity[rows, 0] = direction * speed * np.cos(angle)
    velocity[rows, 1] = speed * np.sin(angle)


def move_ball(ball: np.ndarray, velocity: np.ndarray) -> None:
    """One step of every ball; the walls reflect the part of the step that went past them."""
    ball += velocity
    off_wall = (ball[:, 1] < 0.0) | (ball[:, 1] > 1.0)
    if off_wall.any():
        y = ball[:, 1]
        ball[:, 1] = np.where(y < 0.0, -y, np.where(y > 1.0, 2.0 - y, y))
        velocity[off_wall, 1] *= -1.0


def return_ball(ball: np.ndarray, velocity: np.ndarray, rows: np.ndarray, seat: int, paddle_y: np.ndarray,
                reach: float, max_speed: float) -> None:
    """Bounce the balls of ``rows`` off ``seat``'s paddles at heights ``paddle_y`` (one per row), at an
    angle set by where they hit, 5% faster up to ``max_speed``."""
    offset = np.clip((ball[rows, 1] - paddle_y) / reach, -1.0, 1.0)
    angle = offset * MAX_BOUNCE_ANGLE
    speed = np.minimum(np.hypot(velocity[rows, 0], velocity[rows, 1]) * 1.05, max_speed)
    away = 1.0 if seat == 0 else -1.0
    velocity[rows, 0] = away * speed * np.cos(angle)
    velocity[rows, 1] = speed * np.sin(angle)
    # Mirror the overshoot back into the court.
    ball[rows, 0] = -ball[rows, 0] if seat == 0 else 2.0 - ball[rows, 0]


class PongCourt:
    """State and motion of B Pong courts, for a vectorised battle env that mixes it in: balls,
    paddles (``paddle_y`` ``[B, 2, *paddles_per_seat]``, each within its bounds), scores, steps."""

    # What the court reads of the env it is mixed into (a NativeVecBattleEnv's).
    num_envs: int
    cfg: Any
    np_random: np.random.Generator

    def _init_court(self, paddles_per_seat: tuple, lowest, highest) -> None:
        B = self.num_envs
        self.ball = np.zeros((B, 2))  # x, y
        self.velocity = np.zeros((B, 2))
        self.paddle_y = np.zeros((B, 2, *paddles_per_seat))
        self.score = np.zeros((B, 2), np.int64)
        self.steps = np.zeros(B, np.int64)
        self._lowest, self._highest = lowest, highest  # where the paddles' centres may go
        self._reach = self.cfg.paddle_half_height + BALL_RADIUS  # ball centre to paddle centre, for a hit

    def _reset_games(self, rows: np.ndarray) -> None:
        self.paddle_y[rows] = 0.5 * (np.asarray(self._lowest) + self._highest)
        self.score[rows] = 0
        self.steps[rows] = 0
        self._serve(rows)

    def _serve(self, rows: np.ndarray) -> None:
        serve(self.np_random, self.ball, self.velocity, rows, self.cfg.ball_speed)

    def _move(self, actions: np.ndarray) -> None:
        """The paddles by the discrete ``actions`` (STAY, UP, DOWN; shaped like ``paddle_y``), then the balls."""
        self._move_at(DISCRETE_VELOCITY[actions])

    def _move_at(self, velocity: np.ndarray) -> None:
        """The paddles at ``velocity`` (shaped like ``paddle_y``, in units of ``paddle_speed`` per step), then the balls."""
        np.clip(self.paddle_y + self.cfg.paddle_speed * velocity, self._lowest, self._highest, out=self.paddle_y)
        move_ball(self.ball, self.velocity)

    def _count(self, points: np.ndarray) -> tuple:
        """Add this step's ``points`` [B, 2] (a new ball where one was scored) and count the step;
        returns (terminated, truncated, result [B, 2])."""
        scored = np.flatnonzero(points.any(axis=1))
        if scored.size:
            self.score += points
            self._serve(scored)
        self.steps += 1
        terminated = self.score.max(axis=1) >= self.cfg.points_to_win
        truncated = (self.steps >= self.cfg.max_steps) & ~terminated
        seat_0_result = np.sign(self.score[:, 0] - self.score[:, 1]) * (terminated | truncated)
        return terminated, truncated, np.stack([seat_0_result, -seat_0_result], axis=1).astype(np.int8)




@ENV_REGISTRY.register('pong_duel')
class PongDuelEnv(PongCourt, NativeVecBattleEnv):
    turn_based = False
    reference_bots = ('random', 'pong_duel_heuristic')
    seconds_per_step = 1.0 / 30.0

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            super().default_config(),
            **COURT_DEFAULTS,
            extra_features=False,  # append EXTRA_FIELDS to the observation
            # actions: a paddle velocity in Box(-1, 1, (1,)), times paddle_speed per step, instead of stay/up/down
            continuous=False,
        )

    config_constraints = dict(BATTLE_ENV_CONSTRAINTS, **COURT_CONSTRAINTS)

    @classmethod
    def validate_config(cls, section: dict) -> None:
        check_ball_speeds(section)

    def __init__(self, cfg: Optional[Mapping], num_envs: int, seed: Optional[int] = None) -> None:
        super().__init__(cfg, num_envs, seed)
        self.observation_names = OBS_FIELDS + (EXTRA_FIELDS if self.cfg.extra_features else ())
        self.observation_space = spaces.Box(-1.0, 1.0, (len(self.observation_names),), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32) if self.cfg.continuous else spaces.Discrete(3)
        half = self.cfg.paddle_half_height
        self._init_court((), half, 1.0 - half)  # one paddle per seat

    def _advance(self, actions: np.ndarray):
        cfg = self.cfg
        if cfg.continuous:  # [B, 2, 1] velocities, already clipped to the box by the base class
            self._move_at(actions[:, :, 0].astype(np.float64))
        else:
            self._move(actions)
        ball = self.ball

        points = np.zeros((self.num_envs, 2), np.int64)
        for seat, past_line in ((0, ball[:, 0] < 0.0), (1, ball[:, 0] > 1.0)):
            if not past_line.any():
                continue
            returned = past_line & (np.abs(ball[:, 1] - self.paddle_y[:, seat]) <= self._reach)
            if returned.any():
                rows = np.flatnonzero(returned)
                return_ball(ball, self.velocity, rows, seat, self.paddle_y[rows, seat], self._reach,
                            cfg.max_ball_speed)
            missed = past_line & ~returned
            points[missed, 1 - seat] = 1
        terminated, truncated, result = self._count(points)
        reward = (points - points[:, ::-1]).astype(np.float32)
        return reward, terminated, truncated, result

    def _observe(self, rows: np.ndarray):
        n = len(rows)
        ball, velocity, paddle_y = self.ball[rows], self.velocity[rows], self.paddle_y[rows]
        score = self.score[rows]
        speed_scale = 1.0 / self.cfg.max_ball_speed
        obs = np.empty((n, 2, len(self.observation_names)), np.float32)
        for seat, mirror in ((0, 1.0), (1, -1.0)):
            # x mirrored for the right seat: 2x - 1 becomes 1 - 2x.
            obs[:, seat, 0] = mirror * (2.0 * ball[:, 0] - 1.0)
            obs[:, seat, 1] = 2.0 * ball[:, 1] - 1.0
            obs[:, seat, 2] = mirror * velocity[:, 0] * speed_scale
            obs[:, seat, 3] = velocity[:, 1] * speed_scale
            obs[:, seat, 4] = 2.0 * paddle_y[:, seat] - 1.0
            obs[:, seat, 5] = 2.0 * paddle_y[:, 1 - seat] - 1.0
            obs[:, seat, 6] = (score[:, seat] - score[:, 1 - seat]) / self.cfg.points_to_win
        if self.cfg.extra_features:
            obs[:, :, len(OBS_FIELDS)] = (2.0 * _intercept_y(ball, velocity) - 1.0)[:, None]
        return obs, np.ones((n, 2, mask_width(self.action_space)), bool), np.ones((n, 2), bool)


def _intercept_y(ball: np.ndarray, velocity: np.ndarray) -> np.ndarray:
    """Where (court height, in [0, 1]) each ball crosses the goal line it moves toward, bounces folded."""
    goal_x = np.where(velocity[:, 0] < 0.0, 0.0, 1.0)
    steps = (goal_x - ball[:, 0]) / np.where(velocity[:, 0] == 0.0, np.inf, velocity[:, 0])
    unfolded = np.mod(ball[:, 1] + velocity[:, 1] * steps, 2.0)  # the walls mirror the court every 2 heights
    return np.where(unfolded > 1.0, 2.0 - unfolded, unfolded)
