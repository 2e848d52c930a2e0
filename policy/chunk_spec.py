"""The chunk spec: the arrays a policy's learner reads from a trajectory chunk, declared once by the policy.

A chunk is columnar: per-step arrays ``[T, B, ...]`` (T steps of B columns: an env each, or a battle game's
seats and team agents) and, for a recurrent policy, per-window arrays ``[W, B, ...]`` (the state at the start
of each of the W truncated-BPTT windows of ``T / W`` steps). A :class:`ChunkField` says of one array its
name, dtype, the shape after those two leading axes, whether it is per step or per window, whether its
values must be finite, and whether every chunk must carry it. A :class:`ChunkSpec` is the tuple of them a
policy declares with :meth:`~sparring.policy.base.Policy.chunk_spec`, given the :class:`ChunkSpaces` of the
run (the env's observation and action spaces, and whether chunks come from battles).

Everything that handles a chunk reads the same spec: collectors allocate their buffers from it (and record
an optional field exactly when the spec names it), the wire's size bound is computed from it, and
:meth:`ChunkSpec.validate` refuses, with one line naming the field, what was expected and what came, a
chunk that names a field the spec does not, lacks a required one, or holds one of the wrong dtype, shape,
or (where it matters) with values that are not finite or outside the field's range.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterator, Mapping, Optional, Sequence, Tuple, cast

import gymnasium as gym
import numpy as np

PER_STEP = 'step'  # [T, B, ...]
PER_WINDOW = 'window'  # [W, B, ...]: one row per truncated-BPTT window

# Per-window arrays are named with this prefix (a recurrent policy's state: ``window_state_<i>``).
WINDOW_PREFIX = 'window_'
STATE_PREFIX = WINDOW_PREFIX + 'state_'


class ChunkError(ValueError):
    """A chunk that does not fit its spec (one line: the field, what was expected, what came)."""


@dataclasses.dataclass(frozen=True)
class ChunkField:
    """One array of a chunk, as the spec declares it."""
    name: str
    dtype: Any  # anything ``np.dtype`` takes (np.float32, 'int64'); held as an ``np.dtype``
    shape: Tuple[int, ...] = ()  # after the leading [T, B] (or [W, B])
    finite: bool = False  # floats: NaN and infinities are refused
    per: str = PER_STEP
    required: bool = True
    bounds: Optional[Tuple[int, int]] = None  # integers: values in [low, high)

    def __post_init__(self) -> None:
        object.__setattr__(self, 'dtype', np.dtype(self.dtype))
        object.__setattr__(self, 'shape', tuple(int(n) for n in self.shape))
        if self.per not in (PER_STEP, PER_WINDOW):
            raise ValueError(f'ChunkField {self.name!r}: per must be {PER_STEP!r} or {PER_WINDOW!r}, got {self.per!r}')
        if (self.per == PER_WINDOW) != self.name.startswith(WINDOW_PREFIX):
            raise ValueError(f'ChunkField {self.name!r}: per-window fields, and they alone, are named '
                             f'{WINDOW_PREFIX}<...>')

    @property
    def column_bytes(self) -> int:
        """Bytes of one column of one row (a step, or a window)."""
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def empty(self, lead: Sequence[int]) -> np.ndarray:
        """An uninitialised array ``[*lead, *shape]`` of this field's dtype."""
        return np.empty((*lead, *self.shape), dtype=self.dtype)

    def describe(self, lead: str) -> str:
        return f'{self.dtype} [{", ".join([lead, "B", *map(str, self.shape)])}]'

    def check(self, array, rows: Optional[int], columns: int, where: str, values: bool = True) -> None:
        """Raise ChunkError unless ``array`` is this field with ``rows`` leading rows (None: any) of ``columns``;
        ``values`` False checks the layout only (dtype and shape), not what the array holds."""
        lead = 'T' if self.per == PER_STEP else 'W'
        if not isinstance(array, np.ndarray):
            raise ChunkError(f'{where}: field {self.name!r} must be a numpy array {self.describe(lead)}, got '
                             f'{type(array).__name__}')
        if array.dtype != self.dtype:
            raise ChunkError(f'{where}: field {self.name!r} must be {self.describe(lead)}, got dtype {array.dtype}')
        if array.ndim != 2 + len(self.shape) or array.shape[1] != columns or array.shape[2:] != self.shape \
                or (rows is not None and array.shape[0] != rows):
            expected = self.describe(lead).replace('B', str(columns)).replace(lead, str(rows) if rows else lead, 1)
            raise ChunkError(f'{where}: field {self.name!r} must be {expected}, got shape {list(array.shape)}')
        if not values:
            return
        if self.finite and array.dtype.kind == 'f' and array.size and not np.isfinite(array).all():
            raise ChunkError(f'{where}: field {self.name!r} must hold finite values, got NaN or infinity')
        if self.bounds is not None and array.size:
            low, high = self.bounds
            got_low, got_high = array.min(), array.max()
            if got_low < low or got_high >= high:
                raise ChunkError(f'{where}: field {self.name!r} must hold values in [{low}, {high}), got '
                                 f'{got_low}..{got_high}')


@dataclasses.dataclass(frozen=True)
class ChunkSpaces:
    """What a policy's chunk spec is resolved from: one column's spaces, and whether chunks come from battles
    (their columns are seats of games: they add the steps to learn from, and a Discrete game's action masks)."""
    observation: gym.Space
    action: gym.Space
    battle: bool = False

    @classmethod
    def of(cls, policy, battle: bool = False) -> 'ChunkSpaces':
        """The spaces a policy was built for (a learner's view: the collector's env has the same)."""
        return cls(policy.observation_space, policy.action_space, battle)

    @property
    def observation_layout(self) -> Tuple[Tuple[int, ...], np.dtype]:
        """``(shape, dtype)`` of one column's observation: a battle env hands float32 whatever its space's dtype."""
        shape, dtype = observation_layout(self.observation)
        return shape, np.dtype(np.float32) if self.battle else dtype

    @property
    def discrete(self) -> bool:
        return isinstance(self.action, gym.spaces.Discrete)

    @property
    def num_actions(self) -> int:
        """The width of an action mask or a distribution over actions (Discrete actions only)."""
        if not isinstance(self.action, gym.spaces.Discrete):
            raise TypeError(f'chunk spec: a distribution over actions needs a Discrete action space, got {self.action}')
        return int(self.action.n)


def observation_layout(space: gym.Space) -> Tuple[Tuple[int, ...], np.dtype]:
    """``(shape, dtype)`` of one observation in a batch: float32 for a real-valued Box, int64 for (Multi)Discrete;
    other spaces keep their own dtype (integer images stay compact: widening them would quadruple every chunk).
    The env managers batch by the same rule (``worker/env/spaces.batch_obs_dtype``, which stays free of the
    policy floor so env subprocesses never import torch); a test holds the two together."""
    shape = tuple(space.shape or ())
    if isinstance(space, gym.spaces.Box) and np.issubdtype(space.dtype, np.floating):
        return shape, np.dtype(np.float32)
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
        return shape, np.dtype(np.int64)
    return shape, np.dtype(space.dtype)


def action_layout(space: gym.Space) -> Tuple[Tuple[int, ...], np.dtype]:
    """``(shape, dtype)`` of one action: ``((), int64)`` for ``Discrete``, ``(shape, float32)`` for ``Box`` (as a battle
    env takes them: ``worker/env/battle_step.action_layout``, held together by a test)."""
    if isinstance(space, gym.spaces.Box):
        return tuple(space.shape), np.dtype(np.float32)
    return (), np.dtype(np.int64)


@dataclasses.dataclass(frozen=True)
class ChunkSpec:
    """The fields of a policy's chunks; ``window_len`` (recurrent policies) the steps of one BPTT window."""
    fields: Tuple[ChunkField, ...]
    window_len: Optional[int] = None

    def __post_init__(self) -> None:
        names = [f.name for f in self.fields]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f'chunk spec: fields {twice} are declared twice')

    def __iter__(self) -> Iterator[ChunkField]:
        return iter(self.fields)

    def __contains__(self, name: object) -> bool:
        return any(f.name == name for f in self.fields)

    def __getitem__(self, name: str) -> ChunkField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f'chunk spec: no field {name!r}; it declares {self.names}')

    @property
    def names(self) -> Tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def plus(self, *fields: ChunkField, window_len: Optional[int] = None) -> 'ChunkSpec':
        """This spec with more fields (and a window length, for a recurrent policy)."""
        return ChunkSpec(self.fields + tuple(fields), self.window_len if window_len is None else window_len)

    def allocate(self, lead: Sequence[int], names: Sequence[str]) -> Dict[str, np.ndarray]:
        """Uninitialised per-step arrays ``[*lead, *shape]`` of the named fields those the spec declares."""
        return {name: self[name].empty(lead) for name in names if name in self}

    def column_step_bytes(self) -> int:
        """An upper bound on the bytes of one column of one step (a window's arrays counted at every step)."""
        return sum(f.column_bytes for f in self.fields)

    def validate(self, data: Mapping[str, object], where: str = 'chunk', values: bool = True) -> None:
        """Raise :class:`ChunkError` (one line) unless ``data`` holds exactly fields of this spec, each right;
        ``values`` False checks names, dtypes and shapes only (the wire's check, before the data is read)."""
        unknown = sorted(set(data) - set(self.names))
        if unknown:
            raise ChunkError(f'{where}: unexpected field {unknown[0]!r}; this policy\'s chunks hold {list(self.names)}')
        missing = [f.name for f in self.fields if f.required and f.name not in data]
        if missing:
            raise ChunkError(f'{where}: missing field {missing[0]!r}; this policy\'s chunks must hold '
                             f'{[f.name for f in self.fields if f.required]}')
        reward = data['reward']
        if not isinstance(reward, np.ndarray) or reward.ndim != 2:
            raise ChunkError(f'{where}: field \'reward\' must be float32 [T, B], got '
                             f'{list(getattr(reward, "shape", ())) or type(reward).__name__}')
        steps, columns = reward.shape
        windows = None
        if self.window_len:
            if steps % self.window_len:
                raise ChunkError(f'{where}: T = {steps} steps must be whole windows of {self.window_len} (the '
                                 f'policy\'s bptt_len)')
            windows = steps // self.window_len
        for f in self.fields:
            if f.name in data:
                f.check(data[f.name], steps if f.per == PER_STEP else windows, columns, where, values)
        if windows is None:  # window fields without a window length: they must agree and divide T
            counts = {cast(np.ndarray, data[f.name]).shape[0] for f in self.fields if f.per == PER_WINDOW and f.name in data}
            if len(counts) > 1 or any(n < 1 or steps % n for n in counts):
                raise ChunkError(f'{where}: per-window fields must share one number W of windows dividing T = '
                                 f'{steps}, got {sorted(counts)}')


def base_fields(spaces: ChunkSpaces) -> Tuple[ChunkField, ...]:
    """What every policy's chunk holds: the steps, what was done and valued at each, and how each ended; battle
    chunks add which steps to learn from and, with Discrete actions, the legal ones."""
    obs_shape, obs_dtype = spaces.observation_layout
    action_shape, action_dtype = action_layout(spaces.action)
    action = spaces.action
    bounds = (int(action.start), int(action.start + action.n)) if isinstance(action, gym.spaces.Discrete) else None
    fields = [
        ChunkField('obs', obs_dtype, obs_shape, finite=True),
        ChunkField('action', action_dtype, action_shape, finite=True, bounds=bounds),
        ChunkField('log_prob', np.float32, finite=True),
        ChunkField('value', np.float32, finite=True),
        ChunkField('reward', np.float32, finite=True),
        ChunkField('terminated', np.bool_),
        ChunkField('truncated', np.bool_),
        ChunkField('next_value', np.float32, finite=True),
    ]
    if spaces.battle:
        fields += [ChunkField('train_mask', np.bool_), ChunkField('value_mask', np.bool_)]
        if spaces.discrete:
            fields.append(ChunkField('action_mask', np.bool_, (spaces.num_actions,)))
    return tuple(fields)


def next_obs_field(spaces: ChunkSpaces) -> ChunkField:
    """The observation after each step (a finished episode's final one): for policies that bootstrap from it."""
    shape, dtype = spaces.observation_layout
    return ChunkField('next_obs', dtype, shape, finite=True)


def state_fields(state: Optional[Sequence]) -> Tuple[ChunkField, ...]:
    """A recurrent policy's state at the start of each window, from ``initial_state(1)``; none if feed-forward."""
    if state is None:
        return ()
    return tuple(ChunkField(f'{STATE_PREFIX}{i}', np.asarray(part).dtype, np.shape(part)[1:], finite=True,
                            per=PER_WINDOW) for i, part in enumerate(state))
