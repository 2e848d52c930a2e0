"""A collector process of the parallel mode.

It asks the commander which player to collect for, plays a chunk with that player's collector
(the serial mode's classes, built by the run's kind: a league player's games each get an opponent
drawn by the league, fetched in batches of jobs), reports the chunk's games to the commander and
streams the chunk straight to the player's learner. Parameters are fetched by version and cached.
"""
from __future__ import annotations

import copy
import functools
import json
import logging
import os
import time
from collections import deque
from typing import Any, Callable, Deque, Dict, List, Literal, Sequence, Tuple, Union

from sparring.worker.inference_client import ForwardClient, RemotePlayerPolicies
from sparring.worker.inference_halves import Halves, SharedLock
from sparring.worker.remote.base import PlayerPolicies, Worker
from sparring.worker.remote.inference import inference_addresses
from sparring.worker.remote.protocol import ChunkReportBody, JobsBody, TaskBody
from sparring.worker.remote.security import Security
from sparring.worker.remote.transport import DataPusher
from sparring.worker.remote.wire import Message
from sparring.worker.run_files import open_run_file
from sparring.worker.run_kind import run_kind
from sparring.worker.seeds import collector_seed

FORWARD_ATTEMPT_SECONDS = 2.0  # a forward pass takes milliseconds: silence this long means a dead worker
HALF_SEED_OFFSET = 1_299_709  # the second half's envs and draws (a prime apart from every stride of worker/seeds.py)

log = logging.getLogger('sparring.worker')


class JobFeed:
    """League jobs (one opponent per game; in a game of three or more seats, a tuple of them) for one home player,
    fetched in batches, and the game each env slot is playing, so every finished game is reported with its job
    id."""

    def __init__(self, request: Callable[[Literal['jobs'], JobsBody], Message], player_id: str,
                 policy_of: Callable[[dict], object], batch: int) -> None:
        self.request = request  # the worker's request (a double-buffered collector's two feeds share it, locked)
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
        reply = self.request('jobs', JobsBody(player_id=self.player_id, count=count))
        self.queue.extend(reply.body['jobs'])

    def sample(self, slot: int):
        """The collector's job sampler (``sample_job`` of :mod:`~sparring.worker.run_kind`): it asks when a slot
        starts a game, right after reporting the slot's previous game, so the two stay in step."""
        if slot in self.playing:
            self.finished.append(self.playing.pop(slot))
        while not self.queue:
            self._fetch(self.batch)
        job = self.queue.popleft()
        self.playing[slot] = job
        seats = [job, *job.get('more', [])]
        return [self.player_id, *(seat['opponent_id'] for seat in seats)], [self.policy_of(seat) for seat in seats]

    def results_of(self, chunk) -> List[list]:
        """``[job_id, outcome]`` for the chunk's finished games, in order (in a game of three or more seats,
        ``[job_id, ranks]``, or ``[job_id, ranks, teams]`` in a team game)."""
        finished, self.finished = self.finished, []
        if chunk.rankings:
            played = [tuple(player_ids[1:]) for player_ids, _, _ in chunk.rankings]
            results = [[list(ranks)] + ([] if teams is None else [list(teams)]) for _, ranks, teams in chunk.rankings]
        else:
            played = [(oid,) for oid, _ in chunk.results]
            results = [[outcome] for _, outcome in chunk.results]
        if len(finished) != len(played) or any(
                (job['opponent_id'], *(seat['opponent_id'] for seat in job.get('more', []))) != opponents
                for job, opponents in zip(finished, played)):
            raise RuntimeError(f'collector for {self.player_id}: {len(played)} finished games but '
                               f'{len(finished)} finished jobs; games and league jobs are out of step')
        # Keep about a chunk's worth of jobs in hand (games per chunk change as play changes); jobs
        # drawn long in advance would follow the league's opponent choice late.
        self.batch = max(self.min_batch, int(1.25 * len(finished)) + 1)
        return [[job['job_id'], *result] for job, result in zip(finished, results)]


class FeedPair:
    """The job feeds of a double-buffered collector's two halves, as one feed."""

    def __init__(self, first: JobFeed, second: JobFeed) -> None:
        self.feeds = (first, second)

    def top_up(self) -> None:
        for feed in self.feeds:
            feed.top_up()

    def results_of(self, chunk) -> List[list]:
        """The halves' results, first half's first (as :func:`~sparring.worker.inference_halves.join_chunks` orders
        the games)."""
        first = len(self.feeds[0].finished)
        return (self.feeds[0].results_of(_HalfGames(chunk, slice(None, first)))
                + self.feeds[1].results_of(_HalfGames(chunk, slice(first, None))))


class _HalfGames:
    """One half's finished games in a joined chunk: its results in a game of two seats, its rankings in a game of
    three or more (a chunk holds one of the two, the other empty)."""

    def __init__(self, chunk, games: slice) -> None:
        self.results = chunk.results[games]
        self.rankings = chunk.rankings[games]


def _opponent_policy(players, job: dict):
    if job['kind'] == 'active':  # a learning player: its newest parameters (itself, in self-play)
        return players.get(job['opponent_id'])
    return players.pool.get(job['param_ref'], job.get('role'))


class CollectorWorker(Worker):
    role = 'collector'

    def __init__(self, commander: str, security: Security, **options: Any) -> None:
        super().__init__(commander, security, **options)
        with self.joining():
            self.kind = run_kind(self.cfg)
            self.seed = collector_seed(self.cfg.seed, self.index)
            self.players: Union[PlayerPolicies, RemotePlayerPolicies]
            self.halves_players: List[RemotePlayerPolicies] = []
            if not self.par.inference.workers:
                self.players = PlayerPolicies(self, self.seed)
            else:  # the networks act on forward-pass workers; the draws stay here
                first = ForwardClient(
                    self.context, self.security, self.worker_id, lambda: inference_addresses(self.cfg.exp_name),
                    attempt_seconds=min(self.par.request_timeout_seconds, FORWARD_ATTEMPT_SECONDS),
                    give_up_seconds=self.par.worker_timeout_seconds, check_alive=self.check_alive)
                remote = RemotePlayerPolicies(self, self.seed, first)
                self.players = remote
                if self.par.inference.double_buffer and self.cfg.env.collector_env_num > 1:
                    # Each half acts through a socket of its own, with draws of its own (the first half's seed is
                    # the collector's, so a collector of one half would draw as it does).
                    second = ForwardClient(self.context, self.security, f'{self.worker_id}/half1', first.addresses,
                                           first.attempt_seconds, first.give_up_seconds, self.check_alive)
                    self.halves_players = [remote, RemotePlayerPolicies(self, self.seed + HALF_SEED_OFFSET, second)]
            self.chunk_len = self.par.chunk_len or self.cfg.policy.collect.n_steps
            # player id -> (its collector, its job feed or feed pair)
            self.games: Dict[str, Tuple[Any, Union[JobFeed, FeedPair]]] = {}
            self.pushers: Dict[str, DataPusher] = {}
            self.env_steps = 0
            self.games_accepted = 0
            audit = self.par.get('audit_reports')
            self.audit = open_run_file(os.path.join(self.workdir, 'reports.jsonl'), 'a') if audit else None
            self.undelivered = 0
            self.undelivered_ids: List[str] = []

    def run(self) -> None:
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
            for players in self._acting_players():
                if isinstance(players, RemotePlayerPolicies):
                    players.client.close()
        self.goodbye()

    def _acting_players(self) -> Sequence[Union[PlayerPolicies, RemotePlayerPolicies]]:
        """The policies the collector acts with: its two halves', or its own."""
        if self.halves_players:
            return self.halves_players
        return [self.players]

    def task_request(self) -> TaskBody:
        ids, self.undelivered_ids = self.undelivered_ids, []
        return TaskBody(undelivered=ids) if ids else TaskBody()

    def _home(self, player_id: str):
        """The collector and the job feed of ``player_id``, made on first use."""
        if player_id not in self.games:
            if self.halves_players:
                self.games[player_id] = self._halves(player_id)
            else:
                feed = JobFeed(self.request, player_id, functools.partial(_opponent_policy, self.players),
                               batch=self.cfg.env.collector_env_num)
                collector = self.kind.collector(self.players.get(player_id), self.chunk_len, self.seed, player_id,
                                                self.player_ids.index(player_id), feed.sample)
                self.games[player_id] = (collector, feed)
        return self.games[player_id]

    def _halves(self, player_id: str):
        """A double-buffered collector: two halves of the envs, each with its own policies and job feed."""
        request, halves, feeds = SharedLock(self.request), [], []
        sizes = (self.cfg.env.collector_env_num + 1) // 2, self.cfg.env.collector_env_num // 2
        for players, size in zip(self.halves_players, sizes):
            cfg = copy.deepcopy(self.cfg)
            cfg.env.collector_env_num = size
            feed = JobFeed(request, player_id, functools.partial(_opponent_policy, players), batch=size)
            halves.append(run_kind(cfg).collector(players.get(player_id), self.chunk_len, players.seed, player_id,
                                                  self.player_ids.index(player_id), feed.sample))
            feeds.append(feed)
        return Halves(*halves), FeedPair(*feeds)

    def _collect(self, task: dict) -> None:
        pid = task['player_id']
        collector, feed = self._home(pid)
        for players in self._acting_players():
            players.refresh()
        feed.top_up()
        chunk = collector.collect()
        results = feed.results_of(chunk)
        self.env_steps += chunk.env_steps
        reply = self.request('chunk_report', ChunkReportBody(
            task_id=task['task_id'], chunk_id=chunk.chunk_id, player_id=pid, version=chunk.version,
            env_steps=int(chunk.env_steps or 0), results=results,
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
        stats = dict(env_steps=float(self.env_steps), undelivered=float(self.undelivered),
                     games_accepted=float(self.games_accepted))
        stats['collect_seconds'] = float(sum(collector.collect_seconds for collector, _ in list(self.games.values())))
        remote = [p for p in self._acting_players() if isinstance(p, RemotePlayerPolicies)]
        if remote:  # where the time goes with remote forward passes, and the requests refused
            clients = [p.client for p in remote]
            stats.update(forward_round_trips=float(sum(c.round_trips for c in clients)),
                         forward_seconds=sum(c.round_trip_seconds for c in clients),
                         forward_resends=float(sum(c.resends for c in clients)))
            for players in remote:
                for key, value in players.refusal_counts().items():
                    stats[key] = stats.get(key, 0.0) + value
        return stats
