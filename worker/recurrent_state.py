"""Recurrent-state bookkeeping shared by the collectors, the battle arena and the evaluator.

A recurrent policy's state is a tuple of batch-first numpy arrays (``policy.initial_state(B)``,
zeros); a feed-forward policy's is ``None``, and every helper here passes ``None`` through, so
callers need no separate code path. The state lives with whoever steps the envs, never in the
policy: one policy object acts for many env columns, collectors and arenas at once.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, Optional, Tuple

import numpy as np

from sparring.policy.chunk_spec import STATE_PREFIX

State = Optional[Tuple[np.ndarray, ...]]


def is_recurrent(policy) -> bool:
    return bool(getattr(policy, 'recurrent', False))


def initial_state(policy, batch_size: int) -> State:
    """Zeros for ``batch_size`` columns, or None for a feed-forward policy."""
    return tuple(policy.initial_state(batch_size)) if is_recurrent(policy) else None


def take_rows(state: State, rows) -> State:
    """The state of the rows (an index, index array or bool mask over the leading axes)."""
    return None if state is None else tuple(part[rows] for part in state)


def put_rows(state: State, rows, values: State) -> None:
    """Write ``values`` into the rows of ``state`` in place."""
    if state is None:
        return
    if values is None:
        raise ValueError('a recurrent policy returned no state from act(); expected its next state')
    for part, value in zip(state, values):
        part[rows] = value


def zero_rows(state: State, rows) -> None:
    """Start new episodes in the rows: a recurrent state begins every episode at zeros."""
    if state is not None:
        for part in state:
            part[rows] = 0


class OpponentStates:
    """The recurrent states of the opponents in play: one state per opponent policy, its rows laid out as ``lead``
    (a row per slot ``(B,)``, per slot and team agent ``(B, N)``, per slot and seat ``(B, S)``), so a policy that
    plays in several slots acts for all of them in one call. A feed-forward opponent has none (:meth:`of` is None).
    Iterating yields the ids of the policies that have a state.
    """

    def __init__(self, lead: Tuple[int, ...]) -> None:
        self.lead = tuple(int(n) for n in lead)
        self._states: Dict[int, Tuple[Any, Tuple[np.ndarray, ...]]] = {}

    def __iter__(self) -> Iterator[int]:
        return iter(self._states)

    def of(self, policy) -> State:
        """``policy``'s state (each part ``[*lead, ...]``), or None for a policy without one."""
        entry = self._states.get(id(policy))
        return None if entry is None else entry[1]

    def seat(self, policy, rows) -> None:
        """``policy`` begins a game in ``rows`` (an index into ``lead``): its state there starts at zeros."""
        if not is_recurrent(policy):
            return
        if id(policy) not in self._states:
            parts = policy.initial_state(int(np.prod(self.lead)))
            self._states[id(policy)] = (policy, tuple(p.reshape(*self.lead, *p.shape[1:]) for p in parts))
        zero_rows(self._states[id(policy)][1], rows)

    def keep(self, playing: Iterable) -> None:
        """Forget the states of the policies not among ``playing`` (no slot plays them any more)."""
        ids = {id(policy) for policy in playing}
        self._states = {k: v for k, v in self._states.items() if k in ids}

    def zero(self, rows) -> None:
        """New games in ``rows`` for every opponent."""
        for _, state in self._states.values():
            zero_rows(state, rows)


class WindowStates:
    """Records the state at the start of every window while a chunk is collected.

    The learner recomputes each window from its recorded state, so the chunk carries them as
    ``window_state_<i>`` arrays ``[W, B, ...]``; ``window_len`` is the policy's chunk spec's (its
    ``bptt_len``), None for a feed-forward policy, which records nothing.
    """

    def __init__(self, window_len: Optional[int], n_steps: int) -> None:
        self.bptt_len = window_len or n_steps
        if n_steps % self.bptt_len:
            raise ValueError(f'recurrent collection: n_steps = {n_steps} is not a multiple of the policy\'s '
                             f'bptt_len = {self.bptt_len}; every window must be whole')
        self.windows = n_steps // self.bptt_len
        self._parts: Optional[list] = None

    def record(self, t: int, state: State) -> None:
        """Keep a copy of ``state`` (each part ``[B, ...]``) if step ``t`` opens a window."""
        if state is None or t % self.bptt_len:
            return
        if self._parts is None:
            self._parts = [np.empty((self.windows, *part.shape), dtype=part.dtype) for part in state]
        for buffer, part in zip(self._parts, state):
            buffer[t // self.bptt_len] = part

    def arrays(self) -> Dict[str, np.ndarray]:
        """The chunk's ``window_state_<i>`` arrays (empty for a feed-forward policy)."""
        return {f'{STATE_PREFIX}{i}': part for i, part in enumerate(self._parts or [])}
