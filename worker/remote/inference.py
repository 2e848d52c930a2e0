"""The forward-pass (inference) worker of the parallel mode: networks for many collectors, in batches.

It holds the networks acting names: a learning player's by its id and version, a snapshot's or reference
player's by its ``param_ref``, loaded from the commander's parameter service as collectors load them (by
reference; a learning player's only when a newer version is out). Collectors send ``forward`` requests
(observations, recurrent states, the network's reference and version); the worker gathers them for up to
``parallel.inference.max_batch`` rows or ``max_wait_ms`` (:class:`~sparring.worker.inference_forward.Batcher`),
runs one forward pass per network and answers each with its rows' distribution parameters, values and
next states; a ``forward_wave`` request carries several networks' rows (a battle step's home player and its
opponents), whose segments join the batch together and are answered in one reply (the messages:
:mod:`sparring.worker.remote.inference_protocol`). A batch runs before ``max_wait_ms`` when every collector socket
that asked in the last second has its request in it (each has one in flight at a time: waiting longer would
gather nothing). The collector draws the actions (:mod:`sparring.worker.inference_client`).

A collector first asks ``sync`` for the version of a reference it will act with for a chunk; the worker keeps
the last :data:`KEEP_VERSIONS` versions of each learning player, so a chunk started on one version ends on
it. Messages are signed and schema-checked as every role's (:data:`INFERENCE_PROTOCOL`), no larger than the run's
requests can be (:func:`request_bytes_limit`); each request is then checked against its network's
:class:`~sparring.worker.inference_forward.ForwardSpec` before it joins a batch, and one that fails (or names no
network this worker can load, or fails in any other way) is an error reply to its sender alone, counted under
``dropped/<why>``, never fatal and never its batch-mates' failure. The worker takes in
no more than ``max_batch`` rows at a time; the rest waits in the socket's bounded queues, and the senders
wait for their replies: a slow forward-pass worker slows its collectors down. It binds a free port and
writes its address to ``<exp_name>/inference/<worker id>.address`` (atomically, never through a link),
where the run's collectors read it (:func:`inference_addresses`).

In a game whose seats have roles the worker holds each role's networks: every request names the role its rows are
for, and is checked against that role's observations and against the role of the player it names; a request naming
no role, a role the game does not have, or a player of the other role is refused (``dropped/role``), and rows shaped
for the other role fail the check of the named role's observations (``dropped/observation``).
"""
from __future__ import annotations

import dataclasses
import logging
import math
import os
import re
import threading
import time
from collections import Counter, OrderedDict
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
import torch

from sparring.worker.inference_forward import (Batcher, ForwardOut, ForwardSpec, Pending, RequestRefused,
                                               forward_rows, forwards_remotely, split_out, stack_group)
from sparring.worker.policy_pool import BOT_PREFIX
from sparring.worker.remote.base import CommanderLost, PlayerPolicies, SessionExpired, Worker
from sparring.worker.remote.inference_protocol import (INFERENCE_PROTOCOL, MAX_ROWS, STATE_NAMES, WAVE_NAMES,
                                                       segment_array, segment_obs)
from sparring.worker.remote.security import Security
from sparring.worker.remote.transport import SMALL_HEADER_BYTES, Server
from sparring.worker.remote.wire import MessageError, arrays_to_params, short
from sparring.worker.run_files import write_atomically
from sparring.worker.run_kind import run_kind
from sparring.worker.runtime import set_torch_threads
from sparring.worker.seeds import collector_seed

log = logging.getLogger('sparring.worker')

KEEP_VERSIONS = 4  # versions of each learning player kept: a chunk started on one still finds it
ACTIVE_PEER_SECONDS = 1.0  # a peer that asked this recently is waited for (up to max_wait_ms) before a batch runs
MAX_MESSAGE_BYTES = 64 << 20  # a server built without a run's bound (tests, benchmarks): a run derives its own
ROWS_MARGIN = 4  # a request of a run may hold this many times the rows of a step of all its envs
ADDRESS_DIR = 'inference'


def request_bytes_limit(cfg, spec: ForwardSpec) -> int:
    """The largest request a forward-pass worker of this run takes: :data:`ROWS_MARGIN` times the rows of one step
    of a collector's envs (every seat and team agent, the home player and its opponents in one wave, as the run's
    kind counts them: two seats, or each of a game's three or more; a search evaluates one row per game), at most
    the protocol's ``MAX_ROWS``, each row as large as the run's network allows
    (:meth:`~sparring.worker.inference_forward.ForwardSpec.row_bytes`), plus 1 MB of headers; never more than
    ``parallel.max_message_mb``."""
    step_rows = cfg.env.collector_env_num * run_kind(cfg).acting_rows
    rows = min(MAX_ROWS, ROWS_MARGIN * step_rows)
    return min(cfg.parallel.max_message_mb << 20, rows * spec.row_bytes() + (1 << 20))


def inference_dir(exp_name: str) -> str:
    return os.path.join(exp_name, ADDRESS_DIR)


def inference_addresses(exp_name: str) -> List[str]:
    """The addresses the run's forward-pass workers wrote, by worker id; each file read without following a link."""
    directory = inference_dir(exp_name)
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith('.address'))
    except FileNotFoundError:
        return []
    addresses = []
    for name in names:
        try:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:  # a link (refused) or a file replaced meanwhile: the next read finds it
            continue
        with os.fdopen(fd, encoding='utf-8') as f:
            text = f.read(300).strip()
        if re.fullmatch(r'tcp://[A-Za-z0-9._\-\[\]:]+:\d{1,5}', text):
            addresses.append(text)
    return addresses


@dataclasses.dataclass
class Wave:
    """A wave request being answered: its segments' ``(version, output)`` as their forward passes are done."""
    peer: bytes
    message_id: str
    segments: int
    outs: list = dataclasses.field(default_factory=list)
    error: Optional[MessageError] = None

    def __post_init__(self) -> None:
        self.outs = [None] * self.segments


class VersionGone(LookupError):
    """The asked version of a network is not held (older than the kept ones, or this worker restarted)."""


class CommanderNetworks:
    """Networks by (reference, version, role), loaded from the commander's parameter service; ``role`` is None in a
    symmetric game, and in a game with roles a learning player is served only as the role it plays."""

    def __init__(self, worker: Worker, seed: int) -> None:
        self.worker = worker
        self.players = PlayerPolicies(worker, seed)  # its pool (one per role) serves snapshots by param_ref, cached
        self.live: Dict[str, 'OrderedDict[int, Any]'] = {}  # player id -> version -> policy, newest last

    def _check_role(self, ref: str, role: Optional[str]) -> None:
        plays = self.worker.player_roles.get(ref)
        if plays != role:
            raise RequestRefused('role', f'{short(ref)} plays the role {plays!r}, not {role!r}; expected a request '
                                         f'for its own role')

    def sync(self, ref: str, role: Optional[str] = None) -> int:
        """The newest version of ``ref`` (a learning player's fetched if newer than held)."""
        if ref.startswith(BOT_PREFIX):
            raise MessageError('schema', f'{short(ref)} is a bot; a collector plays bots itself')
        if ref not in self.worker.player_ids:
            try:
                return self.players.pool.get(ref, role).version
            except KeyError as err:
                raise MessageError('schema', str(err)) from None
        self._check_role(ref, role)
        versions = self.live.setdefault(ref, OrderedDict())
        have = next(reversed(versions)) if versions else None
        reply = self.worker.fetch_params(ref, have)
        if reply.body['unchanged'] and have is not None:
            return have
        # The oldest kept network is recycled for the new version (no new model, optimiser or allocation).
        policy = versions.popitem(last=False)[1] if len(versions) >= KEEP_VERSIONS else \
            self.worker.new_policy(0, ref)
        policy.set_params(arrays_to_params(reply.arrays), reply.body['version'])
        versions[reply.body['version']] = policy
        return reply.body['version']

    def get(self, ref: str, version: int, role: Optional[str] = None):
        if ref in self.worker.player_ids:
            self._check_role(ref, role)
            versions: 'OrderedDict[int, Any]' = self.live.get(ref, OrderedDict())
            if version not in versions and (not versions or version > next(reversed(versions))):
                self.sync(ref, role)  # a collector saw a newer version than this worker has: fetch it
                versions = self.live[ref]
            if version not in versions:
                raise VersionGone(f'{ref!r} version {version} is not held (held: {sorted(versions)})')
            return versions[version]
        policy = self.players.pool.get(ref, role)
        if policy.version != version:
            raise VersionGone(f'{ref!r} is version {policy.version} here, not {version}')
        return policy


class InferenceServer:
    """The socket and the batching loop of a forward-pass worker; ``networks`` has ``sync(ref, role)`` and
    ``get(ref, version, role)`` (socket-free tests give it policies directly); ``observation_shapes`` gives the
    observation shape of each role's rows: a symmetric game's one shape under None, or one per role in a game whose
    seats have roles (whose requests must then name one of them).

    Each request is checked against its network's :class:`~sparring.worker.inference_forward.ForwardSpec` before it
    joins a batch; whatever goes wrong with one request (a reference naming no network, a state of the wrong
    width, a wave whose segments disagree, NaNs, an exception of this worker's own while handling it) is an error
    reply to its sender alone, counted under ``dropped/<why>``; the loop goes on and the other requests of the
    batch are answered. A forward pass that fails for a group of requests is run again request by request, so
    the one that failed it is the only one refused."""

    def __init__(self, context, security, host: str, networks, max_batch: int, max_wait_ms: float,
                 observation_shapes: Mapping[Optional[str], Tuple[int, ...]], name: str = 'inference',
                 max_message_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self.networks = networks
        self.observation_shapes = {role: tuple(shape) for role, shape in observation_shapes.items()}
        self.batcher = Batcher(max_batch, max_wait_ms)
        # Per peer, two requests queue at most (a collector has one in flight per half of its envs).
        self.server = Server(context, host, 0, dataclasses.replace(security, protocol=INFERENCE_PROTOCOL), name=name,
                             max_message_bytes=max_message_bytes, queue=2, max_header_bytes=SMALL_HEADER_BYTES)
        self.address = self.server.address
        self.counters = dict(requests=0, rows=0, batches=0, forward_passes=0, malformed=0, version_gone=0)
        self.dropped: Counter = Counter()  # requests refused (not version_gone), by what was wrong: dropped/<why>
        self.seconds = dict(batching_delay_seconds=0.0, forward_seconds=0.0)  # summed over requests / passes
        self.last_asked: Dict[bytes, float] = {}  # peer -> when it last asked for a forward pass
        # OpenMP's thread count is the calling thread's: a thread serving here would otherwise run each pass with
        # a team of every core, whose barrier waits for a member the scheduler parked behind busy neighbours
        # (measured: 48 ms a one-row pass under load, 0.15 ms with the process's one thread).
        self.torch_threads = torch.get_num_threads()
        self._serving_thread: Optional[int] = None

    def _everyone_asked(self) -> bool:
        """Whether every peer that asked within :data:`ACTIVE_PEER_SECONDS` has a request in the batch: a peer has
        one request in flight at a time, so waiting longer would gather nothing more."""
        now = time.monotonic()
        self.last_asked = {p: t for p, t in self.last_asked.items() if now - t < ACTIVE_PEER_SECONDS}
        waiting = {request.reply_to[0] for request in self.batcher.pending}
        return all(peer in waiting for peer in self.last_asked)

    def serve(self, seconds: float) -> None:
        """Take requests and answer them for about ``seconds``."""
        if self._serving_thread != threading.get_ident():
            set_torch_threads(self.torch_threads)
            self._serving_thread = threading.get_ident()
        deadline = time.monotonic() + seconds
        while True:
            due = self.batcher.due_in()
            if due == 0.0 or (due is not None and self._everyone_asked()):
                self.run_batch()
                continue
            now = time.monotonic()
            if now >= deadline and due is None:
                return
            wait = max(0.0, (deadline - now) if due is None else due)
            # Poll first, then take what came without waiting: the transport's receive, asked to wait, first tries
            # a non-blocking read (an exception when nothing is there) and reads the CURVE handshake monitor
            # before it polls; profiled, that was a quarter of this worker's CPU per request, taken from the
            # learner on a small machine. The receive still counts refused handshakes: once a second while busy,
            # and whenever this waited for nothing (idle: nothing pending).
            if self.server.socket.poll(math.ceil(wait * 1000)) or due is None:
                got = self.server.recv(0.0)
                if got is not None:
                    self.handle(*got)

    def handle(self, peer: bytes, message) -> None:
        """Take one request into the batch, or answer it with an error: nothing about one request stops the loop."""
        try:
            if message.kind == 'sync':
                if message.body['ref'].startswith(BOT_PREFIX):
                    raise RequestRefused('bot', f'{short(message.body["ref"])} is a bot; a collector plays bots '
                                                f'itself')
                self._shape(message.body.get('role'))  # a role this game has (or none in a symmetric game)
                version = self.networks.sync(message.body['ref'], message.body.get('role'))
                self.server.reply(peer, message.id, 'synced', dict(ref=message.body['ref'], version=int(version)))
            elif message.kind == 'forward':
                self._take_forward(peer, message)
            elif message.kind == 'forward_wave':
                self._take_wave(peer, message)
            else:
                raise MessageError('schema', f'{message.kind!r} is not a request a forward-pass worker serves')
        except VersionGone as err:
            self.counters['version_gone'] += 1
            self._refuse(peer, message.id, MessageError('version', str(err)), None)
        except RequestRefused as err:
            self._refuse(peer, message.id, MessageError('schema', str(err)), err.why)
        except MessageError as err:
            self._refuse(peer, message.id, err, 'schema')
        except (CommanderLost, SessionExpired):
            raise  # this worker's own end, not the request's
        except Exception as err:  # noqa: BLE001  (one request's failure is its sender's error reply, never fatal)
            self._refuse(peer, message.id, MessageError('failed', f'{type(err).__name__}: {short(str(err), 200)}'),
                         'failed')

    def _refuse(self, peer: bytes, message_id: str, err: MessageError, why: Optional[str]) -> None:
        if why is not None:
            self.counters['malformed'] += 1
            self.dropped[why] += 1
        self.server.rejected.add(err, peer.hex())
        self.server.reply(peer, message_id, 'error', dict(error=str(err), reason=err.reason))

    def _shape(self, role: Optional[str]) -> Tuple[int, ...]:
        """The observation shape of rows for ``role``; :class:`RequestRefused` where the game has no such role (or
        has roles and the request names none)."""
        shape = self.observation_shapes.get(role)
        if shape is not None:
            return shape
        roles = [r for r in self.observation_shapes if r is not None]
        if not roles:
            raise RequestRefused('role', f'role {short(role)}: this game\'s seats have no roles; expected a request '
                                         f'naming none')
        if role is None:
            raise RequestRefused('role', f'a request naming no role in a game whose seats have the roles {roles}; '
                                         f'expected one of them')
        raise RequestRefused('role', f'role {short(role)} is not one of this game\'s roles {roles}')

    def _network(self, ref: str, version: int, role: Optional[str]):
        """The network a request names, able to forward remotely, and the spec its rows must meet;
        :class:`RequestRefused` if there is none."""
        if ref.startswith(BOT_PREFIX):
            raise RequestRefused('bot', f'{short(ref)} is a bot; a collector plays bots itself')
        shape = self._shape(role)
        try:
            policy = self.networks.get(ref, version, role)
        except (VersionGone, CommanderLost, SessionExpired, RequestRefused):
            raise
        except Exception as err:  # noqa: BLE001  (whatever the lookup raised: no such network here)
            raise RequestRefused('unknown_ref', f'{short(ref)} names no network this worker holds or can load '
                                                f'({type(err).__name__}: {short(str(err), 160)})') from None
        if not forwards_remotely(policy):
            raise RequestRefused('acts_whole', f'{short(ref)} acts whole (a bot or DQN); its collector plays it')
        return ForwardSpec.of(policy, shape)

    def _take_forward(self, peer: bytes, message) -> None:
        body, arrays = message.body, message.arrays
        role = body.get('role')
        spec = self._network(body['ref'], body['version'], role)
        obs, state = self._rows(arrays, body['rows'], 'obs', STATE_NAMES, spec)
        self.counters['requests'] += 1
        self.last_asked[peer] = time.monotonic()
        self.batcher.add(Pending((peer, message.id), (body['ref'], body['version'], role), obs, state))

    def _take_wave(self, peer: bytes, message) -> None:
        """A wave request: its segments go into the batch together, each with its network's key; the reply waits
        for all of them (:meth:`run_batch`). Every segment is checked before any is taken."""
        body, arrays = message.body, message.arrays
        refs, versions, rows = body['refs'], body['versions'], body['rows']
        roles = body.get('roles', [None] * len(refs))
        if not len(refs) == len(versions) == len(rows) == len(roles):
            raise RequestRefused('wave', f'forward_wave: refs, versions, rows (and roles) must be as long as each '
                                         f'other, got {len(refs)}, {len(versions)}, {len(rows)} and {len(roles)}')
        if any(name not in WAVE_NAMES[len(refs)] for name in arrays):
            raise RequestRefused('wave', f'forward_wave: arrays {sorted(set(arrays) - WAVE_NAMES[len(refs)])} '
                                         f'belong to no segment of {len(refs)}')
        wave = Wave(peer, message.id, len(refs))
        segments = []
        for s, (ref, version, n, role) in enumerate(zip(refs, versions, rows, roles)):
            spec = self._network(ref, version, role)
            obs, state = self._rows(arrays, n, segment_obs(s), tuple(segment_array(p, s) for p in STATE_NAMES), spec)
            segments.append(Pending((peer, message.id), (ref, version, role), obs, state, wave=wave, segment=s))
        self.counters['requests'] += 1
        self.last_asked[peer] = time.monotonic()
        self.batcher.add(*segments)

    @staticmethod
    def _rows(arrays, rows: int, obs_name: str, state_names, spec: ForwardSpec) -> tuple:
        """``(obs, state)`` of one request or segment, checked against its network's spec: the state arrays named
        in order (``state_0``, ``state_1``, ...), none missing in between."""
        if obs_name not in arrays:
            raise RequestRefused('observation', f'forward: missing array {obs_name!r}')
        names = [n for n in state_names if n in arrays]
        if names != list(state_names[:len(names)]):
            raise RequestRefused('state', f'forward: state arrays must be {state_names[0]}, {state_names[1]}, .. in '
                                          f'order, got {names}')
        parts = tuple(arrays[n] for n in names)
        spec.check(obs_name, arrays[obs_name], parts, rows)
        return arrays[obs_name], parts or None

    def run_batch(self) -> None:
        """One forward pass per network over the pending requests, each answered with its rows (a wave request
        once, when all its segments are done: they are all in this batch)."""
        self.counters['batches'] += 1
        started = time.monotonic()
        waves: Dict[int, Wave] = {}
        for group in self.batcher.take():
            self.seconds['batching_delay_seconds'] += sum(started - r.arrived for r in group)
            try:
                self._forward_group(group, waves)
            except Exception:  # noqa: BLE001  (a pass over several requests failed: find whose, one at a time)
                if len(group) == 1:
                    self._forward_alone(group[0], waves)
                else:
                    for request in group:
                        self._forward_alone(request, waves)
        for wave in waves.values():
            if wave.error is not None:
                self.server.reply(wave.peer, wave.message_id, 'error', dict(error=str(wave.error),
                                                                            reason=wave.error.reason))
                continue
            arrays: Dict[str, np.ndarray] = {}
            for s, (_, part) in enumerate(wave.outs):
                arrays.update({segment_array(name, s): a for name, a in _arrays(part).items()})
            self.server.reply(wave.peer, wave.message_id, 'forwarded_wave',
                              dict(versions=[version for version, _ in wave.outs]), arrays)

    def _forward_group(self, group: List[Pending], waves: Dict[int, 'Wave']) -> None:
        """One forward pass for ``group`` (requests for one network), each request answered (or its wave's share
        kept); a version no longer held is every request's ``version`` error, anything else raises."""
        ref, version, role = group[0].key
        try:
            policy = self.networks.get(ref, version, role)
        except VersionGone as err:
            self.counters['version_gone'] += len(group)
            self._fail(group, MessageError('version', str(err)), waves)
            return
        obs, state = stack_group(group)
        began = time.monotonic()
        out = forward_rows(policy, obs, state)
        self.seconds['forward_seconds'] += time.monotonic() - began
        parts = split_out(out, group)
        self.counters['forward_passes'] += 1
        self.counters['rows'] += len(obs)
        for request, part in zip(group, parts):
            if request.wave is None:
                peer, message_id = request.reply_to
                self.server.reply(peer, message_id, 'forwarded', dict(version=int(version)), _arrays(part))
            else:
                request.wave.outs[request.segment] = (int(version), part)
                waves[id(request.wave)] = request.wave

    def _forward_alone(self, request: Pending, waves: Dict[int, 'Wave']) -> None:
        try:
            self._forward_group([request], waves)
        except (CommanderLost, SessionExpired):
            raise
        except Exception as err:  # noqa: BLE001  (this request's own failure: its error reply, the loop goes on)
            refused = MessageError('failed', f'the forward pass of {short(request.key[0])} failed: '
                                             f'{type(err).__name__}: {short(str(err), 200)}')
            self.counters['malformed'] += 1
            self.dropped['failed'] += 1
            self.server.rejected.add(refused, request.reply_to[0].hex())  # logged for the first few
            self._fail([request], refused, waves)

    def _fail(self, group: List[Pending], err: MessageError, waves: Dict[int, 'Wave']) -> None:
        for request in group:
            if request.wave is None:
                peer, message_id = request.reply_to
                self.server.reply(peer, message_id, 'error', dict(error=str(err), reason=err.reason))
            else:  # the whole wave is refused (its client acts again for all of it)
                request.wave.error = request.wave.error or err
                waves[id(request.wave)] = request.wave

    def stats(self) -> Dict[str, float]:
        rejected = sum(self.server.rejected.counts.values())
        mean = self.counters['rows'] / max(1, self.counters['forward_passes'])
        return dict({k: float(v) for k, v in self.counters.items()}, **self.seconds, rejected=float(rejected),
                    mean_batch=mean, most_rows_held=float(self.batcher.most_rows),
                    **{f'dropped/{why}': float(n) for why, n in sorted(self.dropped.items())})

    def close(self) -> None:
        self.server.close()


def _arrays(out: ForwardOut) -> Dict[str, np.ndarray]:
    arrays = dict(head=np.ascontiguousarray(out.head, dtype=np.float32),
                  value=np.ascontiguousarray(out.value, dtype=np.float32))
    if out.log_std is not None:
        arrays['log_std'] = np.ascontiguousarray(out.log_std, dtype=np.float32)
    for i, part in enumerate(out.state or ()):
        arrays[STATE_NAMES[i]] = np.ascontiguousarray(part, dtype=np.float32)
    return arrays


class InferenceWorker(Worker):
    role = 'inference'

    def __init__(self, commander: str, security: Security, **options: Any) -> None:
        super().__init__(commander, security, **options)
        with self.joining():
            networks = CommanderNetworks(self, collector_seed(self.cfg.seed, self.index))
            inf = self.par.inference
            # Each role's observation shape and a fresh network of it (a symmetric game: one, under None).
            players = {self.player_roles.get(p): p for p in reversed(self.player_ids)}  # a player of each role
            shapes, specs = {}, []
            for role, player_id in players.items():
                space = self.observation_space if role is None else self.spaces(role)[0]
                shapes[role] = tuple(space.shape or ())
                specs.append(ForwardSpec.of(self.new_policy(0, player_id), shapes[role]))
            # What a holder of the secret can make this socket hold: requests of this run's size, no more.
            limit = max(request_bytes_limit(self.cfg, spec) for spec in specs)
            self.inference = InferenceServer(self.context, self.security, self.bind_host or self.par.host, networks,
                                             inf.max_batch, inf.max_wait_ms, shapes, name=self.worker_id,
                                             max_message_bytes=limit)

    def run(self) -> None:
        directory = inference_dir(self.cfg.exp_name)
        os.makedirs(directory, exist_ok=True)
        write_atomically(os.path.join(directory, f'{self.worker_id}.address'), self.inference.address + '\n')
        log.info('%s: serving forward passes at %s', self.worker_id, self.inference.address)
        try:
            while self.directive != 'stop':
                self.check_alive()
                self.inference.serve(0.2)
        finally:
            self.inference.close()
        self.goodbye()

    def stats(self) -> Dict[str, float]:
        return self.inference.stats()
