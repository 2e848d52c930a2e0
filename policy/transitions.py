"""The batch SAC's and DQN's updates read: n-step transitions, one per row, as typed fields.

:func:`~sparring.policy.replay_buffer.chunk_transitions` builds them from a chunk (from the fields the policy's
chunk spec names: the observations, the actions, ``next_obs`` to bootstrap from, a battle's action masks and
opponent tags); a replay buffer stores them column by column (:meth:`Transitions.columns`, the layout of its
checkpoints) and gives a draw back as columns (:meth:`Transitions.of`); :meth:`Transitions.map` moves a batch to
tensors or slices it. An update reads ``batch.obs``, ``batch.ret``, ``batch.next_mask``: a field the batch lacks
is None, never a missing key.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Generic, Mapping, Optional, TypeVar

A = TypeVar('A')  # what the fields are: numpy arrays, or torch tensors on the learner's device
B = TypeVar('B')


@dataclasses.dataclass(frozen=True)
class Transitions(Generic[A]):
    obs: A  # [N, *obs_shape] where the move was chosen
    action: A  # [N] indices (Discrete) or [N, *action_shape] (Box)
    ret: A  # [N] the n-step discounted reward
    discount: A  # [N] gamma ** n, 0 where the episode terminated within the n steps
    next_obs: A  # [N, *obs_shape] what the value bootstraps from
    mask: Optional[A] = None  # [N, A] the legal actions where the move was chosen (Discrete battles)
    next_mask: Optional[A] = None  # [N, A] the legal actions where it bootstraps
    opponent: Optional[A] = None  # [N] whom the move was played against (league chunks that say so)
    opponent_version: Optional[A] = None  # [N] and at which parameter version

    @classmethod
    def of(cls, columns: Mapping[str, A]) -> 'Transitions[A]':
        """Transitions from columns by name (a replay buffer's draw); ValueError naming a column of no field."""
        unknown = sorted(set(columns) - FIELD_NAMES)
        if unknown:
            raise ValueError(f'Transitions: unknown column(s) {unknown}; expected among {sorted(FIELD_NAMES)}')
        return cls(**columns)

    def columns(self) -> Dict[str, A]:
        """The fields this batch holds, by name, in the fields' order (a replay buffer's columns)."""
        return {name: value for name in FIELD_ORDER if (value := getattr(self, name)) is not None}

    def map(self, fn: Callable[[A], B]) -> 'Transitions[B]':
        """``fn`` applied to every field held (to tensors, a slice of rows, ...)."""
        return Transitions.of({name: fn(value) for name, value in self.columns().items()})

    def replace(self, **changes: Any) -> 'Transitions[A]':
        return dataclasses.replace(self, **changes)


FIELD_ORDER = tuple(f.name for f in dataclasses.fields(Transitions))
FIELD_NAMES = frozenset(FIELD_ORDER)
