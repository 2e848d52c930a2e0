"""How a chunk becomes the tensors a PPO update trains on, grouped in units that minibatches draw.

Feed-forward policies train on single steps: the unit is a step, and only the steps to learn
from (``value_mask``, else ``train_mask``) are kept, as ``[N, ...]`` tensors. Recurrent policies
train on whole truncated-BPTT windows: the unit is a window of ``L`` consecutive steps of one
env column, fields are ``[L, U, ...]`` (U = windows x columns), ``keep`` ``[L, U]`` marks the
steps that count in the losses, ``state`` holds each window's initial recurrent state ``[U, ...]``
(recorded by the collector) and ``starts`` ``[L, U]`` the steps whose observation begins a new
episode (the state is zeroed there). Either way :attr:`TrainBatch.kept` gives the fields as flat
tensors over the kept steps, so the losses are computed alike.

A batch is read by attribute: ``batch.obs``, ``batch.adv`` in the batch's layout, ``batch.kept.adv``
over its kept steps; a field the batch does not hold (an action mask in a game without one, the
search's labels outside expert iteration) is None. What each field is:

* ``obs``, ``action``, ``log_prob`` (the behaviour's), ``value`` (the value when acting): from the chunk;
* ``adv``, ``ret``: the advantages and value targets worked out from it (GAE, or V-trace);
* ``mask``: the legal actions (Discrete games); ``acts``: the kept steps where an action was chosen,
  when not all of them (a turn-based game's value-only steps);
* ``search_policy``, ``policy_weight``: expert iteration's targets and the weight of each step's
  policy loss;
* ``old_head``, ``magnet_head``: what an objective keeps for the update (the heads before it, MMD's
  magnet's), set by the objective and dropped after it.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np
import torch

from sparring.policy.chunk_spec import STATE_PREFIX


class TrainBatch:
    """The fields a PPO update reads, in units (steps or windows) that minibatches draw (see the module)."""

    def __init__(self, fields: Dict[str, torch.Tensor], keep: Optional[torch.Tensor] = None,
                 state: Optional[Tuple[torch.Tensor, ...]] = None, starts: Optional[torch.Tensor] = None) -> None:
        self.fields = fields  # the storage the attributes read, by name (taken, joined and saved as a whole)
        self.keep = keep  # windows only; None: every step counts
        self.state = state  # windows only
        self.starts = starts  # windows only

    # -- the fields (see the module docstring) ---------------------------------------------------
    @property
    def obs(self) -> torch.Tensor:
        return self.fields['obs']

    @property
    def action(self) -> torch.Tensor:
        return self.fields['action']

    @property
    def log_prob(self) -> torch.Tensor:
        return self.fields['log_prob']

    @property
    def value(self) -> torch.Tensor:
        return self.fields['value']

    @property
    def adv(self) -> torch.Tensor:
        return self.fields['adv']

    @property
    def ret(self) -> torch.Tensor:
        return self.fields['ret']

    @property
    def mask(self) -> Optional[torch.Tensor]:
        return self.fields.get('mask')

    @property
    def acts(self) -> Optional[torch.Tensor]:
        return self.fields.get('acts')

    @property
    def search_policy(self) -> Optional[torch.Tensor]:
        return self.fields.get('search_policy')

    @property
    def policy_weight(self) -> Optional[torch.Tensor]:
        return self.fields.get('policy_weight')

    @property
    def old_head(self) -> Optional[torch.Tensor]:
        return self.fields.get('old_head')

    @old_head.setter
    def old_head(self, value: Optional[torch.Tensor]) -> None:
        self._set('old_head', value)

    @property
    def magnet_head(self) -> Optional[torch.Tensor]:
        return self.fields.get('magnet_head')

    @magnet_head.setter
    def magnet_head(self, value: Optional[torch.Tensor]) -> None:
        self._set('magnet_head', value)

    def _set(self, name: str, value: Optional[torch.Tensor]) -> None:
        """Hold ``value`` as field ``name``; None drops the field."""
        if value is None:
            self.fields.pop(name, None)
        else:
            self.fields[name] = value

    @property
    def kept(self) -> 'KeptSteps':
        """The fields as flat tensors over the kept steps (``[kept steps, ...]``)."""
        return KeptSteps(self)

    @property
    def windowed(self) -> bool:
        return self.state is not None

    @property
    def num_units(self) -> int:
        return int(self.fields['obs'].shape[1 if self.windowed else 0])

    @property
    def num_steps(self) -> int:
        """Steps that count in the losses."""
        if not self.windowed:
            return int(self.fields['obs'].shape[0])
        return int(self.keep.sum()) if self.keep is not None else int(np.prod(self.fields['obs'].shape[:2]))

    def take(self, units: torch.Tensor) -> 'TrainBatch':
        """The sub-batch of the given units (steps or windows)."""
        if not self.windowed:
            return TrainBatch({k: v[units] for k, v in self.fields.items()})
        assert self.state is not None and self.starts is not None  # windowed: both are there
        return TrainBatch({k: v[:, units] for k, v in self.fields.items()},
                          keep=None if self.keep is None else self.keep[:, units],
                          state=tuple(part[units] for part in self.state), starts=self.starts[:, units])

    def flatten_kept(self, tensor: torch.Tensor) -> torch.Tensor:
        """A tensor laid out like the fields (``[N, ...]`` or ``[L, U, ...]``) as ``[kept steps, ...]``."""
        if not self.windowed:
            return tensor
        flat = tensor.reshape(-1, *tensor.shape[2:])
        return flat if self.keep is None else flat[self.keep.reshape(-1)]

    def acting_steps(self, *tensors: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        """Flat per-step tensors (``[kept steps, ...]``) restricted to the steps where an action was chosen
        (``acts``); all of them when every kept step acts."""
        acts = self.kept.acts
        if acts is None:
            return tensors
        return tuple(t[acts] for t in tensors)

    @classmethod
    def concat(cls, batches, fill: Optional[Dict[str, float]] = None) -> 'TrainBatch':
        """Step batches one after another (windows carry recurrent states of their own batch: not those).

        A per-step field that some batches lack is refused, unless ``fill`` gives the value that means
        the same as its absence (a policy-loss weight of 1, say); the batches without it get that value."""
        if any(b.windowed for b in batches):
            raise ValueError('TrainBatch.concat joins step batches only, not BPTT windows')
        fill = dict(fill or {}, acts=True)  # 'acts' is dropped from a batch whose kept steps all act
        names = set().union(*(b.fields for b in batches))
        fields = {}
        for name in sorted(names):
            present = [b.fields[name] for b in batches if name in b.fields]
            if len(present) < len(batches) and name not in fill:
                raise ValueError(f'TrainBatch.concat: field {name!r} is in some batches only')
            like = present[0]
            fields[name] = torch.cat([b.fields[name] if name in b.fields else
                                      torch.full((b.num_units, *like.shape[1:]), fill[name], dtype=like.dtype,
                                                 device=like.device)
                                      for b in batches])
        return cls(fields)

    # -- checkpoints (a replayed batch is part of a learner's state) ---------------------------
    def state_dict(self) -> dict:
        return dict(fields=self.fields, keep=self.keep, state=self.state, starts=self.starts)

    @classmethod
    def from_state_dict(cls, state: dict) -> 'TrainBatch':
        return cls(state['fields'], state['keep'], state['state'], state['starts'])


class KeptSteps:
    """A batch's fields as flat tensors over its kept steps (``[kept steps, ...]``), read by attribute."""

    def __init__(self, batch: TrainBatch) -> None:
        self._batch = batch

    def _flat(self, tensor: torch.Tensor) -> torch.Tensor:
        return self._batch.flatten_kept(tensor)

    def _flat_optional(self, tensor: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        return None if tensor is None else self._batch.flatten_kept(tensor)

    @property
    def obs(self) -> torch.Tensor:
        return self._flat(self._batch.obs)

    @property
    def action(self) -> torch.Tensor:
        return self._flat(self._batch.action)

    @property
    def log_prob(self) -> torch.Tensor:
        return self._flat(self._batch.log_prob)

    @property
    def value(self) -> torch.Tensor:
        return self._flat(self._batch.value)

    @property
    def adv(self) -> torch.Tensor:
        return self._flat(self._batch.adv)

    @property
    def ret(self) -> torch.Tensor:
        return self._flat(self._batch.ret)

    @property
    def mask(self) -> Optional[torch.Tensor]:
        return self._flat_optional(self._batch.mask)

    @property
    def acts(self) -> Optional[torch.Tensor]:
        return self._flat_optional(self._batch.acts)

    @property
    def search_policy(self) -> Optional[torch.Tensor]:
        return self._flat_optional(self._batch.search_policy)

    @property
    def policy_weight(self) -> Optional[torch.Tensor]:
        return self._flat_optional(self._batch.policy_weight)

    @property
    def old_head(self) -> Optional[torch.Tensor]:
        return self._flat_optional(self._batch.old_head)

    @property
    def magnet_head(self) -> Optional[torch.Tensor]:
        return self._flat_optional(self._batch.magnet_head)


def present(tensor: Optional[torch.Tensor], name: str) -> torch.Tensor:
    """``tensor``, an optional field the caller needs (an objective's own); ValueError naming it if the batch lacks
    it."""
    if tensor is None:
        raise ValueError(f'PPO update: the batch holds no {name!r}, which this objective reads')
    return tensor


def _masks(chunk: Dict[str, np.ndarray]):
    """(``keep``, ``acts``) arrays: the steps trained at all, and those among them whose action is learnt.

    ``train_mask`` marks the steps whose action is learnt from (e.g. not where a turn-based
    player could not move); ``value_mask`` (a superset; default the same) also fits the value
    there, since GAE passes through those steps' values.
    """
    policy_mask = chunk.get('train_mask')
    keep = chunk.get('value_mask', policy_mask)
    acts = policy_mask if policy_mask is not None and keep is not policy_mask else None
    return keep, acts


def _float_obs(fields: Dict[str, torch.Tensor]) -> None:
    if fields['obs'].dtype == torch.float64:
        fields['obs'] = fields['obs'].float()


def step_batch(chunk: Dict[str, np.ndarray], advantages: np.ndarray, returns: np.ndarray) -> TrainBatch:
    """Single steps of a ``[T, B, ...]`` chunk, only those kept (feed-forward policies)."""
    keep, acts = _masks(chunk)
    flat = lambda x: torch.as_tensor(np.asarray(x)).reshape(-1, *np.shape(x)[2:])  # noqa: E731
    data = dict(obs=flat(chunk['obs']), action=flat(chunk['action']), log_prob=flat(chunk['log_prob']),
                value=flat(chunk['value']), adv=flat(advantages), ret=flat(returns))
    if 'action_mask' in chunk:
        data['mask'] = flat(chunk['action_mask']).bool()
    if 'search_policy' in chunk:  # expert iteration's targets (functional.search_target_loss)
        data['search_policy'] = flat(chunk['search_policy'])
    if 'policy_weight' in chunk:  # and the weight of each step's policy loss there
        data['policy_weight'] = flat(chunk['policy_weight'])
    if acts is not None:
        data['acts'] = flat(acts).bool()
    if keep is not None:
        index = torch.as_tensor(np.asarray(keep).reshape(-1), dtype=torch.bool)
        data = {k: v[index] for k, v in data.items()}
        if 'acts' in data and data['acts'].all():
            del data['acts']
    _float_obs(data)
    return TrainBatch(data)


def window_batch(chunk: Dict[str, np.ndarray], advantages: np.ndarray, returns: np.ndarray,
                 bptt_len: int) -> TrainBatch:
    """Whole ``bptt_len``-step windows of a chunk with their recorded initial states (recurrent policies)."""
    T, B = np.shape(chunk['reward'])
    state_keys = sorted((k for k in chunk if k.startswith(STATE_PREFIX)), key=lambda k: int(k[len(STATE_PREFIX):]))
    if not state_keys:
        raise ValueError(f'recurrent PPO: the chunk holds no window states ({STATE_PREFIX}<i> arrays); was it '
                         f'collected with a recurrent policy?')
    windows = int(np.shape(chunk[state_keys[0]])[0])
    if windows * bptt_len != T:
        raise ValueError(f'recurrent PPO: the chunk has {windows} windows over T = {T} steps, but the policy\'s '
                         f'bptt_len is {bptt_len}, so expected T / bptt_len = {T / bptt_len:g} windows (collector '
                         f'and learner must use the same model config)')

    def to_windows(x) -> torch.Tensor:
        arr = np.asarray(x)
        rest = arr.shape[2:]
        arr = arr.reshape(windows, bptt_len, B, *rest).swapaxes(0, 1).reshape(bptt_len, windows * B, *rest)
        return torch.as_tensor(np.ascontiguousarray(arr))

    keep, acts = _masks(chunk)
    data = dict(obs=to_windows(chunk['obs']), action=to_windows(chunk['action']),
                log_prob=to_windows(chunk['log_prob']), value=to_windows(chunk['value']),
                adv=to_windows(advantages), ret=to_windows(returns))
    if 'action_mask' in chunk:
        data['mask'] = to_windows(chunk['action_mask']).bool()
    keep_t = None if keep is None else to_windows(keep).bool()
    if acts is not None:
        acts_t = to_windows(acts).bool()
        if not (acts_t if keep_t is None else acts_t[keep_t]).all():
            data['acts'] = acts_t
    _float_obs(data)
    # The collector zeroed the state after every step that ended an episode; the learner does
    # the same before the next step's observation. A window's first step needs nothing: its
    # recorded state is already the one after any reset.
    done = np.logical_or(chunk['terminated'], chunk['truncated'])
    starts = np.zeros((T, B), dtype=bool)
    starts[1:] = done[:-1]
    state = tuple(torch.as_tensor(np.asarray(chunk[k])).reshape(windows * B, *np.shape(chunk[k])[2:])
                  for k in state_keys)
    return TrainBatch(data, keep=keep_t, state=state, starts=to_windows(starts))
