"""Target chase: three players (or more) on a plane chase one moving target, a free-for-all ranked by who kept closest,
or a game of several teams ranked by which team kept closest.

A game of S seats (``seats``, 3 by default) with continuous actions, natively vectorised in numpy
(:mod:`sparring.worker.env.multiseat_api`). Every game starts with the players and the target at random points of
the arena ``[-1, 1]^2``. The target wanders at ``target_speed`` per step, its heading turning at random by up to
``turn`` radians a step, and bounces off the walls. The players move at once: each seat's action is a velocity in
``Box(-1, 1, (2,), float32)`` (one longer than 1 is scaled down to 1) in units of ``player_speed`` per step, and
positions are kept in the arena. A game lasts ``max_steps`` steps and then ends by its rules (``terminated``).

Reward per step: how much closer to the target the seat is than the others on average,
``(mean distance of the others - own distance) / max_steps``, so the seats' rewards sum to zero. The ranking at the
end orders the seats by their returns (:func:`~sparring.worker.env.multiseat_api.ranks_from_returns`): the seat
that kept closest to the target over the game ranks first.

**Teams.** With ``team_size`` k > 1 the S seats form S / k teams of k consecutive seats (``team_size=2`` with six
seats: teams ``(0, 0, 1, 1, 2, 2)``, the env's ``teams``). A team's distance is the mean of its members' distances
to the target, and every member is paid its team's ``(mean distance of the other teams - own team's) / max_steps``:
the team's combined score, which its members share, so teammates always share their rank and the teams' rewards
sum to zero. With ``team_size=1`` (the default) each seat is its own team: the free-for-all above.

Each seat observes from its own side (``FIELDS``, then two numbers per other seat): its position, the target's
position relative to it and the target's heading (a unit vector), the fraction of the game left, and the other
seats' positions relative to it, teammates first: its teammates going round from its own seat, then the other teams
going round from its own team, each team's seats in seat order. In a free-for-all that is every other seat in seat
order going round from the next one, so the position of a seat in the observation says whether it is a teammate.
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
from gymnasium import spaces

from sparring.config.registry import ENV_REGISTRY
from sparring.config.schema import ConfigError, all_of, in_range, of_type
from sparring.worker.env.multiseat_api import MultiSeatVecEnv, ranks_from_returns

FIELDS = ('own_x', 'own_y', 'target_dx', 'target_dy', 'target_heading_x', 'target_heading_y', 'time_left')
# then other_<k>_dx, other_<k>_dy for the k-th seat after this one


@ENV_REGISTRY.register('target_chase')
class TargetChaseEnv(MultiSeatVecEnv):
    """B games of target chase side by side (see the module docstring)."""

    action_space: spaces.Box
    turn_based = False
    reference_bots = ('target_chase_greedy', 'random')
    config_constraints = {
        **MultiSeatVecEnv.config_constraints,
        'seats': all_of(of_type(int), in_range(3, 8)),
        'player_speed': in_range(0.0, 1.0, open_lo=True),
        'target_speed': in_range(0.0, 1.0),
        'turn': in_range(0.0, np.pi),
        'max_steps': all_of(of_type(int), in_range(1, None)),
        'team_size': all_of(of_type(int), in_range(1, 4)),
    }

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            super().default_config(),
            seats=3,  # players in a game
            player_speed=0.08,  # arena units per step (the arena is 2 wide)
            target_speed=0.05,  # slower than the players: the closest one can keep up with it
            turn=0.5,  # the target's heading turns by up to this many radians a step, at random
            max_steps=40,  # steps in a game
            team_size=1,  # seats per team (1: each seat for itself); seats must be a multiple with two teams or more
        )

    @classmethod
    def validate_config(cls, section: dict) -> None:
        seats, size = section['seats'], section['team_size']
        if seats % size or seats // size < 2:
            raise ConfigError(f'config keys "env.seats" and "env.team_size": {seats} seats do not make two or more '
                              f'teams of {size}; expected seats a multiple of team_size, at least twice it')

    def __init__(self, cfg: Optional[Mapping], num_envs: int, seed: Optional[int] = None) -> None:
        super().__init__(cfg, num_envs, seed)
        c = self.cfg
        self.num_seats = int(c.seats)
        S, B = self.num_seats, self.num_envs
        size = int(c.team_size)
        self.team_size, self.num_teams = size, S // size
        self.teams = None if size == 1 else tuple(s // size for s in range(S))
        self.observation_space = spaces.Box(-2.0, 2.0, (len(FIELDS) + 2 * (S - 1),), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.pos = np.zeros((B, S, 2), np.float32)  # [game, seat, xy]
        self.target = np.zeros((B, 2), np.float32)
        self.heading = np.zeros(B, np.float32)  # the target's, in radians
        self.t = np.zeros(B, np.int64)
        self.returns = np.zeros((B, S), np.float32)
        self.others = observed_order(S, size)  # [S, S - 1]: the other seats in the order seat s observes them

    def _reset_games(self, rows: np.ndarray) -> None:
        n, S = len(rows), self.num_seats
        self.pos[rows] = self.np_random.uniform(-0.9, 0.9, (n, S, 2))
        self.target[rows] = self.np_random.uniform(-0.9, 0.9, (n, 2))
        self.heading[rows] = self.np_random.uniform(-np.pi, np.pi, n)
        self.t[rows] = 0
        self.returns[rows] = 0.0

    def _distances(self) -> np.ndarray:
        return np.linalg.norm(self.pos - self.target[:, None], axis=2)

    def _advance(self, actions: np.ndarray):
        c = self.cfg
        unit = actions / np.maximum(np.linalg.norm(actions, axis=2, keepdims=True), 1.0)
        self.pos = np.clip(self.pos + c.player_speed * unit, -1.0, 1.0).astype(np.float32)
        self._move_target()
        self.t += 1
        distance = self._distances()
        if self.team_size > 1:  # each team's mean distance, then each seat its team's
            distance = distance.reshape(-1, self.num_teams, self.team_size).mean(axis=2)
        n = distance.shape[1]
        others_mean = (distance.sum(axis=1, keepdims=True) - distance) / (n - 1)
        reward = ((others_mean - distance) / c.max_steps).astype(np.float32)
        if self.team_size > 1:
            reward = np.repeat(reward, self.team_size, axis=1)
        self.returns += reward
        terminated = self.t >= c.max_steps
        rank = np.where(terminated[:, None], ranks_from_returns(self.returns), 0).astype(np.int8)
        return reward, terminated, np.zeros_like(terminated), rank

    def _move_target(self) -> None:
        """The target's step: its heading turns at random, it moves, and it bounces off the walls."""
        c = self.cfg
        self.heading += self.np_random.uniform(-c.turn, c.turn, self.num_envs).astype(np.float32)
        velocity = c.target_speed * np.stack([np.cos(self.heading), np.sin(self.heading)], axis=1)
        target = self.target + velocity
        over = np.abs(target) > 1.0
        target = np.where(over, np.sign(target) * 2.0 - target, target)  # reflected back inside
        velocity = np.where(over, -velocity, velocity)
        self.target = target.astype(np.float32)
        self.heading = np.arctan2(velocity[:, 1], velocity[:, 0]).astype(np.float32)

    def _observe(self, rows: np.ndarray):
        n, S = len(rows), self.num_seats
        pos = self.pos[rows]  # [n, S, 2]
        to_target = self.target[rows][:, None] - pos
        heading = np.stack([np.cos(self.heading[rows]), np.sin(self.heading[rows])], axis=1)
        time_left = 1.0 - self.t[rows] / self.cfg.max_steps
        others = pos[:, self.others] - pos[:, :, None]  # [n, S, S - 1, 2]
        obs = np.concatenate([pos, to_target, np.broadcast_to(heading[:, None], (n, S, 2)),
                              np.broadcast_to(time_left[:, None, None], (n, S, 1)), others.reshape(n, S, -1)],
                             axis=2)
        return obs.astype(np.float32), None, np.ones((n, S), bool)


def observed_order(seats: int, team_size: int) -> np.ndarray:
    """``[S, S - 1]`` the other seats in the order seat s observes them: its teammates going round from s, then the
    other teams going round from its own, each team's seats in seat order (teams of ``team_size`` consecutive seats;
    with 1, the seats after s going round)."""
    teams = seats // team_size
    order = np.empty((seats, seats - 1), np.int64)
    for s in range(seats):
        team, member = divmod(s, team_size)
        mates = [team * team_size + (member + j) % team_size for j in range(1, team_size)]
        rivals = [((team + t) % teams) * team_size + m for t in range(1, teams) for m in range(team_size)]
        order[s] = mates + rivals
    return order
