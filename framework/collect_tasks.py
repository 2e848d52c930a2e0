"""Which player a collector works for next, and the back-pressure that keeps learners' data fresh.

Credit-based back-pressure: a player gets no new collect task while its learner has
``parallel.max_chunks_ahead`` chunks reported but not yet taken off its queue (learners say how
many they took with each publish), so a slow learner holds its collectors back instead of
training on stale data. Chunks reported before the player's current learner process joined went
to an older one and do not count against it.

A chunk reported but never delivered must give its credit back, or a few of them would stop
collection for good. Learners acknowledge the chunks they receive (with their heartbeats), and a
chunk in flight is *reclaimed* when it is known lost: its collector says it could not deliver it;
a later chunk of the same collector reached the learner first (one collector's chunks travel in
order); its collector is gone and ``worker_timeout_seconds`` have passed; or it is twice that old
while the learner sits idle. A reclaimed chunk that turns up after all takes its credit again.
"""
from __future__ import annotations

import dataclasses
from collections import OrderedDict, defaultdict
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from sparring.framework.param_service import WAIT_SECONDS


@dataclasses.dataclass
class InFlight:
    session: str
    reported_at: float
    gone_at: Optional[float] = None  # when its collector's session ended


class CollectTasks:
    def __init__(self, coordinator, par, chunk_steps: int) -> None:
        self.coordinator = coordinator
        self.chunk_steps = chunk_steps
        self.tasks: Dict[int, Tuple[str, str, str]] = {}  # collect task id -> (session, player, learner endpoint)
        self.chunks_before_learner = {pid: 0 for pid in coordinator.player_ids}
        self.chunks_consumed = {pid: 0 for pid in coordinator.player_ids}
        # With replicas, every replica needs chunks in hand at once (they train in step): at least two each.
        self.replicas = par.learner_replicas
        # By default one chunk ahead per collector, and two with forward-pass workers: a lone collector whose
        # actions come from another process would otherwise take turns with its learner (forward_pass.py measured
        # 1,018 against 1,461 env steps/s, one collector and one forward-pass worker).
        at_least = 2 if par.inference.workers else 1
        self.max_ahead = max(par.max_chunks_ahead or max(at_least, par.collectors),
                             2 * self.replicas if self.replicas > 1 else 1)
        self.last_player: Dict[str, str] = {}  # worker id -> player it collected for last
        self.in_flight: Dict[str, 'OrderedDict[str, InFlight]'] = {pid: OrderedDict() for pid in coordinator.player_ids}
        self.reclaimed = {pid: 0 for pid in coordinator.player_ids}  # since the current learner joined
        self._reclaimed_ids: Set[str] = set()
        self._sent: Dict[str, int] = defaultdict(int)  # chunks handed out per learner endpoint
        self._next_id = 0

    def learner_joined(self, pid: str) -> None:
        """A new learner process for ``pid``: chunks sent to its predecessor are gone."""
        self.chunks_before_learner[pid] = self.coordinator.players[pid].chunks
        self.chunks_consumed[pid] = 0
        self._sent.clear()  # a new learner process (or group): the counts start again with its endpoints
        self.in_flight[pid].clear()
        self.reclaimed[pid] = 0

    def consumed(self, pid: str, chunks: int) -> None:
        self.chunks_consumed[pid] = max(self.chunks_consumed[pid], chunks)

    def expected_chunks(self, pid: str) -> int:
        """Chunks the current learner of ``pid`` will receive (what it must take before it has drained)."""
        return self.coordinator.players[pid].chunks - self.chunks_before_learner[pid] - self.reclaimed[pid]

    # -- chunks in flight ------------------------------------------------------------------------
    def reported(self, pid: str, chunk_id: str, session: str, now: float, sent_to: Optional[str] = None,
                 endpoints: Sequence[str] = ()) -> Optional[str]:
        """A chunk was reported; returns where it must go instead of ``sent_to`` (its task's learner), or None.

        A task names the learner that listened when it was handed out. If that learner has gone since (killed
        and restarted elsewhere), the chunk goes to one of ``endpoints``, the player's learners now; with none
        listening yet it is lost at once: pushed to the old address it can never arrive, and waiting for it
        would hold collection back until a timeout.
        """
        self.in_flight[pid][chunk_id] = InFlight(session, now)
        if sent_to is None or sent_to in endpoints:
            return None
        if not endpoints:
            self._reclaim(pid, [chunk_id])
            return None
        self.coordinator.counters['chunks_redirected'] += 1
        return self._least_sent(endpoints)

    def _least_sent(self, endpoints: Sequence[str]) -> str:
        """The learner endpoint sent the fewest chunks so far (replicas get their chunks in turn)."""
        endpoint = min(endpoints, key=lambda e: self._sent[e])
        self._sent[endpoint] += 1
        return endpoint

    def received(self, pid: str, chunk_ids: Iterable[str]) -> None:
        """The learner of ``pid`` has these chunks; earlier ones of the same collectors never will."""
        flying = self.in_flight[pid]
        for chunk_id in chunk_ids:
            if chunk_id in self._reclaimed_ids:  # reclaimed too early: it takes its credit again
                self._reclaimed_ids.discard(chunk_id)
                self.reclaimed[pid] -= 1
                self.coordinator.counters['chunks_reclaimed'] -= 1
                continue
            arrived = flying.pop(chunk_id, None)
            if arrived is None:
                continue
            overtaken = [cid for cid, f in flying.items() if f.session == arrived.session
                         and f.reported_at <= arrived.reported_at]
            self._reclaim(pid, overtaken)

    def undelivered(self, chunk_ids: Iterable[str]) -> None:
        """Chunks a collector reported but could not deliver."""
        for pid, flying in self.in_flight.items():
            self._reclaim(pid, [cid for cid in chunk_ids if cid in flying])

    def session_gone(self, session: str, now: float) -> None:
        for flying in self.in_flight.values():
            for f in flying.values():
                if f.session == session and f.gone_at is None:
                    f.gone_at = now

    def sweep(self, now: float, timeout: float, learner_idle: Callable[[str], bool]) -> None:
        """Reclaim chunks that cannot arrive any more (see the module docstring)."""
        for pid, flying in self.in_flight.items():
            lost = [cid for cid, f in flying.items()
                    if (f.gone_at is not None and now - f.gone_at > timeout)
                    or (now - f.reported_at > 2 * timeout and learner_idle(pid))]
            self._reclaim(pid, lost)

    def _reclaim(self, pid: str, chunk_ids) -> None:
        for chunk_id in chunk_ids:
            if self.in_flight[pid].pop(chunk_id, None) is not None:
                self._reclaimed_ids.add(chunk_id)
                self.reclaimed[pid] += 1
                self.coordinator.counters['chunks_reclaimed'] += 1

    def chunks_ahead(self, pid: str) -> int:
        """Chunks reported for ``pid`` that its learner has not taken off its queue yet."""
        return self.expected_chunks(pid) - self.chunks_consumed[pid]

    def release(self, worker, task_id: Optional[int] = None) -> Optional[str]:
        """The worker's task is over (its chunk was reported, or will never be): hand its budget back. Returns
        the learner endpoint the task named, if it was the worker's current task."""
        if worker.task_id is not None and (task_id is None or task_id == worker.task_id):
            task = self.tasks.pop(worker.task_id, None)
            worker.task_id = None
            return None if task is None else task[2]
        return None

    def next_task(self, worker, learner_endpoints: Callable[[str], List[str]], live) -> Tuple[str, dict]:
        """``(reply kind, body)``: a task for the player furthest behind its share, or a wait. A player with
        several learner replicas has its chunks sent to each in turn."""
        co = self.coordinator
        if co.env_steps + len(self.tasks) * self.chunk_steps >= co.cfg.train.max_env_steps:
            return 'wait', dict(seconds=WAIT_SECONDS, reason='the env-step budget is handed out')
        busy: Dict[str, int] = defaultdict(int)
        for _, pid, _ in self.tasks.values():
            busy[pid] += 1
        # A player with replicas gets chunks once every replica listens, so none is left without its share.
        ready = [pid for pid in co.player_ids if pid in live and len(learner_endpoints(pid)) >= self.replicas]
        if not ready:
            return 'wait', dict(seconds=WAIT_SECONDS, reason='no learner has published parameters yet')
        ready = [pid for pid in ready if self.chunks_ahead(pid) + busy[pid] < self.max_ahead]
        if not ready:
            return 'wait', dict(seconds=WAIT_SECONDS / 4, reason='the learners are behind')
        previous = self.last_player.get(worker.worker_id)
        # Ties keep the collector on its last player (its envs are warm).
        pid = min(ready, key=lambda p: (co.players[p].env_steps + busy[p] * self.chunk_steps, p != previous, p))
        self._next_id += 1
        endpoint = self._least_sent(learner_endpoints(pid))
        self.tasks[self._next_id] = (worker.session, pid, endpoint)
        worker.task_id = self._next_id
        self.last_player[worker.worker_id] = pid
        return 'task', dict(task_id=worker.task_id, player_id=pid, endpoint=endpoint)
