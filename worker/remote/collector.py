"""A collector process of the parallel mode.

It asks the commander which player to collect for, plays a chunk with that player's collector
(the serial mode's classes, built by the run's kind: a league player's games each get an opponent
drawn by the league, fetched in batches of jobs), reports the chunk's games to the commander and
streams the chunk straight to the player's learner. Parameters are fetched by version and cached.
"""
from __future__ import annotations

import json
import logging
import os
import time
from collections import deque
from typing import Callable, Deque, Dict, List, Tuple

from sparring.worker.remote.base import PlayerPolicies, Worker
from sparring.worker.remote.transport import DataPusher
from sparring.worker.run_files import open_run_file
from sparring.worker.run_kind import run_kind
from sparring.worker.seeds import collector_seed

log = logging.getLogger('sparring.worker')


class JobFeed:
    """League jobs (one opponent per game) for one home player, fetched in batches, and the game
    each env slot is playing, so every finished game is reported with its job id."""

    def __init__(self, worker: Worker, player_id: str, policy_of: Callable[[dict], object], batch: int) -> None:
        self.worker = worker
        self.player_id = player_id
        self.policy_of = policy_of
        self.batch = self.min_batch = batch
        self.queue: Deque[dict] = deque()
        self.playing: Dict[int, dict] = {}
        self.finished: List[dict] = []

    def top_up(self) -> None:
        """Fetch jobs ahead of the next chunk, once games are being played (a single agent plays none)."""
        if self.playing and len(self.queue) < self.batch:
            self._fetch(self.batch - len(self.queue))

    def _fetch(self, count: int) -> None:
        reply = self.worker.request('jobs', dict(player_id=self.player_id, count=count))
        self.queue.extend(reply.body['jobs'])

    def sample(self, slot: int):
        """The battle collector's opponent sampler: it asks when a slot starts a game, right after
        reporting the slot's previous game, so the two stay in step."""
        if slot in self.playing:
            self.finished.append(self.playing.pop(slot))
        while not self.queue:
            self._fetch(self.batch)
        job = self.queue.popleft()
        self.playing[slot] = job
        return job['opponent_id'], self.policy_of(job)

    def results_of(self, chunk) -> List[list]:
        """``[job_id, outcome]`` for the chunk's finished games, in order."""
        finished, self.finished = self.finished, []
        if len(finished) != len(chunk.results) or any(
                job['opponent_id'] != oid for job, (oid, _) in zip(finished, chunk.results)):
            raise RuntimeError(f'collector for {self.player_id}: {len(chunk.results)} finished games but '
                               f'{len(finished)} finished jobs; games and league jobs are out of step')
        # Keep about a chunk's worth of jobs in hand (games per chunk change as play changes); jobs
        # drawn long in advance would follow the league's opponent choice late.
        self.batch = max(self.min_batch, int(1.25 * len(finished)) + 1)
        return [[job['job_id'], outcome] for job, (_, outcome) in zip(finished, chunk.results)]


class CollectorWorker(Worker):
    role = 'collector'

    def run(self) -> None:
        self.register()
        self.kind = run_kind(self.cfg)
        self.observation_space, self.action_space = self.spaces()
        self.seed = collector_seed(self.cfg.seed, self.index)
        self.players = PlayerPolicies(self, self.seed)
        self.chunk_len = self.par.chunk_len or self.cfg.policy.collect.n_steps
        self.games: Dict[str, Tuple[object, JobFeed]] = {}
        self.pushers: Dict[str, DataPusher] = {}
        self.env_steps = 0
        self.games_accepted = 0
        audit = self.par.get('audit_reports')
        self.audit = open_run_file(os.path.join(self.workdir, 'reports.jsonl'), 'a') if audit else None
        self.undelivered = 0
        self.undelivered_ids: List[str] = []
        log.info('%s: registered with %s', self.worker_id, self.commander)
        try:
            self.work_on('collect_task', self._collect)
        finally:
            for pusher in self.pushers.values():
                pusher.close()
            for collector, _ in self.games.values():
                collector.close()
            if self.audit is not None:
                self.audit.close()
        self.goodbye()

    def task_request(self) -> dict:
        ids, self.undelivered_ids = self.undelivered_ids, []
        return dict(undelivered=ids) if ids else {}

    def _home(self, player_id: str):
        """The collector and the job feed of ``player_id``, made on first use."""
        if player_id not in self.games:
            feed = JobFeed(self, player_id, self._opponent_policy, batch=self.cfg.env.collector_env_num)
            collector = self.kind.collector(self.players.get(player_id), self.chunk_len, self.seed, player_id,
                                            self.player_ids.index(player_id), feed.sample)
            self.games[player_id] = (collector, feed)
        return self.games[player_id]

    def _opponent_policy(self, job: dict):
        if job['kind'] == 'active':  # a learning player: its newest parameters (itself, in self-play)
            return self.players.get(job['opponent_id'])
        return self.players.pool.get(job['param_ref'])

    def _collect(self, task: dict) -> None:
        pid = task['player_id']
        collector, feed = self._home(pid)
        self.players.refresh()
        feed.top_up()
        chunk = collector.collect()
        results = feed.results_of(chunk)
        self.env_steps += chunk.env_steps
        reply = self.request('chunk_report', dict(task_id=task['task_id'], chunk_id=chunk.chunk_id, player_id=pid,
                                                  version=chunk.version, env_steps=chunk.env_steps, results=results,
                                                  episode_returns=[float(r) for r in chunk.episode_returns]))
        self.games_accepted += reply.body.get('accepted', 0)  # the collector's own count, to check the league's
        if self.audit is not None:  # what the commander acknowledged, kept through a kill
            self.audit.write(json.dumps(dict(chunk=chunk.chunk_id, games=len(results),
                                             accepted=reply.body.get('accepted', 0))) + '\n')
            self.audit.flush()
        # The task's learner may have been restarted elsewhere meanwhile: the commander then names its successor.
        self._push(reply.body.get('endpoint') or task['endpoint'], pid, chunk)

    def _push(self, endpoint: str, pid: str, chunk) -> None:
        current = self.pushers.get(pid)
        if current is None or current.address != endpoint:
            if current is not None:  # the player's learner was restarted and listens elsewhere now
                current.close(linger=0)
            current = self.pushers[pid] = DataPusher(self.context, endpoint, self.security, self.worker_id,
                                                     queue=self.par.collector_queue)
        body = dict(chunk_id=chunk.chunk_id, player_id=pid, version=chunk.version, env_steps=chunk.env_steps)
        deadline = time.monotonic() + self.par.worker_timeout_seconds
        # Blocks while the learner's queue is full: a slow learner slows its collectors down.
        while not current.send('chunk', body, chunk.data, timeout=min(1.0, self.par.heartbeat_seconds)):
            self.check_alive()
            if self.directive == 'stop' or time.monotonic() > deadline:
                self.undelivered += 1
                self.undelivered_ids.append(chunk.chunk_id)  # told to the commander with the next task request
                log.warning('%s: the learner at %s took no chunk for %.0f s; chunk %s dropped', self.worker_id,
                            endpoint, self.par.worker_timeout_seconds, chunk.chunk_id)
                current.close(linger=0)
                del self.pushers[pid]
                return

    def stats(self) -> Dict[str, float]:
        return dict(env_steps=float(getattr(self, 'env_steps', 0)), undelivered=float(getattr(self, 'undelivered', 0)),
                    games_accepted=float(getattr(self, 'games_accepted', 0)))
