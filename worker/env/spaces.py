"""How one env's spaces map onto batched numpy arrays.

The env managers batch the spaces that a flat array can hold: ``Box``, ``Discrete``,
``MultiDiscrete`` and ``MultiBinary``. :func:`batch_obs_dtype` picks the dtype of an observation
batch; :class:`ActionBatch` checks a batch of actions before any env sees it and clips ``Box``
actions to the space bounds.
"""
from __future__ import annotations

from typing import List

import numpy as np
from gymnasium import spaces

from sparring.worker.env.errors import EnvError

BATCHABLE_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def check_batchable(space, role: str, label: str) -> None:
    """Raise :class:`EnvError` unless ``space`` (the env's ``role``) can be stacked into one array."""
    if not isinstance(space, BATCHABLE_SPACES):
        raise EnvError(
            f'{label}: its {role} {space!r} cannot be batched by the env managers; expected a Box, '
            f'Discrete, MultiDiscrete or MultiBinary space (wrap Dict/Tuple observations, e.g. with '
            f'gymnasium.wrappers.FlattenObservation)')


def batch_obs_dtype(space) -> np.dtype:
    """float32 for real-valued Box, int64 for (Multi)Discrete; other spaces keep their own dtype.

    Integer Box observations (e.g. uint8 images) stay compact: widening them to float32 would
    quadruple the size of every trajectory chunk.
    """
    if isinstance(space, spaces.Box) and np.issubdtype(space.dtype, np.floating):
        return np.dtype(np.float32)
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        return np.dtype(np.int64)
    return np.dtype(space.dtype)


class ActionBatch:
    """Validates a ``[num_envs, *action_shape]`` batch of actions and splits it per env.

    ``Box`` actions are clipped to the bounds (the policy's own, unclipped actions are left
    untouched: :meth:`prepare` returns a new array). Integer spaces are range-checked instead,
    since an out-of-range discrete action is a bug, not noise to clip away.
    """

    def __init__(self, space, num_envs: int, label: str) -> None:
        check_batchable(space, 'action_space', label)
        self.space = space
        self.label = label
        self.shape = (num_envs,) + tuple(space.shape)
        self.is_box = isinstance(space, spaces.Box)
        # Discrete actions go to the envs as Python ints, which every env accepts.
        self.is_scalar = isinstance(space, spaces.Discrete)
        if self.is_box:
            self.dtype = np.dtype(space.dtype)
            self.low, self.high = space.low, space.high
            self.accepted_kinds = 'iuf'
        else:
            if isinstance(space, spaces.Discrete):
                self.low, self.high = int(space.start), int(space.start + space.n - 1)
            elif isinstance(space, spaces.MultiDiscrete):
                self.low, self.high = space.start, space.start + space.nvec - 1
            else:  # MultiBinary
                self.low, self.high = 0, 1
            self.dtype = np.dtype(np.int64) if self.is_scalar else np.dtype(space.dtype)
            self.accepted_kinds = 'iu'

    def prepare(self, actions) -> np.ndarray:
        """The checked (and, for Box, clipped) batch as a new array of the space's dtype."""
        batch = np.asarray(actions)
        if batch.shape != self.shape:
            raise EnvError(f'{self.label}: actions of shape {batch.shape} do not fit {self.space!r}; expected '
                           f'shape {self.shape} (num_envs first)')
        if batch.dtype.kind not in self.accepted_kinds:
            expected = 'numbers' if self.is_box else 'integers'
            raise EnvError(f'{self.label}: actions of dtype {batch.dtype} for {self.space!r}; expected {expected}')
        if self.is_box:
            if batch.dtype.kind == 'f':
                total = np.add.reduce(batch, None)  # NaN or inf in, NaN or inf out: one cheap reduction
                if total - total and not np.isfinite(batch).all():
                    raise EnvError(f'{self.label}: actions contain NaN or inf for envs '
                                   f'{_rows_where(~np.isfinite(batch))}; expected finite numbers')
            # maximum/minimum rather than np.clip, whose Python wrapper costs several microseconds.
            clipped = np.maximum(batch, self.low)
            return np.minimum(clipped, self.high, out=clipped).astype(self.dtype, copy=False)
        if self.is_scalar:
            values = batch.tolist()  # Python min/max beat numpy reductions on a few envs
            in_range = min(values) >= self.low and max(values) <= self.high
        else:
            in_range = not ((batch < self.low) | (batch > self.high)).any()
        if not in_range:
            bad = (batch < self.low) | (batch > self.high)
            raise EnvError(f'{self.label}: actions out of range for envs {_rows_where(bad)} '
                           f'(got {batch[_row_mask(bad)].tolist()}); expected values in {self.space!r}')
        # A copy, so an env that keeps a reference to its action never sees the caller reuse it.
        return batch.astype(self.dtype, copy=True)

    def split(self, batch: np.ndarray) -> List:
        """One action per env: Python ints for Discrete, rows of ``batch`` otherwise."""
        return batch.tolist() if self.is_scalar else list(batch)


def _row_mask(mask: np.ndarray) -> np.ndarray:
    return np.any(mask.reshape(mask.shape[0], -1), axis=1)


def _rows_where(mask: np.ndarray) -> List[int]:
    return np.flatnonzero(_row_mask(mask)).tolist()
