"""Double-buffered rollouts for forward-pass workers: a collector's envs in two halves that take turns.

While one half waits for its forward pass to come back, the other steps its envs (Sample Factory's
double-buffered sampling), so the round trip is hidden behind env work instead of added to it. Each half is an
ordinary collector of the run's kind over half the envs, with policies of its own (its own socket to the
forward-pass workers and its own RNG draws) and its own job feed; the two run in two threads, and a half
waiting on its socket holds no interpreter lock, so the other steps meanwhile. The interpreter's switch interval
is cut to :data:`SWITCH_SECONDS` in such a process: a reply that came in would otherwise wait up to 5 ms for
the stepping half to let go. The second half's thread takes the process's torch threads: OpenMP counts threads per
thread, and a thread left at its default draws and steps with a team of every core, whose members wait for each
other behind busy neighbours (tens of milliseconds a call on a loaded machine).

:func:`join_chunks` makes one chunk of the two: columns side by side (the first half's, then the second's),
results (or, in a game of three or more seats, rankings) and episode figures in the same order, and the older of the two versions (staleness overstated, never
understated).
"""
from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict

import numpy as np
import torch

from sparring.worker.chunk import Chunk
from sparring.worker.runtime import set_torch_threads

SWITCH_SECONDS = 0.0002


def join_chunks(first: Chunk, second: Chunk) -> Chunk:
    if set(first.data) != set(second.data) or first.player_id != second.player_id:
        raise ValueError(f'join_chunks: the halves\' chunks differ in arrays or player: {sorted(first.data)} of '
                         f'{first.player_id!r} against {sorted(second.data)} of {second.player_id!r}')
    data = {k: np.concatenate([first.data[k], second.data[k]], axis=1) for k in first.data}
    return Chunk(data=data, version=min(first.version, second.version), player_id=first.player_id,
                 episode_returns=first.episode_returns + second.episode_returns,
                 episode_lengths=first.episode_lengths + second.episode_lengths,
                 results=first.results + second.results,
                 rankings=first.rankings + second.rankings,
                 env_steps=int(first.env_steps or 0) + int(second.env_steps or 0))  # both set by Chunk


class Halves:
    """Two collectors stepped at once (see the module); the collector interface: ``collect``, counters, ``close``."""

    def __init__(self, first, second) -> None:
        self.halves = (first, second)
        self.pool = ThreadPoolExecutor(1, thread_name_prefix='second-half', initializer=set_torch_threads,
                                       initargs=(torch.get_num_threads(),))
        self.collect_seconds = 0.0  # wall seconds: the halves' own seconds overlap
        if sys.getswitchinterval() > SWITCH_SECONDS:
            sys.setswitchinterval(SWITCH_SECONDS)

    def collect(self) -> Chunk:
        started = time.perf_counter()
        second = self.pool.submit(self.halves[1].collect)
        try:
            first = self.halves[0].collect()
        finally:
            done = second.result()  # waited for even when the first half failed: no thread left running
        self.collect_seconds += time.perf_counter() - started
        return join_chunks(first, done)

    def _sum(self, name: str):
        return sum(getattr(half, name) for half in self.halves)

    @property
    def env_steps(self) -> int:
        return self._sum('env_steps')

    @property
    def episodes(self) -> int:
        return self._sum('episodes')

    def state_dict(self) -> Dict[str, dict]:
        return dict(first=self.halves[0].state_dict(), second=self.halves[1].state_dict())

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        for half in self.halves:
            half.close()


class SharedLock:
    """A callable's calls made one at a time (the halves' job feeds share one connection to the commander)."""

    def __init__(self, call) -> None:
        self.call = call
        self.lock = threading.Lock()

    def __call__(self, *args, **kwargs):
        with self.lock:
            return self.call(*args, **kwargs)
