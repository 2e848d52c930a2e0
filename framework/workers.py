"""The worker processes of the parallel mode: collector, learner and evaluator.

The local launcher starts them as ``python -m sparring.framework.workers --role R --commander
tcp://HOST:PORT ...``; on another machine ``sparring worker --role R --commander tcp://HOST:PORT``
does the same. A worker registers with the commander, receives the compiled config, sets its
torch threads, and runs its role with the serial mode's own classes:

* **collector**: asks which player to collect for, plays a chunk with that player's
  :class:`~sparring.worker.battle_collector.BattleCollector` (one opponent per game, drawn by the
  league and fetched in batches of jobs; a single-agent run uses a
  :class:`~sparring.worker.collector.SampleCollector`), reports the chunk's games to the commander
  and streams the chunk straight to the player's learner. Parameters are fetched by version and cached.
* **learner**: receives chunks for one player, drops repeated and too stale ones (counted), trains
  with :class:`~sparring.worker.learner.Learner`, optionally re-trains recent chunks while it
  waits for data up to a target sample reuse, publishes parameters every ``publish_every``
  updates and checkpoints; a restarted learner continues from its last checkpoint.
* **evaluator**: plays evaluation jobs with :class:`~sparring.worker.battle_evaluator.BattleEvaluator`
  (a single-agent run: :class:`~sparring.worker.evaluator.Evaluator`).

A background thread heartbeats. A worker exits when the commander says so, when the commander
stays silent for ``parallel.worker_timeout_seconds``, or when the process that launched it dies.
"""
from __future__ import annotations

import argparse
import ctypes
import logging
import os
import signal
import socket
import sys
import threading
import time
import uuid
from collections import deque
from typing import Callable, Deque, Dict, List, Optional, Sequence, Tuple

import numpy as np

from sparring.framework.messaging import (DataPuller, DataPusher, MessageError, RequestClient, RequestTimeout,
                                          advertised_address, arrays_to_params, make_security, params_to_arrays)

log = logging.getLogger('sparring.worker')

EXIT_COMMANDER_LOST = 3
EXIT_ORPHANED = 4
COLLECTOR_SEED_STRIDE = 15_485_863  # keeps collectors' env seeds apart from each other and the serial run's
EVALUATOR_SEED_OFFSET = 104_729  # as the serial league evaluator


class CommanderLost(RuntimeError):
    """The commander did not answer within the worker timeout."""


class SessionExpired(RuntimeError):
    """The commander no longer knows this worker's session (it timed the worker out, or restarted)."""


# -- the shared worker plumbing ----------------------------------------------------------------

class Worker:
    """Registration, requests with retries, heartbeats and the checks that end a worker."""

    role = ''

    def __init__(self, commander: str, security, worker_id: Optional[str] = None, player_id: Optional[str] = None,
                 parent_pid: Optional[int] = None, workdir: Optional[str] = None, timeout: float = 30.0,
                 bind_host: Optional[str] = None) -> None:
        import zmq
        self.commander = commander
        self.security = security
        self.requested_id = worker_id
        self.requested_player = player_id
        self.parent_pid = parent_pid
        self.workdir_override = workdir
        self.bind_host = bind_host
        self.context = zmq.Context()
        self.session = uuid.uuid4().hex
        self.worker_id = worker_id or self.role
        self.client = RequestClient(self.context, commander, security, sender=self.worker_id, timeout=timeout)
        self.timeout = timeout
        self.cfg = None
        self.directive = 'run'
        self.expected_chunks: Optional[int] = None
        self.last_contact = time.monotonic()
        self.lost = False
        self.expired = False
        self._stop_heartbeat = threading.Event()
        self._heartbeat_thread: Optional[threading.Thread] = None

    # -- joining -----------------------------------------------------------------------------
    def register(self) -> dict:
        """Join the commander; take the compiled config, the worker id and index it gives; start heartbeats."""
        from easydict import EasyDict

        from sparring.config import registry as reg
        from sparring.framework.runtime import seed_everything, set_torch_threads
        body = dict(role=self.role, worker_id=self.requested_id, session=self.session, pid=os.getpid(),
                    host=socket.gethostname())
        if self.requested_player is not None:
            body['player_id'] = self.requested_player
        try:
            reply = self.client.request('register', body, timeout=self.timeout)
        except RequestTimeout as err:
            raise CommanderLost(f'{err}; is the commander running, and is the shared secret / CURVE key the same on '
                                f'both ends?') from None
        info = reply.body
        self.cfg = EasyDict(info['config'])
        self.par = self.cfg.parallel
        self.worker_id = info['worker_id']
        self.client.sender = self.worker_id
        self.index = info['index']
        self.player_ids = info['player_ids']
        reg.ensure_builtins()
        reg.import_modules(self.cfg.import_names)
        set_torch_threads(self.cfg.torch_threads)
        # Global RNGs differ per worker (and from the commander's); the envs and policies get their own seeds.
        seed_everything(self.cfg.seed + 1000 * self.index + 17)
        self.workdir = self.workdir_override or os.path.join(self.cfg.exp_name, 'workers', self.worker_id)
        os.makedirs(self.workdir, exist_ok=True)
        self.last_contact = time.monotonic()
        self._heartbeat_thread = threading.Thread(target=self._heartbeat_loop, name='heartbeat', daemon=True)
        self._heartbeat_thread.start()
        return info

    def spaces(self):
        return env_spaces(self.cfg)

    def new_policy(self, seed: int):
        from sparring.config.registry import POLICY_REGISTRY
        return POLICY_REGISTRY.get(self.cfg.policy.type)(self.cfg.policy, self.observation_space, self.action_space,
                                                         seed=seed)

    # -- talking -----------------------------------------------------------------------------
    def request(self, kind: str, body: Optional[dict] = None, arrays=None):
        """The reply to a request, retried until ``worker_timeout_seconds`` pass without an answer."""
        body = dict(body or {}, session=self.session)
        deadline = time.monotonic() + self.par.worker_timeout_seconds
        while True:
            self.check_alive()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.lost = True
                raise CommanderLost(f'{self.worker_id}: no answer to {kind!r} from {self.commander} for '
                                    f'{self.par.worker_timeout_seconds:.0f} s')
            try:
                return self.client.request(kind, body, arrays, timeout=min(self.par.request_timeout_seconds, remaining))
            except RequestTimeout:
                continue
            except MessageError as err:
                if err.reason == 'session':
                    self.expired = True
                    raise SessionExpired(str(err)) from None
                raise

    def work_on(self, kind: str, do: Callable[[dict], None]) -> None:
        """Ask for tasks (``collect_task``, ``eval_task``) and do each, until the commander says stop."""
        while self.directive != 'stop':
            reply = self.request(kind)
            if reply.kind == 'stop':
                return
            if reply.kind == 'wait':
                time.sleep(reply.body['seconds'])
                continue
            do(reply.body)

    def request_until_given(self, kind: str, body: Optional[dict] = None):
        """The first reply that is not ``wait`` (the commander asks to come back later)."""
        while True:
            reply = self.request(kind, body)
            if reply.kind != 'wait':
                return reply
            time.sleep(reply.body['seconds'])

    def fetch_params(self, ref: str, have_version: Optional[int] = None):
        reply = self.request_until_given('params_request', dict(ref=ref, have_version=have_version))
        if reply.kind != 'params':
            raise RuntimeError(f'{self.worker_id}: expected parameters for {ref!r}, got a {reply.kind!r} reply')
        return reply

    def check_alive(self) -> None:
        if self.lost:
            raise CommanderLost(f'{self.worker_id}: the commander at {self.commander} stopped answering heartbeats')
        if self.expired:
            raise SessionExpired(f'{self.worker_id}: the commander no longer knows this session')

    def stats(self) -> Dict[str, float]:
        """Figures sent with each heartbeat (numbers only)."""
        return {}

    def _heartbeat_loop(self) -> None:
        client = RequestClient(self.context, self.commander, self.security, sender=f'{self.worker_id}/heartbeat',
                               timeout=max(self.par.heartbeat_seconds * 2, 1.0))
        try:
            while not self._stop_heartbeat.wait(self.par.heartbeat_seconds):
                if self.parent_pid is not None and process_gone(self.parent_pid):
                    log.error('%s: the launcher (pid %d) is gone; exiting', self.worker_id, self.parent_pid)
                    os._exit(EXIT_ORPHANED)
                try:
                    reply = client.request('heartbeat', dict(session=self.session, stats=self.stats()))
                except RequestTimeout:
                    if time.monotonic() - self.last_contact > self.par.worker_timeout_seconds:
                        self.lost = True
                    continue
                except MessageError as err:
                    if err.reason == 'session':
                        self.expired = True
                    continue
                except Exception:  # the heartbeat must outlive any surprise, or the worker is timed out
                    log.exception('%s: heartbeat failed', self.worker_id)
                    continue
                self.last_contact = time.monotonic()
                self.directive = reply.body['state']
                if 'expected_chunks' in reply.body:
                    self.expected_chunks = reply.body['expected_chunks']
        finally:
            client.close()

    def goodbye(self) -> None:
        try:
            self.client.request('goodbye', dict(session=self.session), timeout=min(self.timeout, 5.0))
        except (RequestTimeout, MessageError):
            pass  # the commander may be gone already; it times the session out then

    def close(self) -> None:
        self._stop_heartbeat.set()
        if self._heartbeat_thread is not None:
            self._heartbeat_thread.join(timeout=5.0)
        self.client.close()
        # Sockets still open (a role that failed half-way) must not hold the exit up; a collector's
        # chunk sockets were closed with their linger already, so queued chunks still go out.
        self.context.destroy(linger=0)


class RemoteParamStore:
    """The :class:`~sparring.worker.policy_pool.ParamStore` interface over the commander's store:
    frozen parameters are fetched on first use and cached."""

    def __init__(self, worker: Worker) -> None:
        from sparring.worker.policy_pool import ParamStore
        self._cache = ParamStore(None)
        self.worker = worker

    def get(self, ref: str) -> dict:
        from easydict import EasyDict
        if ref not in self._cache:
            reply = self.worker.fetch_params(ref)
            self._cache.put(ref, arrays_to_params(reply.arrays), EasyDict(reply.body['policy_cfg']),
                            reply.body['version'])
        return self._cache.get(ref)


class PlayerPolicies:
    """Local copies of active players' policies, kept at their newest published version, and the
    :class:`~sparring.worker.policy_pool.PolicyPool` that also serves snapshots and bots."""

    def __init__(self, worker: Worker, seed: int) -> None:
        from sparring.worker.policy_pool import PolicyPool
        self.worker = worker
        self.seed = seed
        self.pool = PolicyPool(RemoteParamStore(worker), worker.observation_space, worker.action_space, seed=seed)
        self.policies = {}

    def get(self, player_id: str, refresh: bool = False):
        policy = self.policies.get(player_id)
        if policy is None:
            index = self.worker.player_ids.index(player_id)
            policy = self.policies[player_id] = self.worker.new_policy(self.seed + 7919 * (index + 1))
            self.pool.add_live(player_id, policy)
            self._update(player_id, policy, None)
        elif refresh:
            self._update(player_id, policy, policy.version)
        return policy

    def refresh(self) -> None:
        for player_id, policy in self.policies.items():
            self._update(player_id, policy, policy.version)

    def _update(self, player_id: str, policy, have: Optional[int]) -> None:
        reply = self.worker.fetch_params(player_id, have)
        if not reply.body['unchanged']:
            policy.set_params(arrays_to_params(reply.arrays), reply.body['version'])


def env_spaces(cfg):
    """(observation space, action space) of the run's env: a battle env's seat, or a single-agent env."""
    if cfg.league is not None:
        from sparring.worker.env.battle import make_battle_env
        probe = make_battle_env(cfg.env, 1, cfg.seed)
    else:
        from sparring.worker.env.manager import make_env_manager
        probe = make_env_manager(cfg.env, 1, cfg.seed, cfg.import_names)
    try:
        return probe.observation_space, probe.action_space
    finally:
        probe.close()


class Evaluation:
    """How a run evaluates a player, as the serial mode does: a league player plays the evaluation
    opponents (:class:`BattleEvaluator`); a single-agent policy plays greedy episodes
    (:class:`Evaluator`). Shared by the evaluator worker and a commander without one."""

    def __init__(self, cfg) -> None:
        self.cfg = cfg
        if cfg.league is not None:
            from sparring.worker.battle_evaluator import BattleEvaluator
            from sparring.worker.env.battle import make_battle_env
            self.battle = BattleEvaluator(lambda: make_battle_env(cfg.env, cfg.env.evaluator_env_num,
                                                                 cfg.seed + EVALUATOR_SEED_OFFSET),
                                          cfg.env.n_evaluator_episodes, deterministic=cfg.battle.eval_deterministic)
        else:
            from sparring.framework.serial import EVAL_SEED_OFFSET
            from sparring.worker.env.gym_env import evaluator_env_config
            from sparring.worker.env.manager import make_env_manager
            self.battle = None
            self.env = make_env_manager(evaluator_env_config(cfg.env, cfg.import_names), cfg.env.evaluator_env_num,
                                        cfg.seed + EVAL_SEED_OFFSET, cfg.import_names)

    def __call__(self, policy, opponents: Sequence[Sequence[str]], pool) -> Tuple[Dict[str, List[str]], List[float]]:
        """``(outcomes per opponent id, episode returns)``: the first for a league, the second otherwise."""
        if self.battle is not None:
            results = self.battle.evaluate(policy, [(oid, pool.get(ref)) for oid, ref in opponents])
            return {r.opponent_id: list(r.outcomes) for r in results}, []
        from sparring.worker.evaluator import Evaluator
        return {}, Evaluator(self.env, policy, self.cfg.env.n_evaluator_episodes).evaluate().returns

    def close(self) -> None:
        if self.battle is None:
            self.env.close()


# -- collector ----------------------------------------------------------------------------------

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
        if len(self.queue) < self.batch:
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
        self.observation_space, self.action_space = self.spaces()
        self.seed = self.cfg.seed + COLLECTOR_SEED_STRIDE * self.index
        self.players = PlayerPolicies(self, self.seed)
        self.chunk_len = self.par.chunk_len or self.cfg.policy.collect.n_steps
        self.games: Dict[str, Tuple[object, Optional[JobFeed]]] = {}
        self.pushers: Dict[str, DataPusher] = {}
        self.env_steps = 0
        self.undelivered = 0
        log.info('%s: registered with %s', self.worker_id, self.commander)
        try:
            self.work_on('collect_task', self._collect)
        finally:
            for pusher in self.pushers.values():
                pusher.close()
            for collector, feed in self.games.values():
                (collector.arena.env if feed is not None else collector.env).close()
        self.goodbye()

    def _home(self, player_id: str):
        """The collector (and, in a league, the job feed) of ``player_id``, made on first use."""
        if player_id not in self.games:
            cfg = self.cfg
            policy = self.players.get(player_id)
            if cfg.league is None:  # single-agent: no opponents, no games to report
                from sparring.worker.collector import SampleCollector
                from sparring.worker.env.manager import make_env_manager
                env = make_env_manager(cfg.env, cfg.env.collector_env_num, self.seed, cfg.import_names)
                self.games[player_id] = (SampleCollector(env, policy, self.chunk_len, player_id=player_id), None)
            else:
                from sparring.worker.battle_collector import BattleCollector
                from sparring.worker.env.battle import make_battle_env
                index = self.player_ids.index(player_id)
                env = make_battle_env(cfg.env, cfg.env.collector_env_num, self.seed + 7919 * (index + 1))
                feed = JobFeed(self, player_id, self._opponent_policy, batch=cfg.env.collector_env_num)
                collector = BattleCollector(env, policy, self.chunk_len, feed.sample, player_id=player_id,
                                            train_both_sides=cfg.battle.train_both_sides)
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
        if feed is not None:
            feed.top_up()
        chunk = collector.collect()
        results = feed.results_of(chunk) if feed is not None else []
        self.env_steps += chunk.env_steps
        self.request('chunk_report', dict(task_id=task['task_id'], chunk_id=chunk.chunk_id, player_id=pid,
                                          version=chunk.version, env_steps=chunk.env_steps, results=results,
                                          episode_returns=[float(r) for r in chunk.episode_returns]))
        self._push(task['endpoint'], pid, chunk)

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
                log.warning('%s: the learner at %s took no chunk for %.0f s; chunk %s dropped', self.worker_id,
                            endpoint, self.par.worker_timeout_seconds, chunk.chunk_id)
                current.close(linger=0)
                del self.pushers[pid]
                return

    def stats(self) -> Dict[str, float]:
        return dict(env_steps=float(getattr(self, 'env_steps', 0)), undelivered=float(getattr(self, 'undelivered', 0)))


# -- learner ------------------------------------------------------------------------------------

class LearnerWorker(Worker):
    role = 'learner'

    def run(self) -> None:
        from sparring.framework.checkpoint import CheckpointManager
        from sparring.framework.logger import RunLogger
        from sparring.framework.messaging import check_bind
        from sparring.worker.learner import Learner
        info = self.register()
        self.player_id = info['player_id']
        host = self.bind_host or self.par.host
        check_bind(host, self.security.secured)
        self.puller = DataPuller(self.context, host, self.security, name=f'{self.worker_id} data',
                                 queue=self.par.learner_queue, max_message_bytes=self.par.max_message_mb << 20)
        self.endpoint = advertised_address(self.puller.address, self.par.advertise_host)
        self.observation_space, self.action_space = self.spaces()
        self.policy = self.new_policy(self.cfg.seed + self.index)
        self.learner = Learner(self.policy, max(1, self.cfg.train.max_env_steps // len(self.player_ids)))
        self.ckpt = CheckpointManager(self.workdir)
        self.seen: Deque[str] = deque(maxlen=10_000)
        self.seen_set = set()
        self.queue: Deque = deque()
        self.replay: Deque = deque(maxlen=self.par.replay_chunks)
        self.staleness_window: List[float] = []
        self.counts = dict(chunks_received=0, dropped_stale=0, dropped_duplicate=0, dropped_invalid=0, replayed=0)
        self.wait_seconds = 0.0
        self.arrived = 0  # chunks this process took in (the commander's credit counts per learner process)
        restored = info['restore'] and self.ckpt.latest() is not None
        if restored:
            state = self.ckpt.load_latest()
            self.learner.load_state_dict(state['learner'])
            self.counts.update(state['counts'])
        else:
            reply = self.fetch_params('init')
            self.policy.set_params(arrays_to_params(reply.arrays), 0)
        # Versions and iterations never go back: collectors may hold newer published parameters,
        # and the league's step for this player may be ahead of the checkpoint.
        if info['version'] > self.policy.version:
            self.policy.set_params(self.policy.get_params(), info['version'])
        self.learner.train_iter = max(self.learner.train_iter, info['train_iteration'])
        self.logger = RunLogger(self.workdir, self.learner.max_env_steps, tensorboard=self.cfg.train.tensorboard,
                                progress_bar=False, initial_env_steps=self.learner.env_steps)
        self.logger.line(f'{self.worker_id}: learner of {self.player_id}, chunks at {self.endpoint}, '
                         f'{"restored from " + self.ckpt.latest() if restored else "fresh"}, iteration '
                         f'{self.learner.train_iter}, version {self.policy.version}')
        try:
            self.publish(final=False)
            self._loop()
            self.save_checkpoint()
            self.publish(final=True)
            # Stay until the commander is done with everyone (it may still need this learner's answer).
            while self.directive != 'stop':
                self.check_alive()
                time.sleep(self.par.heartbeat_seconds / 2)
        finally:
            self.logger.close()
            self.puller.close()
        self.goodbye()

    def _loop(self) -> None:
        par = self.par
        drain_since: Optional[float] = None
        last_chunk_at = time.monotonic()
        while self.directive != 'stop':
            self.check_alive()
            waited = time.perf_counter()
            got = self._receive(timeout=0.0 if self.queue or self._may_replay() else 0.1)
            if got:
                last_chunk_at = time.monotonic()
            picked = self._next_chunk()
            if picked is None:
                self.wait_seconds += time.perf_counter() - waited
                if self.directive == 'drain':
                    drain_since = drain_since or time.monotonic()
                    expected = self.expected_chunks
                    idle = time.monotonic() - max(last_chunk_at, drain_since)
                    if (expected is not None and self.arrived >= expected) \
                            or idle >= par.drain_timeout_seconds:
                        return
                continue
            chunk, fresh = picked
            self._train(chunk, fresh)

    def _receive(self, timeout: float) -> bool:
        """Move chunks from the socket into the queue while it has room; True if any arrived."""
        from sparring.worker.chunk import Chunk
        got = False
        while len(self.queue) < self.par.learner_queue:
            message = self.puller.recv(timeout if not got else 0.0)
            if message is None:
                return got
            body = message.body
            if message.kind != 'chunk':
                self.counts['dropped_invalid'] += 1
                log.warning('%s: a %r message came on the chunk socket; dropped', self.worker_id, message.kind)
                continue
            if body['chunk_id'] in self.seen_set:
                self.counts['dropped_duplicate'] += 1
                continue
            self.arrived += 1
            try:
                if body['player_id'] != self.player_id:
                    raise ValueError(f'a chunk of player {body["player_id"]!r} reached the learner of '
                                     f'{self.player_id!r}')
                if body['version'] > self.policy.version:
                    raise ValueError(f'it claims parameter version {body["version"]}, newer than the learner\'s '
                                     f'{self.policy.version}')
                data = {name: np.array(a) for name, a in message.arrays.items()}  # owned, writable copies
                check_chunk_values(data, self.action_space)
                chunk = Chunk(data=data, version=body['version'], player_id=self.player_id,
                              chunk_id=body['chunk_id'], env_steps=body['env_steps'])
                chunk.validate()
            except ValueError as err:
                self.counts['dropped_invalid'] += 1
                log.warning('%s: dropped chunk %s: %s', self.worker_id, body.get('chunk_id'), err)
                continue
            if len(self.seen) == self.seen.maxlen:
                self.seen_set.discard(self.seen[0])
            self.seen.append(chunk.chunk_id)
            self.seen_set.add(chunk.chunk_id)
            self.counts['chunks_received'] += 1
            self.queue.append(chunk)
            got = True
        return got

    def _too_stale(self, chunk) -> bool:
        limit = self.par.max_staleness
        return limit is not None and self.policy.version - chunk.version > limit

    def _may_replay(self) -> bool:
        target = self.par.target_sample_reuse
        return bool(target) and bool(self.replay) and self.learner.sample_reuse < target

    def _next_chunk(self) -> Optional[Tuple[object, bool]]:
        """The oldest fresh chunk not too stale; else, below the target sample reuse, a recent one again."""
        while self.queue:
            chunk = self.queue.popleft()
            if self._too_stale(chunk):
                self.counts['dropped_stale'] += 1
                continue
            return chunk, True
        while self._may_replay():
            chunk = self.replay.popleft()
            if self._too_stale(chunk):
                continue
            self.replay.append(chunk)
            self.counts['replayed'] += 1
            return chunk, False
        return None

    def _train(self, chunk, fresh: bool) -> None:
        stats = self.learner.train(chunk, fresh=fresh)
        if fresh:
            self.replay.append(chunk)
        self.staleness_window.append(stats['staleness'])
        it = self.learner.train_iter
        stats.update(self.counts, wait_seconds=self.wait_seconds, queue=float(len(self.queue)))
        self.logger.scalars(stats, self.learner.env_steps, prefix='train/')
        if len(self.staleness_window) >= 20:
            self.logger.histogram('train/staleness_histogram', self.staleness_window, self.learner.env_steps)
            self.staleness_window = []
        if it % self.par.publish_every == 0:
            self.publish(final=False, stats=dict(staleness=stats['staleness'], sample_reuse=stats['sample_reuse']))
        every = self.cfg.train.checkpoint_every_iters
        if every and it % every == 0:
            self.save_checkpoint()

    def publish(self, final: bool, stats: Optional[dict] = None) -> None:
        body = dict(player_id=self.player_id, version=self.policy.version, train_iteration=self.learner.train_iter,
                    final=final, chunks_consumed=self.arrived - len(self.queue), endpoint=self.endpoint,
                    stats=dict(stats or {}, **{k: float(v) for k, v in self.counts.items()},
                               sample_reuse=self.learner.sample_reuse, wait_seconds=self.wait_seconds))
        reply = self.request('publish', body, params_to_arrays(self.policy.get_params()))
        reset_ref = reply.body.get('reset_param_ref')
        if reset_ref:
            # The league reset this player (e.g. an exploiter back to the initial parameters). Keep
            # counting versions upward so staleness stays meaningful.
            params = self.fetch_params(reset_ref)
            self.policy.set_params(arrays_to_params(params.arrays), self.policy.version)
            self.policy.reset_optimizer()
            self.replay.clear()
            self.logger.line(f'{self.player_id} reset to {reset_ref!r} at iteration {self.learner.train_iter}')
            self.publish(final=final)

    def save_checkpoint(self) -> str:
        return self.ckpt.save(dict(learner=self.learner.state_dict(), counts=self.counts), self.learner.train_iter)

    def stats(self) -> Dict[str, float]:
        # Called from the heartbeat thread: copy the dicts the main thread updates before reading them.
        out = {k: float(v) for k, v in dict(getattr(self, 'counts', {})).items()}
        puller = getattr(self, 'puller', None)
        if puller is not None:
            out.update({f'rejected_{reason}': float(n) for reason, n in dict(puller.rejected.counts).items()})
        return out


def check_chunk_values(data: Dict[str, np.ndarray], action_space) -> None:
    """Raise ValueError if a chunk could poison training: non-finite numbers, actions outside the space."""
    import gymnasium as gym
    for name, array in data.items():
        if array.dtype.kind == 'f' and not np.isfinite(array).all():
            raise ValueError(f'array {name!r} holds NaN or infinite values')
    action = data.get('action')
    if isinstance(action_space, gym.spaces.Discrete) and action is not None:
        if action.dtype.kind not in 'iu' or (action.size and (action.min() < action_space.start
                                                               or action.max() >= action_space.start + action_space.n)):
            raise ValueError(f'actions must be integers in [{action_space.start}, '
                             f'{action_space.start + action_space.n}), got {action.dtype} '
                             f'{action.min() if action.size else ""}..{action.max() if action.size else ""}')
    mask = data.get('action_mask')
    if mask is not None and isinstance(action_space, gym.spaces.Discrete) and mask.shape[-1] != action_space.n:
        raise ValueError(f'action_mask must end with {action_space.n} actions, got shape {mask.shape}')


# -- evaluator ----------------------------------------------------------------------------------

class EvaluatorWorker(Worker):
    role = 'evaluator'

    def run(self) -> None:
        self.register()
        self.observation_space, self.action_space = self.spaces()
        self.players = PlayerPolicies(self, self.cfg.seed + EVALUATOR_SEED_OFFSET)
        self.evaluation = Evaluation(self.cfg)
        self.evaluated = 0
        try:
            self.work_on('eval_task', self._evaluate)
        finally:
            self.evaluation.close()
        self.goodbye()

    def _evaluate(self, job: dict) -> None:
        policy = self.players.get(job['player_id'], refresh=True)
        results, returns = self.evaluation(policy, job['opponents'], self.players.pool)
        body = dict(task_id=job['task_id'], player_id=job['player_id'], version=policy.version, results=results)
        if returns:
            body['returns'] = returns
        self.request('eval_report', body)
        self.evaluated += 1

    def stats(self) -> Dict[str, float]:
        return dict(evaluated=float(getattr(self, 'evaluated', 0)))


ROLES = {'collector': CollectorWorker, 'learner': LearnerWorker, 'evaluator': EvaluatorWorker}


# -- process entry ------------------------------------------------------------------------------

def process_gone(pid: int) -> bool:
    """Whether process ``pid`` has exited (a zombie waiting to be reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[-1].split()[0] == 'Z'
    except OSError:
        return False


def die_with_parent(launcher_pid: int) -> None:
    """Exit with the launcher: at once if it is gone already, by the heartbeat thread's check if it
    dies later, and by Linux's parent-death signal when the direct parent (the launcher's fork
    server, which lives exactly as long as the launcher and its workers) goes."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: the heartbeat thread's check still ends an orphan
    if process_gone(launcher_pid):
        sys.exit(EXIT_ORPHANED)


def build_parser(prog: str = 'sparring worker') -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description='Join a parallel sparring run as a worker.')
    add_worker_arguments(parser)
    return parser


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--role', required=True, choices=sorted(ROLES), help='what this worker does')
    parser.add_argument('--commander', required=True, help='the commander\'s address, tcp://HOST:PORT')
    parser.add_argument('--worker-id', default=None, help='a name for this worker (default: the commander picks)')
    parser.add_argument('--player-id', default=None, help='learner: the active player to train (default: any free)')
    parser.add_argument('--key-file', default=None, help='file with the shared secret ($SPARRING_SECRET wins)')
    parser.add_argument('--curve-dir', default=None, help='CURVE keys directory (when the run uses auth="curve")')
    parser.add_argument('--bind-host', default=None, help='learner: the interface to receive chunks on '
                                                          '(default 127.0.0.1; another machine needs its address)')
    parser.add_argument('--workdir', default=None, help='where this worker writes logs and checkpoints '
                                                        '(default: <exp_name>/workers/<worker id>)')
    parser.add_argument('--timeout', type=float, default=30.0, help='seconds to wait for the commander to answer')
    parser.add_argument('--reconnect-seconds', type=float, default=0.0,
                        help='keep trying to rejoin a lost or restarted commander this long (0: exit at once)')
    parser.add_argument('--parent-pid', type=int, default=None, help=argparse.SUPPRESS)


def run_worker(args: argparse.Namespace) -> int:
    """Run one worker to the end; the exit code says why it ended."""
    logging.basicConfig(level=logging.INFO, format='%(asctime)s %(name)s %(levelname)s %(message)s')
    if args.parent_pid is not None:
        die_with_parent(args.parent_pid)
    security = make_security(key_file=args.key_file, curve_dir=args.curve_dir)
    give_up = time.monotonic() + args.reconnect_seconds
    while True:
        worker = ROLES[args.role](args.commander, security, worker_id=args.worker_id, player_id=args.player_id,
                                  parent_pid=args.parent_pid, workdir=args.workdir, timeout=args.timeout,
                                  bind_host=args.bind_host)
        try:
            worker.run()
            return 0
        except (CommanderLost, SessionExpired) as err:
            if time.monotonic() >= give_up:
                log.error('%s', err)
                return EXIT_COMMANDER_LOST
            log.warning('%s; joining again', err)
            time.sleep(1.0)
        finally:
            worker.close()


def main(argv: Optional[List[str]] = None) -> int:
    return run_worker(build_parser('python -m sparring.framework.workers').parse_args(argv))


if __name__ == '__main__':
    sys.exit(main())
