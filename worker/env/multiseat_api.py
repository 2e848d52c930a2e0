"""Games of three or more seats: the vectorised API, its step and its base class.

The two-seat battle API (:mod:`sparring.worker.env.battle_api`) with S seats and a ranking at the end of each game
instead of a win, draw or loss. A registered env says it is such a game with ``multiseat = True`` (the class
attribute), is built as ``Cls(cfg, num_envs, seed)`` and has:

* ``num_envs`` (B), ``num_seats`` (S, at least 2), ``observation_space`` and ``action_space`` (one policy plays
  any seat: observations are from the seat's own perspective), ``turn_based``, ``agents`` (``player_<s>``), and
  ``teams``: None when each seat plays for itself (a free-for-all), or a team game's team index of each seat
  (``(0, 1, 0, 1)``: two teams of two), whose teammates always share their rank;
* ``reset(seed=None) -> MultiSeatStep`` and ``step(actions) -> MultiSeatStep`` with ``actions`` int ``[B, S]``
  (the actions of seats not to move are ignored; an illegal action of a seat to move raises :class:`EnvError`
  before any game changes); finished games restart automatically; ``close()``.

A game with continuous actions has a ``Box`` ``action_space`` and takes float ``actions`` ``[B, S, *action_shape]``,
clipped to the box before the game sees them (a Gaussian policy samples outside it; NaN or infinity in the action of
a seat to move raises :class:`EnvError`), as the two-seat API's Box games do. It has no action mask: every value is
legal, and ``action_mask`` is the one-column placeholder ``[B, S, 1]`` equal to ``to_move``.

:class:`MultiSeatStep` holds ``obs`` ``[B, S, *obs_shape]`` float32, ``action_mask`` ``[B, S, A]`` bool (all
False for a seat not to move; ``A`` = 1 for a Box game), ``to_move`` ``[B, S]``, ``reward`` ``[B, S]`` float32, ``terminated`` and
``truncated`` ``[B]``, ``rank`` ``[B, S]`` int8 (each seat's rank where a game ended: 0 the best, equal ranks a
tie; 0 elsewhere; :func:`ranks_from_returns` ranks by the games' returns) and ``final_obs`` (a finished game's
last observation, equal to ``obs`` elsewhere).

:class:`MultiSeatVecEnv` does the checks, the seeding and the restarts; a game implements ``_reset_games(rows)``,
``_advance(actions) -> (reward, terminated, truncated, rank)`` and ``_observe(rows) -> (obs, mask, to_move)`` (a Box
game's ``mask`` None: the base class puts the placeholder in).
"""
from __future__ import annotations

from typing import Mapping, NamedTuple, Optional, Tuple, Union, cast

import numpy as np
from easydict import EasyDict
from gymnasium import spaces

from sparring.worker.env.battle_api import BATTLE_ENV_CONSTRAINTS, battle_env_defaults
from sparring.worker.env.battle_step import clip_box_actions, is_continuous
from sparring.worker.env.closeable import Closeable
from sparring.worker.env.errors import EnvError
from sparring.worker.env.gym_env import complete_section


class MultiSeatStep(NamedTuple):
    """One vectorised step of B games of S seats (see the module docstring for each field)."""
    obs: np.ndarray
    action_mask: np.ndarray
    to_move: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    rank: np.ndarray
    final_obs: np.ndarray


ActionSpace = Union[spaces.Discrete, spaces.Box]


def ranks_from_returns(returns) -> np.ndarray:
    """``[..., S]`` int8 ranks of the seats by their returns: the number of seats with a strictly higher return
    (0 the best; equal returns share a rank)."""
    returns = np.asarray(returns, np.float64)
    return (returns[..., None, :] > returns[..., :, None]).sum(axis=-1).astype(np.int8)


def is_multiseat_env(env_cls) -> bool:
    """Whether a registered env class is a game of S seats of this module's API."""
    return bool(getattr(env_cls, 'multiseat', False))


def seat_layout(env_cls, env_cfg, seed: Optional[int] = None) -> Tuple[spaces.Box, ActionSpace, int]:
    """``(observation space, action space, seats)`` of a multi-seat env class, from a probe game it closes."""
    probe = env_cls(env_cfg, 1, seed)
    try:
        return probe.observation_space, probe.action_space, probe.num_seats
    finally:
        probe.close()


class MultiSeatVecEnv(Closeable):
    """Base of vectorised games of S seats (see the module docstring).

    A subclass sets ``num_seats``, ``observation_space``, ``action_space`` (``Discrete``, or ``Box``) and ``turn_based`` in
    its constructor, keeps its randomness in ``self.np_random`` and implements the three hooks.

    Args:
        cfg: the run's ``env`` section, completed from the registered class's :meth:`default_config`.
        num_envs: games played side by side (B).
        seed: the seed of ``self.np_random`` at the first :meth:`reset` (None: fresh entropy).
    """

    is_vectorised = True
    multiseat = True
    turn_based = True
    num_seats: int
    teams: Optional[Tuple[int, ...]] = None  # a team game's team of each seat; None: each seat for itself
    observation_space: spaces.Box
    action_space: ActionSpace
    reference_bots: Tuple[str, ...] = ('random',)
    config_constraints = BATTLE_ENV_CONSTRAINTS

    @classmethod
    def default_config(cls) -> dict:
        return battle_env_defaults()

    def __init__(self, cfg: Optional[Mapping], num_envs: int, seed: Optional[int] = None) -> None:
        registered = type(self).__dict__.get('registry_name')  # a subclass built by hand has none of its own
        name = registered or type(self).__name__
        self.label = f'multi-seat env {name!r}'
        self.closed = False
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise EnvError(f'{self.label}: num_envs must be an int >= 1, got {num_envs!r}')
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise EnvError(f'{self.label}: seed must be an int >= 0 or None, got {seed!r}')
        self.cfg = complete_section('env', {'type': name, **(cfg or {})}) if registered else EasyDict(cfg or {})
        self.num_envs = int(num_envs)
        self.seed = None if seed is None else int(seed)
        self.np_random = np.random.default_rng(seed)
        self._all_games = np.arange(self.num_envs)
        self._current: Optional[MultiSeatStep] = None

    @property
    def agents(self):
        return [f'player_{s}' for s in range(self.num_seats)]

    def reset(self, seed: Optional[int] = None) -> MultiSeatStep:
        """A new game in every env; ``seed`` reseeds the env's Generator (None continues it)."""
        self._check_open()
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self._reset_games(self._all_games)
        obs, mask, to_move = self._observation(self._all_games)
        B, S = self.num_envs, self.num_seats
        no_end = np.zeros(B, bool)
        self._current = MultiSeatStep(obs, mask, to_move, np.zeros((B, S), np.float32), no_end, no_end.copy(),
                                      np.zeros((B, S), np.int8), obs.copy())
        return self._current

    def step(self, actions) -> MultiSeatStep:
        """One move of every game: ``actions`` int ``[B, S]`` (a Box game's float ``[B, S, *action_shape]``), read
        where a seat is to move."""
        self._check_open()
        if self._current is None:
            raise EnvError(f'{self.label}: step() before reset(); call reset() first')
        actions = self._check_actions(np.asarray(actions))
        reward, terminated, truncated, rank = self._advance(actions)
        obs, mask, to_move = self._observation(self._all_games)
        final_obs = obs.copy()
        finished = np.flatnonzero(terminated | truncated)
        if finished.size:
            self._reset_games(finished)
            obs[finished], mask[finished], to_move[finished] = self._observation(finished)
        self._current = MultiSeatStep(obs, mask, to_move, reward, terminated, truncated, rank, final_obs)
        return self._current

    def _observation(self, rows: np.ndarray):
        """The game's ``_observe(rows)``, a Box game's placeholder mask put in."""
        obs, mask, to_move = self._observe(rows)
        return obs, (to_move[..., None].copy() if mask is None else mask), to_move

    def _check_actions(self, actions: np.ndarray) -> np.ndarray:
        """The actions the game sees: int64 ``[B, S]`` (0 for seats not to move), or a Box game's clipped float32
        ``[B, S, *action_shape]``; EnvError naming the game, the seat and the action where one is wrong."""
        B, S = self.num_envs, self.num_seats
        current = cast(MultiSeatStep, self._current)
        if is_continuous(self.action_space):
            space = cast(spaces.Box, self.action_space)
            if actions.shape != (B, S) + tuple(space.shape):
                raise EnvError(f'{self.label}: actions of shape {actions.shape}; expected {(B, S) + space.shape} '
                               f'(num_envs, seats, *action_shape) for {space!r}')
            return clip_box_actions(actions, space, current.to_move, self.label, self.agents)
        if actions.shape != (B, S) or actions.dtype.kind not in 'iu':
            raise EnvError(f'{self.label}: actions of shape {actions.shape} and dtype {actions.dtype}; expected '
                           f'integers [{B}, {S}] (a column per seat)')
        n = current.action_mask.shape[-1]
        moving = current.to_move
        in_range = (actions >= 0) & (actions < n)
        legal = np.zeros_like(moving)
        legal[in_range] = current.action_mask[np.nonzero(in_range) + (actions[in_range],)]
        bad = moving & ~legal
        if bad.any():
            b, s = (int(i[0]) for i in np.nonzero(bad))
            raise EnvError(f'{self.label}: seat {s} of game {b} played {int(actions[b, s])}, which is not legal; '
                           f'legal actions: {np.flatnonzero(current.action_mask[b, s]).tolist()}')
        return np.where(moving, actions, 0).astype(np.int64)

    def _close(self) -> None:
        pass

    def _reset_games(self, rows: np.ndarray) -> None:
        raise NotImplementedError

    def _advance(self, actions: np.ndarray):
        raise NotImplementedError

    def _observe(self, rows: np.ndarray):
        raise NotImplementedError
