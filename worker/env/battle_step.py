"""One vectorised step of B battle games, read seat by seat, and the per-seat layouts of spaces and actions.

A symmetric game stacks its seat-dependent fields over seats (``[B, S, ...]``); a game whose seats have roles
holds one array per seat. The accessors here read and write either layout, so code that plays seats need not
know which kind of game it plays (the protocol itself is in :mod:`sparring.worker.env.battle_api`).
"""
from __future__ import annotations

from typing import Any, List, NamedTuple, Optional, Tuple, Union

import numpy as np
from gymnasium import spaces

from sparring.worker.env.errors import EnvError


def is_continuous(action_space) -> bool:
    """Whether a battle env's actions are continuous (a ``Box``) rather than indices (``Discrete``)."""
    return isinstance(action_space, spaces.Box)


def action_layout(action_space) -> Tuple[Tuple[int, ...], np.dtype]:
    """``(shape, dtype)`` of one seat's action: ``((), int64)`` for ``Discrete``, ``(shape, float32)`` for ``Box``."""
    if is_continuous(action_space):
        return tuple(action_space.shape), np.dtype(np.float32)
    return (), np.dtype(np.int64)


def clip_box_actions(batch: np.ndarray, space: spaces.Box, to_move: np.ndarray, label: str, agents) -> np.ndarray:
    """``Box`` actions ``[B, S, *shape]`` (``to_move`` ``[B, S]``) as a new float32 array clipped to the bounds, 0
    for seats not to move; :class:`EnvError` naming the game and seat where a seat to move played a value that is
    not a finite number (its shape already checked)."""
    if batch.dtype.kind not in 'iuf':
        raise EnvError(f'{label}: actions of dtype {batch.dtype}; expected numbers in {space!r}')
    movers = to_move.reshape(to_move.shape + (1,) * len(space.shape))
    if batch.dtype.kind == 'f':
        bad = ~np.isfinite(batch) & movers
        if bad.any():
            env, seat = (int(i) for i in np.argwhere(bad)[0][:2])
            raise EnvError(f'{label}: env {env}, seat {seat} ({agents[seat]}) played action '
                           f'{batch[env, seat].tolist()}; expected finite numbers in {space!r}')
    # maximum/minimum rather than np.clip, whose Python wrapper costs several microseconds.
    clipped = np.minimum(np.maximum(batch, space.low), space.high).astype(np.float32)
    if not to_move.all():  # the games never see the ignored actions of seats not to move
        clipped = np.where(movers, clipped, np.float32(0.0))
    return clipped


def mask_width(action_space) -> int:
    """The last axis of ``BattleStep.action_mask``: the number of actions, or 1 (the placeholder) for ``Box``."""
    return 1 if is_continuous(action_space) else int(action_space.n)


# A seat-dependent field: a stacked ``[B, S, ...]`` array (a symmetric game) or a tuple of one ``[B, ...]`` array per
# seat (a game with roles). Typed Any: the symmetric game's code indexes the stacked array directly, and what a
# game with roles holds is read through seat_view (the BattleStep.seat_* accessors).
SeatArrays = Any


class BattleStep(NamedTuple):
    """One vectorised step of B games (see the module docstring for each field).

    ``obs``, ``action_mask`` and ``final_obs`` are stacked over seats (``[B, S, ...]``) in a symmetric game and
    tuples of one ``[B, ...]`` array per seat in a game with roles; the ``seat_*`` accessors read either."""
    obs: SeatArrays
    action_mask: SeatArrays
    to_move: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    result: np.ndarray
    final_obs: SeatArrays

    @property
    def per_seat(self) -> bool:
        """Whether the seat-dependent fields are tuples of per-seat arrays (a game with roles)."""
        return isinstance(self.obs, tuple)

    @property
    def num_seats(self) -> int:
        return int(self.to_move.shape[1])

    def seat_obs(self, seat: int) -> np.ndarray:
        """Seat ``seat``'s observations ``[B, *obs_shape]`` (a view in a symmetric game)."""
        return seat_view(self.obs, seat)

    def seat_mask(self, seat: int) -> np.ndarray:
        """Seat ``seat``'s action masks ``[B, A]`` (``[B, 1]``, the placeholder, for a ``Box`` seat)."""
        return seat_view(self.action_mask, seat)

    def seat_final_obs(self, seat: int) -> np.ndarray:
        """Seat ``seat``'s finished games' last observations ``[B, *obs_shape]`` (``obs`` where none finished)."""
        return seat_view(self.final_obs, seat)


def seat_view(arrays: SeatArrays, seat: int) -> np.ndarray:
    """Seat ``seat``'s ``[B, ...]`` array of a seat-dependent field: its element of a per-seat tuple, or the
    column of a stacked ``[B, S, ...]`` array (a view: writing to it writes the stacked array)."""
    return arrays[seat] if isinstance(arrays, tuple) else arrays[:, seat]


def copy_seats(arrays: SeatArrays) -> SeatArrays:
    """A copy of a seat-dependent field in its own layout."""
    return tuple(a.copy() for a in arrays) if isinstance(arrays, tuple) else arrays.copy()


def seat_spaces(env) -> Tuple[Tuple[spaces.Space, ...], Tuple[spaces.Space, ...]]:
    """``(observation spaces, action spaces)``, one per seat, of a vectorised battle env of either kind."""
    return tuple(env.observation_spaces), tuple(env.action_spaces)


def zero_actions(env) -> Union[np.ndarray, List[np.ndarray]]:
    """Zero actions for every seat of every game of ``env``, in the layout its ``step`` takes: ``[B, S]`` (or
    ``[B, S, *action_shape]``) in a symmetric game, a list of one ``[B, ...]`` array per seat in a game with
    roles (fill them with :func:`seat_action_rows`)."""
    B = env.num_envs
    if env.roles is None:
        shape, dtype = action_layout(env.action_space)
        return np.zeros((B, env.num_seats) + shape, dtype)
    return [np.zeros((B,) + shape, dtype) for shape, dtype in map(action_layout, env.action_spaces)]


def seat_action_rows(actions: Union[np.ndarray, List[np.ndarray]], seat: int) -> np.ndarray:
    """Seat ``seat``'s ``[B, ...]`` actions of a :func:`zero_actions` container, to write into."""
    return actions[seat] if isinstance(actions, list) else actions[:, seat]


def check_roles(roles, num_seats: int, label: str) -> Optional[Tuple[str, ...]]:
    """A game's ``roles`` as a tuple of names (None for a symmetric game), or :class:`EnvError` naming what was wrong."""
    if roles is None:
        return None
    if isinstance(roles, str) or not isinstance(roles, (tuple, list)) or len(roles) != num_seats:
        raise EnvError(f'{label}: roles is {roles!r}; expected None (a symmetric game) or a tuple of one role name '
                       f'per seat ({num_seats} seats)')
    for name in roles:
        if not (isinstance(name, str) and name and all(c.isalnum() or c in '_.-' for c in name)):
            raise EnvError(f'{label}: role {name!r} in roles {roles!r}; expected names of letters, digits, "_", '
                           f'"." or "-"')
    if len(set(roles)) < 2:
        raise EnvError(f'{label}: roles {tuple(roles)!r} name one role; expected at least two (a game whose seats '
                       f'all play the same role is symmetric: leave roles None)')
    return tuple(roles)
