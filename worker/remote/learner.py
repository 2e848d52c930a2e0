"""A learner process of the parallel mode: one player's :class:`~sparring.worker.learner.Learner`.

It receives chunks for its player straight from the collectors, drops repeated, invalid (not fitting
the policy's chunk spec, or with values beyond any sane magnitude) and too stale ones (counted), drops and
counts a chunk whose update raises (``dropped_failed``: the learner goes on), trains, optionally re-trains recent chunks while it waits for data up to a
target sample reuse, publishes parameters every ``publish_every`` updates (the commander answers
with the league's verdict: a reset reloads the parameters it names; with ``replay.max_opponent_age`` set,
the reply also carries the league's opponent ages, and the replay forgets by them as a serial run's does)
and checkpoints; a restarted learner continues from its last checkpoint.
"""
from __future__ import annotations

import dataclasses
import hashlib
import logging
import time
from collections import deque
from typing import Any, Deque, Dict, List, Mapping, Optional, Set, Tuple

import numpy as np
import torch

from sparring.policy.chunk_spec import ChunkSpec
from sparring.policy.replay_opponents import forget_stale_opponents
from sparring.worker.checkpoint import CheckpointError, CheckpointManager
from sparring.worker.chunk import Chunk
from sparring.worker.learner import Learner
from sparring.worker.logger import RunLogger
from sparring.worker.remote.base import Worker
from sparring.worker.remote.protocol import PublishBody, Registered
from sparring.worker.remote.replicas import ReplicaGroup
from sparring.worker.remote.schema import MAX_ABS_VALUE, ChunkSchema
from sparring.worker.remote.transport import DataPuller, SMALL_HEADER_BYTES, advertised_address
from sparring.worker.remote.security import Security, check_bind
from sparring.worker.remote.wire import arrays_to_params, params_to_arrays
from sparring.worker.run_kind import is_league_run

log = logging.getLogger('sparring.worker')

MAX_RECEIPTS = 10_000  # chunk ids acknowledged by one heartbeat (the protocol's limit)


class LearnerWorker(Worker):
    role = 'learner'

    def __init__(self, commander: str, security: Security, **options: Any) -> None:
        super().__init__(commander, security, **options)
        self.receipts: Deque[str] = deque()  # ids of chunks that arrived, until a heartbeat carries them
        with self.joining() as info:
            self.player_id = str(info['player_id'])
            host = self.bind_host or self.par.host
            check_bind(host, self.security.secured)
            # In a game whose seats have roles: its player's role's spaces and initial parameters.
            self.observation_space, self.action_space = self.spaces(self.player_roles.get(self.player_id))
            self.policy = self.new_policy(self.cfg.seed + self.index, self.player_id)
            self.learner = Learner(self.policy, max(1, self.cfg.train.max_env_steps // len(self.player_ids)),
                                   battle=is_league_run(self.cfg))
            # What a peer without the secret can make this socket hold: a few chunks of this run's size, no more.
            self.puller = DataPuller(self.context, host, chunk_security(self.security, self.learner.spec),
                                     name=f'{self.worker_id} data',
                                     queue=self.par.learner_queue, max_header_bytes=SMALL_HEADER_BYTES,
                                     max_message_bytes=min(self.par.max_message_mb << 20,
                                                           chunk_bytes_limit(self.cfg, self.learner.spec)))
            self.endpoint = advertised_address(self.puller.address, self.par.advertise_host)
            self.ckpt = CheckpointManager(self.workdir)
            self.seen: Deque[str] = deque(maxlen=10_000)
            self.seen_set: Set[str] = set()
            self.queue: Deque[Chunk] = deque()
            self.replay: Deque[Chunk] = deque(maxlen=self.par.replay_chunks)
            self.staleness_window: List[float] = []
            self.counts = dict(chunks_received=0, dropped_stale=0, dropped_duplicate=0, dropped_invalid=0,
                               dropped_failed=0, replayed=0, replay_transitions_forgotten=0)
            self.roster: Optional[Dict[str, int]] = None  # the league's opponent ages last forgotten by
            self.wait_seconds = 0.0
            self.arrived = 0  # chunks this process took in (the commander's credit counts per learner process)
            self.group: Optional[ReplicaGroup] = None
            self.reset_pending = False
            self.group_totals = dict(arrived=0, consumed=0)
            restored = self._restore(info)
            self.policy.set_params(self.policy.get_params(), restarted_version(self.policy.version, info['version']))
            self.learner.train_iter = max(self.learner.train_iter, info['train_iteration'])
            if info.get('replicas', 1) > 1:
                self.group = self._join_group(info, restored)
            self.logger = RunLogger(self.workdir, self.learner.max_env_steps, tensorboard=self.cfg.train.tensorboard,
                                    progress_bar=False, initial_env_steps=self.learner.env_steps)
            self.logger.line(f'{self.worker_id}: learner of {self.player_id}, chunks at {self.endpoint}, '
                             + describe_start(self.ckpt.resumed_from if restored else None, info['train_iteration'],
                                              self.learner.train_iter, self.policy.version))

    def _restore(self, info: Registered) -> bool:
        """Take the last checkpoint's state (the lead of a group only: the other replicas take the lead's when the
        group forms), else the initial parameters; whether a checkpoint was restored."""
        if info['restore'] and info.get('replica', 0) == 0 and self.ckpt.latest() is not None:
            try:
                state = self.ckpt.load_latest()
            except CheckpointError as err:  # every checkpoint damaged: start afresh rather than crash-loop
                log.error('%s: %s; starting from the initial parameters', self.worker_id, err)
            else:
                self.learner.load_state_dict(state['learner'])
                self.counts.update(state['counts'])
                return True
        reply = self.fetch_params(info.get('initial_ref', 'init'))  # a game with roles: its role's
        self.policy.set_params(arrays_to_params(reply.arrays), 0)
        return False

    def run(self) -> None:
        try:
            self.publish(final=False)
            if self.group is None:
                self._loop()
            else:
                self._loop_in_step(self.group)
                self.logger.line(f'replica {self.group.rank}: parameters {params_digest(self.policy.get_params())} '
                                 f'after {self.learner.train_iter} iterations')
            if self.lead:
                self.save_checkpoint()
                self.publish(final=True)
            # Stay until the commander is done with everyone (it may still need this learner's answer).
            while self.directive != 'stop':
                self.check_alive()
                time.sleep(self.par.heartbeat_seconds / 2)
        finally:
            self.logger.close()
            self.puller.close()
            if self.group is not None:
                self.group.close()
        self.goodbye()

    @property
    def lead(self) -> bool:
        """Whether this process speaks for the player (publishes, checkpoints): the lead of its replicas."""
        return self.group is None or self.group.is_lead

    def _join_group(self, info: Registered, restored: bool) -> ReplicaGroup:
        """Form the player's replica group; every replica starts from the lead's parameters and counters."""
        address = info.get('group_address')
        if address is None:
            raise RuntimeError(f'{self.worker_id}: the commander named {info["replicas"]} replicas of '
                               f'{self.player_id} but no address for them to meet at')
        group = ReplicaGroup(address, info['replica'], info['replicas'],
                             timeout_seconds=self.par.worker_timeout_seconds * 3, device=self.policy.device)
        group.share_lead_state(self.policy.trained_module())
        restored_flag, version, iteration, env_steps = group.share_numbers(
            restored, self.policy.version, self.learner.train_iter, self.learner.env_steps)
        self.policy.set_params(self.policy.get_params(), int(version))
        self.learner.train_iter, self.learner.env_steps = int(iteration), int(env_steps)
        if restored_flag:  # the lead's optimiser moments were not shared: every replica starts them afresh
            self.policy.reset_optimizer()
        group.average_gradients(self.policy.trained_module())
        return group

    def _loop_in_step(self, group: ReplicaGroup) -> None:
        """The replicas' loop: receive, agree, and train together only when every replica has a chunk."""
        drain_since: Optional[float] = None
        last_total, last_change = -1, time.monotonic()
        while True:
            self.check_alive()
            self._receive(timeout=0.0 if self.queue else 0.05)
            picked = self._next_chunk()
            stop = False
            if self.lead and self.directive != 'run':
                drain_since = drain_since or time.monotonic()
                stop = self.directive == 'stop' or self._drained(self.group_totals['arrived'],
                                                                 max(last_change, drain_since))
            train, stop, self.group_totals = group.agree(
                picked is not None, stop, dict(arrived=self.arrived, consumed=self.arrived - len(self.queue)))
            if self.group_totals['arrived'] != last_total:
                last_total, last_change = self.group_totals['arrived'], time.monotonic()
            if stop:
                if picked is not None:
                    self.counts['unpaired_at_end'] = self.counts.get('unpaired_at_end', 0) + 1
                return
            if not train:
                if picked is not None:
                    self.queue.appendleft(picked[0])  # kept until every replica has one
                continue
            assert picked is not None  # the group trains only when every replica, this one too, has a chunk
            self._train(*picked)
            reset, = group.share_numbers(self.reset_pending)
            if reset:
                group.share_lead_state(self.policy.trained_module())
                self.policy.reset_optimizer()
                self.reset_pending = False
            else:
                group.share_lead_state(self.policy.trained_module(), buffers_only=True)

    def _loop(self) -> None:
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
                    if self._drained(self.arrived, max(last_chunk_at, drain_since)):
                        return
                continue
            chunk, fresh = picked
            self._train(chunk, fresh)

    def _drained(self, arrived: int, idle_since: float) -> bool:
        """Draining is over once every chunk the commander expects has arrived, or none came for the drain timeout."""
        expected = self.expected_chunks
        return (expected is not None and arrived >= expected) \
            or time.monotonic() - idle_since >= self.par.drain_timeout_seconds

    def _receive(self, timeout: float) -> bool:
        """Move chunks from the socket into the queue while it has room; True if any arrived."""
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
            self.receipts.append(body['chunk_id'])  # acknowledged with the next heartbeat
            try:
                if body['player_id'] != self.player_id:
                    raise ValueError(f'a chunk of player {body["player_id"]!r} reached the learner of '
                                     f'{self.player_id!r}')
                data = {name: np.array(a) for name, a in message.arrays.items()}  # owned, writable copies
                chunk = Chunk(data=data, version=body['version'], player_id=self.player_id,
                              chunk_id=body['chunk_id'], env_steps=body['env_steps'])
                self.learner.check(chunk)  # the policy's chunk spec, and a version it has had
                check_magnitudes(data)
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

    def _next_chunk(self) -> Optional[Tuple[Chunk, bool]]:
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

    def _train(self, chunk: Chunk, fresh: bool) -> None:
        stats = self.learner.train(chunk, fresh=fresh)
        if stats is None:  # its update raised: dropped (logged by the learner), and the learner goes on
            self.counts['dropped_failed'] += 1
            return
        if fresh:
            self.replay.append(chunk)
        self.staleness_window.append(stats['staleness'])
        it = self.learner.train_iter
        stats.update(self.counts, wait_seconds=self.wait_seconds, queue=float(len(self.queue)))
        self.logger.scalars(stats, self.learner.env_steps, prefix='train/')
        if len(self.staleness_window) >= 20:
            self.logger.histogram('train/staleness_histogram', self.staleness_window, self.learner.env_steps)
            self.staleness_window = []
        if it % self.par.publish_every == 0 and self.lead:
            self.publish(final=False, stats=dict(staleness=stats['staleness'], sample_reuse=stats['sample_reuse']))
        every = self.cfg.train.checkpoint_every_iters
        if every and it % every == 0 and self.lead:
            self.save_checkpoint()

    def publish(self, final: bool, stats: Optional[dict] = None) -> None:
        consumed = self.group_totals['consumed'] if self.group is not None else self.arrived - len(self.queue)
        body = PublishBody(player_id=self.player_id, version=self.policy.version,
                           train_iteration=self.learner.train_iter, final=final, chunks_consumed=consumed,
                           endpoint=self.endpoint,
                           stats=dict(stats or {}, **{k: float(v) for k, v in self.counts.items()},
                                      sample_reuse=self.learner.sample_reuse, wait_seconds=self.wait_seconds))
        reply = self.request('publish', body, params_to_arrays(self.policy.get_params()))
        self.forget_stale_opponents(reply.body.get('opponent_ages'))
        reset_ref = reply.body.get('reset_param_ref')
        if reset_ref:
            # The league reset this player (e.g. an exploiter back to the initial parameters). Keep
            # counting versions upward so staleness stays meaningful.
            params = self.fetch_params(reset_ref)
            self.policy.set_params(arrays_to_params(params.arrays), self.policy.version)
            self.policy.reset_optimizer()
            self.replay.clear()
            self.reset_pending = True  # the other replicas take the new parameters after this update
            self.logger.line(f'{self.player_id} reset to {reset_ref!r} at iteration {self.learner.train_iter}')
            self.publish(final=final)

    def forget_stale_opponents(self, roster: Optional[Dict[str, int]]) -> int:
        """The league's opponent ages from a publish reply (None: the run does not forget by opponent): the replay
        forgets as the serial run's does after a snapshot, once per change of the roster (a snapshot anywhere in
        the league). Returns how many transitions went."""
        if roster is None or roster == self.roster:
            return 0
        self.roster = dict(roster)
        forgotten = forget_stale_opponents([self.policy], roster)
        self.counts['replay_transitions_forgotten'] = self.counts.get('replay_transitions_forgotten', 0) + forgotten
        return forgotten

    def save_checkpoint(self) -> str:
        return self.ckpt.save(dict(learner=self.learner.state_dict(), counts=self.counts), self.learner.train_iter)

    def heartbeat_extra(self) -> dict:
        # Called from the heartbeat thread: popleft is atomic against the main thread's appends.
        received: List[str] = []
        while self.receipts and len(received) < MAX_RECEIPTS:
            received.append(self.receipts.popleft())
        return dict(received=received) if received else {}

    def heartbeat_lost(self, extra: dict) -> None:
        self.receipts.extendleft(reversed(extra.get('received', [])))

    def stats(self) -> Dict[str, float]:
        # Called from the heartbeat thread: copy the dicts the main thread updates before reading them.
        out = {k: float(v) for k, v in dict(self.counts).items()}
        out['queued'] = float(len(self.queue))
        # samples through gradient steps, and the env steps behind them
        out.update(samples_consumed=float(self.learner.samples_consumed), trained_env_steps=float(self.learner.env_steps))
        out.update({f'rejected_{reason}': float(n) for reason, n in dict(self.puller.rejected.counts).items()})
        return out


def describe_start(restored_from: Optional[str], published_iteration: int, iteration: int, version: int) -> str:
    """What a (re)started learner trains on, for its log: a checkpoint it restored, or the initial parameters, saying
    so when the player had trained before (a learner killed before its first checkpoint): its counters go on from
    the published iteration and version, its parameters do not."""
    if restored_from is not None:
        return f'restored from {restored_from}, iteration {iteration}, version {version}'
    if not published_iteration:
        return f'fresh, iteration {iteration}, version {version}'
    return (f'fresh parameters (the initial ones: no checkpoint to restore, so the {published_iteration} iterations '
            f'trained before are lost), counters continuing at iteration {iteration}, version {version}')


def params_digest(params: Mapping[str, torch.Tensor]) -> str:
    """A short fingerprint of parameters: equal on every replica of a group, or they have drifted apart."""
    digest = hashlib.sha256()
    for name in sorted(params):
        digest.update(name.encode() + params[name].detach().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


def restarted_version(own: int, published: int) -> int:
    """The parameter version a (re)starting learner continues from.

    Versions never go back, and a learner that comes back with other parameters than the newest the
    commander published (an older checkpoint, or none) must not reuse that number: collectors holding
    it would take the new parameters for the ones they have. So it continues one past the published one.
    """
    return max(own, published + 1) if published else own


def chunk_bytes_limit(cfg, spec: ChunkSpec) -> int:
    """The largest chunk message a learner of this run takes: four times what the arrays of a chunk can hold.

    A chunk is ``[T, C, ...]``: T steps (``parallel.chunk_len`` or ``policy.collect.n_steps``) of C columns (an
    env each; a battle env's seats and team agents each get one), and a column step holds the fields of the
    policy's chunk spec (a window's recurrent state counted at every step). Anything larger is no chunk of this run.
    """
    steps = cfg.parallel.chunk_len or cfg.policy.collect.n_steps
    columns = cfg.env.collector_env_num * 2 * int(cfg.env.get('team_size', 1))
    return int(4 * steps * columns * spec.column_step_bytes()) + (1 << 20)


def chunk_security(security: Security, spec: ChunkSpec) -> Security:
    """``security`` whose ``chunk`` messages must fit ``spec`` field by field (:class:`ChunkSchema`)."""
    return dataclasses.replace(security, protocol=dict(security.schemas, chunk=ChunkSchema(security.schemas['chunk'],
                                                                                           spec)))


def check_magnitudes(data: Dict[str, np.ndarray]) -> None:
    """Raise ValueError if a float array holds a number beyond any sane magnitude (the spec has refused the
    non-finite ones): it would poison training without failing a check of shape or dtype."""
    for name, array in data.items():
        if array.dtype.kind == 'f' and array.size and np.abs(array).max() > MAX_ABS_VALUE:
            raise ValueError(f'field {name!r} holds {np.abs(array).max():.3g}, beyond any sane {MAX_ABS_VALUE:g}')
