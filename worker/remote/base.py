"""What every worker process of the parallel mode shares: joining the commander, requests with
retries, heartbeats, the checks that end a worker, and parameters fetched from the commander.

A worker registers, receives the compiled config, sets its torch threads and seeds, and runs its
role (:mod:`~sparring.worker.remote.collector`, :mod:`~sparring.worker.remote.learner`,
:mod:`~sparring.worker.remote.evaluator`, :mod:`~sparring.worker.remote.inference`) with the same worker classes
the serial mode uses. A background thread heartbeats. A worker exits when the commander says so, when the commander stays
silent for ``parallel.worker_timeout_seconds``, or when the process that launched it dies.
"""
from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections import OrderedDict
from typing import Any, Callable, Dict, Iterator, List, Literal, Mapping, Optional, cast, overload

import gymnasium as gym
import numpy as np
import zmq
from easydict import EasyDict

from sparring.config import registry
from sparring.config.registry import POLICY_REGISTRY
from sparring.policy.base import Policy
from sparring.worker.remote.protocol import (ChunkReportBody, EvalReportBody, JobsBody, ParamsBody, PublishBody, Registered,
                                             TaskBody)
from sparring.worker.remote.transport import RequestClient
from sparring.worker.remote.wire import ID_HELD, Message, MessageError, RequestTimeout, arrays_to_params
from sparring.worker.run_kind import run_kind
from sparring.worker.runtime import seed_everything, set_torch_threads
from sparring.worker.seeds import player_seed, worker_rng_seed

log = logging.getLogger('sparring.worker')

EXIT_COMMANDER_LOST = 3
EXIT_ORPHANED = 4
EXIT_ID_HELD = 5  # another live worker held this worker's id for as long as it tried to register
EXIT_CANNOT_JOIN = 6  # the worker lacks what the run needs (a module of its import_names) and left
EXIT_DISK_FULL = 7  # a write of the worker's files (a checkpoint) failed, the disk full: it stopped, its last line says
FIRST_ATTEMPT_SECONDS = 2.0  # a request's first wait for its reply; replies come within milliseconds
TaskKind = Literal['collect_task', 'eval_task']  # the requests for work


class CommanderLost(RuntimeError):
    """The commander did not answer within the worker timeout."""


class CannotJoin(RuntimeError):
    """The worker cannot take part in the run it registered with (a module of the run's ``import_names`` does not
    import where it runs); it has said goodbye, so the commander frees its place at once."""


class SessionExpired(RuntimeError):
    """The commander no longer knows this worker's session (it timed the worker out, or restarted)."""


class IdHeld(RuntimeError):
    """Another live worker holds this worker's id (its predecessor's lease has not expired, or a peer took it)."""


class Worker:
    """Registration, requests with retries, heartbeats and the checks that end a worker.

    A role's worker joins the run as it is built: its ``__init__`` calls ``super().__init__`` (the sockets) and then
    builds its state inside ``with self.joining():`` (registered, so the run's config is at hand), so that everything
    ``run()`` and the heartbeat thread read exists, whole, once the worker does. Heartbeats start when the worker has
    registered; they carry the role's :meth:`stats` once its state is built.
    """

    role = ''
    # What registering gives (set by :meth:`register`, before a role's state is built).
    cfg: EasyDict
    par: EasyDict
    index: int
    player_ids: List[str]
    player_roles: Dict[str, str]  # in a game whose seats have roles, each active player's role (else empty)
    workdir: str
    observation_space: gym.Space  # one player's, as the run's kind gives them
    action_space: gym.Space

    def __init__(self, commander: str, security, worker_id: Optional[str] = None, player_id: Optional[str] = None,
                 parent_pid: Optional[int] = None, workdir: Optional[str] = None, timeout: float = 30.0,
                 bind_host: Optional[str] = None, replica: Optional[int] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.commander = commander
        self.clock = clock  # what contact and request deadlines are measured by (a test's own clock)
        self.requested_replica = replica
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
        self.directive = 'run'
        self.expected_chunks: Optional[int] = None
        self.last_contact = self.clock()
        self.lost = False
        self.expired = False
        self.resends = 0  # requests asked again after their reply did not come in time
        self.requests = 0  # numbered requests so far: a request asked again keeps its number
        self._stop_heartbeat = threading.Event()
        self._heartbeat_thread: Optional[threading.Thread] = None
        self._built = threading.Event()  # the role's state is whole: heartbeats may read its stats

    # -- joining -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def joining(self) -> Iterator[Registered]:
        """Register, and give the reply to the block that builds the role's state; the worker is closed if the block
        (or registering) fails, so a worker half built holds no socket or thread."""
        try:
            yield self.register()
        except BaseException:
            self.close()
            raise
        self._built.set()

    def register(self) -> Registered:
        """Join the commander; take the compiled config, the worker id and index it gives; start heartbeats."""
        body = dict(role=self.role, worker_id=self.requested_id, session=self.session, pid=os.getpid(),
                    host=socket.gethostname())
        if self.requested_player is not None:
            body['player_id'] = self.requested_player
        if self.requested_replica is not None:
            body['replica'] = self.requested_replica
        try:
            reply = self._register_when_free(body)
        except RequestTimeout as err:
            raise CommanderLost(f'{err}; is the commander running, and is the shared secret / CURVE key the same on '
                                f'both ends?') from None
        except MessageError as err:
            if err.reason not in ('unauthenticated', 'stale'):
                raise
            raise CommanderLost(str(err)) from None  # another secret, or a clock far off: say so now, not later
        info = cast(Registered, reply.body)
        self.cfg = EasyDict(info['config'])
        self.par = self.cfg.parallel
        self.worker_id = info['worker_id']
        self.client.sender = self.worker_id
        self.index = info['index']
        self.player_ids = info['player_ids']
        self.player_roles = dict(info.get('player_roles') or {})
        registry.ensure_builtins()
        try:
            registry.import_modules(self.cfg.import_names)
        except ImportError as err:
            self.goodbye()  # leave now: the commander would otherwise wait out the worker timeout
            raise CannotJoin(f'{self.worker_id}: {err}; a worker imports the run\'s import_names, so each must be '
                             f'importable where the worker runs (on its PYTHONPATH, as where the run started); this '
                             f'worker left the run') from None
        set_torch_threads(self.cfg.torch_threads)
        # Global RNGs differ per worker (and from the commander's); the envs and policies get their own seeds.
        seed_everything(worker_rng_seed(self.cfg.seed, self.index))
        self.observation_space, self.action_space = self.spaces()  # None and None in a game with roles
        self.workdir = self.workdir_override or os.path.join(self.cfg.exp_name, 'workers', self.worker_id)
        os.makedirs(self.workdir, exist_ok=True)
        self.last_contact = self.clock()
        self._heartbeat_thread = threading.Thread(target=self._heartbeat_loop, name='heartbeat', daemon=True)
        self._heartbeat_thread.start()
        return info

    def _register_when_free(self, body: dict):
        """Register; a learner replica whose lead has not joined yet asks again until the timeout, and a worker whose
        id is still held (its killed predecessor's lease runs until it has been silent for the worker timeout)
        until twice that: then IdHeld."""
        started = time.monotonic()
        while True:
            try:
                return self.client.request('register', body, timeout=self.timeout)
            except MessageError as err:
                waited = time.monotonic() - started
                if err.reason == ID_HELD and waited <= 2 * self.timeout:
                    time.sleep(1.0)
                    continue
                if err.reason == ID_HELD:
                    raise IdHeld(str(err)) from None
                if err.reason != 'busy' or 'has not joined yet' not in str(err) or waited > self.timeout:
                    raise
                time.sleep(0.5)

    def spaces(self, role: Optional[str] = None):
        """(observation space, action space) of one seat (in a game whose seats have roles: ``role``'s; without a
        role there, None and None: no seat's spaces are every player's)."""
        if self.player_roles and role is None:
            return None, None
        return run_kind(self.cfg).spaces(role)

    def new_policy(self, seed: int, player_id: Optional[str] = None) -> Policy:
        """A fresh policy of the run's type; in a game whose seats have roles, for the role of ``player_id``."""
        role = self.player_roles.get(player_id) if player_id is not None else None
        if role is None:
            return POLICY_REGISTRY.get(self.cfg.policy.type)(self.cfg.policy, self.observation_space,
                                                             self.action_space, seed=seed)
        policy = POLICY_REGISTRY.get(self.cfg.policy.type)(self.cfg.policy, *self.spaces(role), seed=seed)
        policy.role = role
        return policy

    # -- talking -----------------------------------------------------------------------------
    # Each kind a worker asks with the body it writes (worker/remote/protocol.py); the session and number are added.
    @overload
    def request(self, kind: TaskKind, body: Optional[TaskBody] = None) -> Message: ...
    @overload
    def request(self, kind: Literal['jobs'], body: JobsBody) -> Message: ...
    @overload
    def request(self, kind: Literal['chunk_report'], body: ChunkReportBody) -> Message: ...
    @overload
    def request(self, kind: Literal['params_request'], body: ParamsBody) -> Message: ...
    @overload
    def request(self, kind: Literal['publish'], body: PublishBody, arrays: Mapping[str, np.ndarray]) -> Message: ...
    @overload
    def request(self, kind: Literal['eval_report'], body: EvalReportBody) -> Message: ...

    def request(self, kind: str, body: Optional[Mapping[str, Any]] = None,
                arrays: Optional[Mapping[str, np.ndarray]] = None) -> Message:
        """The reply to a request, asked again until the commander has answered nothing, not even a
        heartbeat, for ``worker_timeout_seconds``.

        The first attempt waits :data:`FIRST_ATTEMPT_SECONDS`, each later one twice as long as the one
        before, up to ``request_timeout_seconds``: one lost or late reply costs a resend, not the worker,
        and a large reply on a slow link still gets the time it needs while heartbeats say the commander
        lives. Every attempt carries the request's number, and the commander answers a number it has
        answered with the same reply, without doing the request twice.
        """
        self.requests += 1
        body = dict(body or {}, session=self.session, request_number=self.requests)
        started = self.clock()
        attempt = min(FIRST_ATTEMPT_SECONDS, self.par.request_timeout_seconds)
        while True:
            self.check_alive()
            remaining = max(started, self.last_contact) + self.par.worker_timeout_seconds - self.clock()
            if remaining <= 0:
                self.lost = True
                raise CommanderLost(f'{self.worker_id}: no answer to {kind!r} from {self.commander} for '
                                    f'{self.par.worker_timeout_seconds:.0f} s')
            wait = min(attempt, remaining)
            try:
                reply = self.client.request(kind, body, arrays, timeout=wait)
            except RequestTimeout:
                self.resends += 1
                log.warning('%s: no answer to %r within %.1f s; asking again', self.worker_id, kind, wait)
                attempt = min(2 * attempt, self.par.request_timeout_seconds)
                continue
            except MessageError as err:
                if err.reason == 'session':
                    self.expired = True
                    raise SessionExpired(str(err)) from None
                if err.reason == 'stale':  # this clock went far off the commander's: no request of ours gets in
                    raise CommanderLost(str(err)) from None
                raise
            self.last_contact = self.clock()  # an answer is a sign of life, as a heartbeat's is
            return reply

    def work_on(self, kind: TaskKind, do: Callable[[dict], None]) -> None:
        """Ask for tasks (``collect_task``, ``eval_task``) and do each, until the commander says stop."""
        while self.directive != 'stop':
            reply = self.request(kind, self.task_request())
            if reply.kind == 'stop':
                return
            if reply.kind == 'wait':
                time.sleep(reply.body['seconds'])
                continue
            do(reply.body)

    def fetch_params(self, ref: str, have_version: Optional[int] = None) -> Message:
        """The parameters under ``ref`` (``unchanged`` when the worker holds ``have_version`` of them already), asked
        again while the commander says to come back later (``wait``)."""
        while True:
            reply = self.request('params_request', ParamsBody(ref=ref, have_version=have_version))
            if reply.kind != 'wait':
                break
            time.sleep(reply.body['seconds'])
        if reply.kind != 'params':
            raise RuntimeError(f'{self.worker_id}: expected parameters for {ref!r}, got a {reply.kind!r} reply')
        return reply

    def check_alive(self) -> None:
        if self.lost:
            raise CommanderLost(f'{self.worker_id}: the commander at {self.commander} answered neither heartbeats '
                                f'nor requests for {self.par.worker_timeout_seconds:.0f} s')
        if self.expired:
            raise SessionExpired(f'{self.worker_id}: the commander no longer knows this session')

    def stats(self) -> Dict[str, float]:
        """Figures sent with each heartbeat (numbers only)."""
        return {}

    def heartbeat_extra(self) -> dict:
        """Fields a role adds to its next heartbeat (called from the heartbeat thread)."""
        return {}

    def heartbeat_lost(self, extra: dict) -> None:
        """The heartbeat carrying ``extra`` did not get through: keep what it carried for the next one."""

    def task_request(self) -> TaskBody:
        """Fields a role adds to its next task request."""
        return {}

    def _heartbeat_loop(self) -> None:
        client = RequestClient(self.context, self.commander, self.security, sender=f'{self.worker_id}/heartbeat',
                               timeout=max(self.par.heartbeat_seconds * 2, 1.0))
        try:
            while not self._stop_heartbeat.wait(self.par.heartbeat_seconds):
                if self.parent_pid is not None and process_gone(self.parent_pid):
                    log.error('%s: the launcher (pid %d) is gone; exiting', self.worker_id, self.parent_pid)
                    os._exit(EXIT_ORPHANED)
                extra = self.heartbeat_extra()
                try:
                    stats = dict(self.stats() if self._built.is_set() else {}, resends=float(self.resends))
                    reply = client.request('heartbeat', dict(session=self.session, stats=stats, **extra))
                except Exception as err:
                    self.heartbeat_lost(extra)
                    if isinstance(err, RequestTimeout):
                        if self.clock() - self.last_contact > self.par.worker_timeout_seconds:
                            self.lost = True
                    elif isinstance(err, MessageError):
                        self.expired = self.expired or err.reason == 'session'
                    else:  # the heartbeat must outlive any surprise, or the worker is timed out
                        log.exception('%s: heartbeat failed', self.worker_id)
                    continue
                self.last_contact = self.clock()
                self.directive = reply.body['state']
                if 'expected_chunks' in reply.body:
                    self.expected_chunks = reply.body['expected_chunks']
        finally:
            client.close()

    def goodbye(self) -> None:
        """Leave on purpose, with the last figures (a heartbeat's are up to a beat behind the work it ends on)."""
        body: dict = dict(session=self.session)
        if self._built.is_set():
            try:
                body['stats'] = dict(self.stats(), resends=float(self.resends))
            except Exception:  # a role that failed half-way still leaves at once; its heartbeat's figures stand
                log.exception('%s: its last figures could not be read', self.worker_id)
        try:
            self.client.request('goodbye', body, timeout=min(self.timeout, 5.0))
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
    """The :class:`~sparring.worker.policy_pool.ParamStore` interface over the commander's store: frozen parameters
    are fetched on first use, and the ``max_entries`` most recently used are kept (a league's snapshots grow with
    the run; one evicted is fetched again when it is drawn)."""

    def __init__(self, worker: Worker, max_entries: int = 64) -> None:
        if max_entries < 1:
            raise ValueError(f'RemoteParamStore: max_entries must be >= 1, got {max_entries}')
        self._cache: 'OrderedDict[str, dict]' = OrderedDict()
        self.max_entries = max_entries
        self.worker = worker

    def get(self, ref: str) -> dict:
        """``{'params', 'policy_cfg', 'version'}`` of the snapshot ``ref``."""
        entry = self._cache.get(ref)
        if entry is not None:
            self._cache.move_to_end(ref)
            return entry
        reply = self.worker.fetch_params(ref)
        entry = self._cache[ref] = dict(params=arrays_to_params(reply.arrays),
                                        policy_cfg=EasyDict(reply.body['policy_cfg']),
                                        version=int(reply.body['version']))
        if len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)
        return entry


class PlayerPolicies:
    """Local copies of active players' policies, kept at their newest published version, and the
    :class:`~sparring.worker.policy_pool.PolicyPool` that also serves snapshots and bots."""

    def __init__(self, worker: Worker, seed: int) -> None:
        self.worker = worker
        self.seed = seed
        self.pool = run_kind(worker.cfg).policy_pool(RemoteParamStore(worker), seed)
        self.policies: Dict[str, Policy] = {}

    def get(self, player_id: str, refresh: bool = False) -> Policy:
        policy = self.policies.get(player_id)
        if policy is None:
            index = self.worker.player_ids.index(player_id)
            policy = self.policies[player_id] = self.worker.new_policy(player_seed(self.seed, index), player_id)
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
