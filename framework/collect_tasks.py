"""Which player a collector works for next, and the back-pressure that keeps learners' data fresh.

Credit-based back-pressure: a player gets no new collect task while its learner has
``parallel.max_chunks_ahead`` chunks reported but not yet taken off its queue (learners say how
many they took with each publish), so a slow learner holds its collectors back instead of
training on stale data. Chunks reported before the player's current learner process joined went
to an older one and do not count against it.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Dict, Optional, Tuple

from sparring.framework.param_service import WAIT_SECONDS


class CollectTasks:
    def __init__(self, coordinator, par, chunk_steps: int) -> None:
        self.coordinator = coordinator
        self.chunk_steps = chunk_steps
        self.tasks: Dict[int, Tuple[str, str]] = {}  # collect task id -> (session, player)
        self.chunks_before_learner = {pid: 0 for pid in coordinator.player_ids}
        self.chunks_consumed = {pid: 0 for pid in coordinator.player_ids}
        self.max_ahead = par.max_chunks_ahead or max(1, par.collectors)
        self.last_player: Dict[str, str] = {}  # worker id -> player it collected for last
        self._next_id = 0

    def learner_joined(self, pid: str) -> None:
        """A new learner process for ``pid``: chunks sent to its predecessor are gone."""
        self.chunks_before_learner[pid] = self.coordinator.player_chunks[pid]
        self.chunks_consumed[pid] = 0

    def consumed(self, pid: str, chunks: int) -> None:
        self.chunks_consumed[pid] = max(self.chunks_consumed[pid], chunks)

    def expected_chunks(self, pid: str) -> int:
        """Chunks the current learner of ``pid`` was sent (what it must take before it has drained)."""
        return self.coordinator.player_chunks[pid] - self.chunks_before_learner[pid]

    def chunks_ahead(self, pid: str) -> int:
        """Chunks reported for ``pid`` that its learner has not taken off its queue yet."""
        return self.expected_chunks(pid) - self.chunks_consumed[pid]

    def release(self, worker, task_id: Optional[int] = None) -> None:
        """The worker's task is over (its chunk was reported, or will never be): hand its budget back."""
        if worker.task_id is not None and (task_id is None or task_id == worker.task_id):
            self.tasks.pop(worker.task_id, None)
            worker.task_id = None

    def next_task(self, worker, learner_endpoint: Callable[[str], Optional[str]], live) -> Tuple[str, dict]:
        """``(reply kind, body)``: a task for the player furthest behind its share, or a wait."""
        co = self.coordinator
        if co.env_steps + len(self.tasks) * self.chunk_steps >= co.cfg.train.max_env_steps:
            return 'wait', dict(seconds=WAIT_SECONDS, reason='the env-step budget is handed out')
        busy = defaultdict(int)
        for _, pid in self.tasks.values():
            busy[pid] += 1
        ready = [pid for pid in co.player_ids if pid in live and learner_endpoint(pid) is not None]
        if not ready:
            return 'wait', dict(seconds=WAIT_SECONDS, reason='no learner has published parameters yet')
        ready = [pid for pid in ready if self.chunks_ahead(pid) + busy[pid] < self.max_ahead]
        if not ready:
            return 'wait', dict(seconds=WAIT_SECONDS / 4, reason='the learners are behind')
        previous = self.last_player.get(worker.worker_id)
        # Ties keep the collector on its last player (its envs are warm).
        steps = co.player_env_steps
        pid = min(ready, key=lambda p: (steps[p] + busy[p] * self.chunk_steps, p != previous, p))
        self._next_id += 1
        self.tasks[self._next_id] = (worker.session, pid)
        worker.task_id = self._next_id
        self.last_player[worker.worker_id] = pid
        return 'task', dict(task_id=worker.task_id, player_id=pid, endpoint=learner_endpoint(pid))
