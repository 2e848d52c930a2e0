"""Where the entries of a changed axis come from, and old policies played through such changes.

A :class:`FeatureMap` says, for every entry of a *new* axis (observation features, actions,
hidden units), which entry of the *old* axis it copies (``-1``: a new entry) and by how much the
old entry's outgoing weights are scaled (Net2Net splits share them). Surgery
(:mod:`sparring.policy.surgery`) uses it to reshape parameters; a :class:`SpaceAdapter` uses it
the other way round, so a policy frozen before a surgery still plays an env whose observations
or actions changed: it selects the old features from the new observation (filling removed ones
with a constant), narrows the action mask, and maps the actions it picks back.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, cast

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import torch

from sparring.config.schema import ConfigError
from sparring.policy.base import ActOutput, Policy


class SurgeryError(ConfigError):
    """A change of a network or its spaces that surgery cannot make, or a map that does not fit."""


class FeatureMap:
    """``source[j]``: the old index that new entry ``j`` copies, or -1 for a new entry.

    ``scale[j]`` multiplies the outgoing weights copied for entry ``j`` (1 unless a unit was split);
    for a new entry the outgoing weights start at zero, so its scale is 0.
    """

    def __init__(self, source: npt.ArrayLike, old_size: int, scale: Optional[npt.ArrayLike] = None,
                 name: str = 'axis') -> None:
        self.name = name
        self.source = np.asarray(source, dtype=np.int64).reshape(-1)
        self.old_size = int(old_size)
        bad = (self.source < -1) | (self.source >= self.old_size)
        if bad.any():
            raise SurgeryError(f'{name} map: source indices {self.source[bad].tolist()} out of range; expected -1 (a new '
                               f'entry) or an old index in [0, {self.old_size})')
        if scale is None:
            scale = (self.source >= 0).astype(np.float64)
        self.scale = np.asarray(scale, dtype=np.float64).reshape(-1)
        if self.scale.shape != self.source.shape:
            raise SurgeryError(f'{name} map: {len(self.scale)} scales for {len(self.source)} entries')

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def identity(cls, size: int, name: str = 'axis') -> 'FeatureMap':
        return cls(np.arange(size), size, name=name)

    @classmethod
    def appended(cls, old_size: int, new_size: int, name: str = 'axis') -> 'FeatureMap':
        """The old entries first, in order, then ``new_size - old_size`` new ones."""
        if new_size < old_size:
            raise SurgeryError(f'{name}: {old_size} -> {new_size} entries; removing entries needs names or an '
                               f'explicit map saying which ones go')
        return cls(np.concatenate([np.arange(old_size), np.full(new_size - old_size, -1)]), old_size, name=name)

    @classmethod
    def from_names(cls, old_names: Sequence[str], new_names: Sequence[str], name: str = 'axis') -> 'FeatureMap':
        """Entries matched by name: new names are new entries, missing ones were removed."""
        for label, names in (('old', old_names), ('new', new_names)):
            if len(set(names)) != len(names):
                dup = sorted({n for n in names if list(names).count(n) > 1})
                raise SurgeryError(f'{name}: the {label} names repeat {dup}; names must be unique to match entries')
        position = {n: i for i, n in enumerate(old_names)}
        return cls([position.get(n, -1) for n in new_names], len(old_names), name=name)

    @classmethod
    def widened(cls, old_size: int, new_size: int, method: str, rng: np.random.Generator,
                split_jitter: float = 0.0, name: str = 'axis') -> 'FeatureMap':
        """A hidden layer widened from ``old_size`` to ``new_size`` units.

        ``'zero'``: new units are appended; their outgoing weights start at zero. ``'split'``
        (Net2WiderNet): each new unit copies a randomly chosen old unit, and every group of copies
        shares the old outgoing weights in fractions summing to 1: halves for a unit split in two,
        jittered by up to ``split_jitter`` so the copies' gradients differ and they can drift apart.
        """
        if new_size < old_size:
            raise SurgeryError(f'{name}: {old_size} -> {new_size} units; narrowing a hidden layer is not supported '
                               f'(surgery widens only)')
        extra = new_size - old_size
        if extra == 0:
            return cls.identity(old_size, name=name)
        if method == 'zero':
            return cls.appended(old_size, new_size, name=name)
        if method != 'split':
            raise SurgeryError(f'{name}: unknown widening method {method!r}; expected "zero" or "split"')
        # Every old unit is split once before any is split twice.
        rounds = -(-extra // old_size)
        picks = np.concatenate([rng.permutation(old_size) for _ in range(rounds)])[:extra]
        source = np.concatenate([np.arange(old_size), picks])
        weight = 1.0 + split_jitter * rng.uniform(-1.0, 1.0, new_size)
        group_total = np.bincount(source, weights=weight, minlength=old_size)
        return cls(source, old_size, scale=weight / group_total[source], name=name)

    @classmethod
    def blocks(cls, base: 'FeatureMap', count: int, name: str = 'axis') -> 'FeatureMap':
        """``count`` stacked copies of ``base`` (an LSTM's gate rows: input, forget, cell, output)."""
        source = np.concatenate([np.where(base.source >= 0, g * base.old_size + base.source, -1) for g in range(count)])
        return cls(source, count * base.old_size, scale=np.tile(base.scale, count), name=name)

    # -- properties ---------------------------------------------------------------------------
    @property
    def new_size(self) -> int:
        return len(self.source)

    @property
    def added(self) -> np.ndarray:
        """Positions of the new entries."""
        return np.flatnonzero(self.source < 0)

    @property
    def removed(self) -> np.ndarray:
        """Old indices no new entry copies."""
        return np.setdiff1d(np.arange(self.old_size), self.source[self.source >= 0])

    @property
    def is_identity(self) -> bool:
        return bool(self.new_size == self.old_size and np.array_equal(self.source, np.arange(self.old_size))
                    and np.all(self.scale == 1.0))

    def positions(self) -> np.ndarray:
        """``[old_size]``: where each old entry is in the new axis (its first copy), -1 if removed."""
        out = np.full(self.old_size, -1, np.int64)
        kept = np.flatnonzero(self.source >= 0)
        for j in kept[::-1]:  # reversed, so the first copy wins
            out[self.source[j]] = j
        return out

    def gather(self, tensor: torch.Tensor, dim: int, fill: float | torch.Tensor = 0.0) -> torch.Tensor:
        """``tensor`` along ``dim`` re-indexed to the new axis; new entries hold ``fill``."""
        index = torch.as_tensor(np.maximum(self.source, 0))
        out = tensor.index_select(dim, index).clone()
        new = torch.as_tensor(self.source < 0)
        if new.any():
            shape = [1] * tensor.dim()
            shape[dim] = -1
            out = torch.where(new.reshape(shape), torch.as_tensor(fill, dtype=tensor.dtype), out)
        return out

    def describe(self, names: Optional[Sequence[str]] = None) -> str:
        """``'7 -> 8: +1 [7] (ball_intercept_y)'``, or ``'unchanged'``."""
        if self.is_identity:
            return 'unchanged'
        parts = [f'{self.old_size} -> {self.new_size}']
        added, removed = self.added, self.removed
        split = int(np.sum(self.source >= 0)) - (self.old_size - len(removed))
        if len(added):
            label = f' ({", ".join(names[i] for i in added)})' if names is not None else ''
            contiguous = len(added) > 2 and added[-1] - added[0] == len(added) - 1
            where = f'[{added[0]}..{added[-1]}]' if contiguous else str(added.tolist())
            parts.append(f'+{len(added)} at {where}{label}')
        if split:
            parts.append(f'{split} split')
        if len(removed):
            parts.append(f'-{len(removed)} (old {removed.tolist()})')
        return ': '.join([parts[0], ', '.join(parts[1:])]) if len(parts) > 1 else parts[0]

    def __repr__(self) -> str:
        return f'FeatureMap({self.name!r}, {self.describe()})'


def flat_size(space: gym.Space) -> int:
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    shape = space.shape
    assert shape is not None  # the spaces surgery supports are Discrete or have a shape
    return int(np.prod(shape))


def observation_map(old_space: gym.Space, new_space: gym.Space, old_names: Optional[Sequence[str]] = None,
                    new_names: Optional[Sequence[str]] = None) -> FeatureMap:
    """How new (flattened) observation features come from old ones: by name when both spaces
    have names; else the old features must be a prefix of the new ones (new features appended,
    e.g. a new last entry of a vector or a new first-axis plane of a board)."""
    if not isinstance(old_space, gym.spaces.Box) or not isinstance(new_space, gym.spaces.Box):
        if old_space == new_space:
            return FeatureMap.identity(flat_size(new_space), 'observation')
        raise SurgeryError(f'observation space {old_space} -> {new_space}: surgery changes Box observations only')
    if old_names is not None and new_names is not None:
        for label, names, space in (('old', old_names, old_space), ('new', new_names, new_space)):
            if len(names) != flat_size(space):
                raise SurgeryError(f'{label} observation names: {len(names)} names for {flat_size(space)} features '
                                   f'of {space}')
        return FeatureMap.from_names(old_names, new_names, 'observation')
    if old_space.shape == new_space.shape:
        return FeatureMap.identity(flat_size(new_space), 'observation')
    if len(old_space.shape) != len(new_space.shape) or old_space.shape[1:] != new_space.shape[1:]:
        raise SurgeryError(f'observation shape {old_space.shape} -> {new_space.shape}: cannot tell which features are '
                           f'new; give the env observation_names, or pass an explicit observation map')
    return FeatureMap.appended(flat_size(old_space), flat_size(new_space), 'observation')


def action_map(old_space: gym.Space, new_space: gym.Space, old_names: Optional[Sequence[str]] = None,
               new_names: Optional[Sequence[str]] = None) -> FeatureMap:
    """How new actions come from old ones: by name when both have names, else appended."""
    if isinstance(old_space, gym.spaces.Discrete) and isinstance(new_space, gym.spaces.Discrete):
        if old_names is not None and new_names is not None:
            return FeatureMap.from_names(old_names, new_names, 'action')
        return FeatureMap.appended(int(old_space.n), int(new_space.n), 'action')
    if old_space == new_space:
        return FeatureMap.identity(flat_size(new_space), 'action')
    raise SurgeryError(f'action space {old_space} -> {new_space}: surgery adds or removes Discrete actions only')


def as_feature_map(value, old_size: int, name: str) -> Optional[FeatureMap]:
    """A user's explicit map: a FeatureMap, a list of source indices (-1: new), or None."""
    if value is None or isinstance(value, FeatureMap):
        return value
    if isinstance(value, (list, tuple, np.ndarray)):
        return FeatureMap(value, old_size, name=name)
    raise SurgeryError(f'{name} map: expected a list of old indices (-1 for a new entry), got {value!r}')


# -- playing an old policy in a changed env ----------------------------------------------------

class SpaceAdapter:
    """Translates between the spaces a frozen policy was built for and the env's current ones.

    ``obs_index[k]``: where old feature k is in the current (flattened) observation, -1 if the
    env no longer has it, in which case ``obs_fill[k]`` stands in. ``action_index[k]``: the
    current index of old action k, -1 if the env dropped it (the adapter then masks it out).
    """

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, obs_index, obs_fill,
                 action_index) -> None:
        self.observation_space = observation_space
        self.action_space = action_space
        self.obs_index = np.asarray(obs_index, np.int64)
        self.obs_fill = np.asarray(obs_fill, np.float32)
        self.action_index = np.asarray(action_index, np.int64)
        self._obs_shape = tuple(getattr(observation_space, 'shape', ()) or ())
        self._obs_missing = self.obs_index < 0
        self._obs_take = np.maximum(self.obs_index, 0)
        self._action_missing = self.action_index < 0
        # Box actions keep their dimensions (surgery changes Discrete actions only): passed through.
        self._discrete = isinstance(action_space, gym.spaces.Discrete)

    @classmethod
    def from_maps(cls, observation_space: gym.Space, action_space: gym.Space, obs_map: FeatureMap,
                  act_map: FeatureMap, obs_fill: Optional[np.ndarray] = None) -> 'SpaceAdapter':
        """The adapter for a policy of the *old* spaces of a surgery with these maps."""
        fill = np.zeros(obs_map.old_size, np.float32) if obs_fill is None else obs_fill
        return cls(observation_space, action_space, obs_map.positions(), fill, act_map.positions())

    def then(self, obs_map: FeatureMap, act_map: FeatureMap, obs_fill: Optional[np.ndarray] = None) -> 'SpaceAdapter':
        """This adapter after one more surgery of the env's spaces (maps from the latest surgery)."""
        obs_pos, act_pos = obs_map.positions(), act_map.positions()
        fill = self.obs_fill.copy()
        obs_index = np.where(self.obs_index >= 0, obs_pos[np.maximum(self.obs_index, 0)], -1)
        dropped_now = (self.obs_index >= 0) & (obs_index < 0)
        if obs_fill is not None:
            fill[dropped_now] = obs_fill[self.obs_index[dropped_now]]
        action_index = np.where(self.action_index >= 0, act_pos[np.maximum(self.action_index, 0)], -1)
        return SpaceAdapter(self.observation_space, self.action_space, obs_index, fill, action_index)

    def observations(self, obs: np.ndarray) -> np.ndarray:
        flat = np.asarray(obs).reshape(len(obs), -1)
        old = flat[:, self._obs_take]
        if self._obs_missing.any():
            old = old.astype(np.float32, copy=True)
            old[:, self._obs_missing] = self.obs_fill[self._obs_missing]
        return old.reshape(len(obs), *self._obs_shape)

    def action_mask(self, mask: Optional[np.ndarray], batch: int) -> Optional[np.ndarray]:
        """The old policy's mask: the current mask's entries of its actions, none of the dropped ones."""
        if not self._discrete:
            return mask
        if mask is None:
            if not self._action_missing.any():
                return None
            return np.tile(~self._action_missing, (batch, 1))
        old = np.asarray(mask)[:, np.maximum(self.action_index, 0)]
        return old & ~self._action_missing

    def actions(self, old_actions: np.ndarray, mask: Optional[np.ndarray]) -> np.ndarray:
        """The old policy's actions as current ones. Where none of its actions was legal (it then
        picks any), the first legal current action is taken instead."""
        if not self._discrete:
            return old_actions
        actions = self.action_index[np.asarray(old_actions)]
        if mask is None:
            actions[actions < 0] = 0
            return actions
        mask = np.asarray(mask)
        illegal = (actions < 0) | ~mask[np.arange(len(actions)), np.maximum(actions, 0)]
        if illegal.any():
            actions[illegal] = mask[illegal].argmax(axis=1)
        return actions

    def to_dict(self) -> Dict[str, Any]:
        return dict(observation_space=self.observation_space, action_space=self.action_space,
                    obs_index=self.obs_index, obs_fill=self.obs_fill, action_index=self.action_index)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> 'SpaceAdapter':
        return cls(d['observation_space'], d['action_space'], d['obs_index'], d['obs_fill'], d['action_index'])


class AdaptedPolicy(Policy):
    """A frozen policy of older spaces, acting in the current env through a :class:`SpaceAdapter`."""

    def __init__(self, inner: Policy, adapter: SpaceAdapter, observation_space: Optional[gym.Space] = None,
                 action_space: Optional[gym.Space] = None) -> None:
        # Policy's spaces are given, except here: an adapted policy built without them copes (action_probabilities)
        super().__init__(inner.cfg, observation_space, action_space, inner.seed)  # type: ignore[arg-type]
        self.inner = inner
        self.adapter = adapter
        self.continuous = getattr(inner, 'continuous', False)

    @property
    def version(self) -> int:
        return self.inner.version

    @property
    def recurrent(self) -> bool:  # type: ignore[override]  # read from the inner policy, never set
        return getattr(self.inner, 'recurrent', False)

    def initial_state(self, batch_size: int) -> Any:
        return self.inner.initial_state(batch_size)

    def act(self, obs: np.ndarray, state: Any = None, deterministic: bool = False,
            action_mask: Optional[np.ndarray] = None) -> ActOutput:
        old_mask = self.adapter.action_mask(action_mask, len(obs))
        out = self.inner.act(self.adapter.observations(obs), state, deterministic, old_mask)
        return out._replace(action=self.adapter.actions(out.action, action_mask))

    def value(self, obs: np.ndarray, state: Any = None) -> np.ndarray:
        return self.inner.value(self.adapter.observations(obs), state)

    def action_probabilities(self, obs: np.ndarray, action_mask: Optional[np.ndarray] = None,
                             state: Any = None) -> np.ndarray:
        old_mask = self.adapter.action_mask(action_mask, len(obs))
        old = self.inner.action_probabilities(self.adapter.observations(obs), old_mask, state)
        n = (int(cast(gym.spaces.Discrete, self.action_space).n) if self.action_space is not None
             else int(self.adapter.action_index.max()) + 1)
        out = np.zeros((len(old), n), old.dtype)
        kept = self.adapter.action_index >= 0
        out[:, self.adapter.action_index[kept]] = old[:, kept]
        return out

    def learn(self, chunk, progress: float = 0.0):
        raise NotImplementedError('an adapted policy is a frozen snapshot from before a surgery; it does not learn')

    def get_params(self):
        return self.inner.get_params()

    def set_params(self, params, version: int) -> None:
        self.inner.set_params(params, version)

    def state_dict(self):
        return self.inner.state_dict()

    def load_state_dict(self, state) -> None:
        self.inner.load_state_dict(state)


def adapted_policy(entry: Dict[str, Any], observation_space: gym.Space, action_space: gym.Space,
                   seed: int = 0) -> AdaptedPolicy:
    """The frozen policy of a parameter-store entry with an ``adapter``, playing the current spaces."""
    from sparring.config.registry import POLICY_REGISTRY
    adapter = SpaceAdapter.from_dict(entry['adapter'])
    cfg = entry['policy_cfg']
    inner = POLICY_REGISTRY.get(cfg['type'])(cfg, adapter.observation_space, adapter.action_space, seed=seed)
    inner.set_params(entry['params'], entry['version'])
    return AdaptedPolicy(inner, adapter, observation_space, action_space)
