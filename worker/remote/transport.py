"""ZeroMQ sockets of the parallel mode, and how they authenticate.

Sockets fit each flow: :class:`RequestClient` (DEALER, request/reply with timeouts) talks to a
:class:`Server` (ROUTER) for control; :class:`DataPusher` (PUSH) streams chunks to a
:class:`DataPuller` (PULL). High-water marks bound every queue, so a slow receiver blocks its
senders instead of exhausting memory. :class:`Security` says how every socket authenticates (an
HMAC signer, optionally ZeroMQ CURVE keys: :func:`create_curve_keys`) and which protocol (message
kinds and their schemas) it speaks. Servers log and drop messages that fail to decode, and carry on.

With a shared secret, every socket also runs ZeroMQ CURVE with key pairs derived from the secret
(:func:`derived_curve_keys`), and a listening socket's ZAP handler (:class:`ZapGuard`) admits only the
derived client key. A peer without the secret cannot finish the handshake, so nothing it sends is
ever buffered: ZeroMQ reads a whole multi-part message before the reader sees its first frame, so a
bound applied while reading could not keep a flood of multi-frame messages out of memory. Failed
handshakes are counted as ``unauthenticated``; a client whose handshakes fail is told at once.

What a holder of the secret can make a listening socket hold is bounded too: ZeroMQ's limit
(``MAXMSGSIZE``) is per frame, so a listener also reads each message frame by frame and lets go of
one with more than ``max_frames`` frames or more than ``max_message_bytes`` in all as soon as it
crosses the bound (dropped and counted as ``oversized``), before a byte of it is hashed.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import ipaddress
import logging
import os
import threading
import time
import uuid
from collections import Counter, OrderedDict
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import zmq

from sparring.worker.remote.wire import (MAGIC, MAX_ARRAYS, MAX_HEADER_BYTES, SECRET_ENV, Message, MessageError,
                                         RequestTimeout, Signer, decode, encode, load_secret)

log = logging.getLogger(__name__)

AUTH_REFUSED = b'refused: bad signature'  # the server's only unsigned word, to a peer that failed to authenticate
STRIKES_TO_BLOCK = 3  # failed authentications after which a peer's messages are dropped unread for a while
BLOCK_SECONDS = 60.0
MAX_PEERS_TRACKED = 10_000
REPLAY_WINDOW_SECONDS = 600.0  # a signed message dated further from the receiver's clock is refused
MAX_FRAMES = MAX_ARRAYS + 4  # magic, header, signature, packed small arrays, one frame per large array
SMALL_HEADER_BYTES = 256 << 10  # a request's or a chunk's header: a few kB of body and array descriptors
# What a CURVE key pair derived from the shared secret is derived under, per role (HMAC-SHA256 of the label).
CURVE_KEY_LABELS = {'server': b'sparring server curve key', 'client': b'sparring client curve key'}
HANDSHAKE_FAILED = zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | \
    zmq.EVENT_HANDSHAKE_FAILED_AUTH
# A client's handshakes that must fail in a row before it says so: one may fail because its peer died mid-way.
HANDSHAKE_FAILURES_TO_REFUSE = 2


def is_loopback(host: str) -> bool:
    if host == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, secured: bool) -> None:
    """Refuse to listen beyond this machine without authentication."""
    if not secured and not is_loopback(host):
        raise ValueError(f'parallel.host={host!r} accepts connections from other machines; set a shared secret '
                         f'(${SECRET_ENV} or parallel.key_file) or parallel.auth="curve" first, or bind 127.0.0.1')


@dataclasses.dataclass(frozen=True)
class CurveKeys:
    """The CURVE keys (z85) of one process: the server's pair, this client's pair, and the client keys a server admits."""
    server_public: bytes
    server_secret: Optional[bytes]
    client_public: bytes
    client_secret: bytes
    admitted: Optional[frozenset] = None  # None: the keys in ``<curve_dir>/authorized``, read by a server


def derived_curve_keys(secret: bytes) -> CurveKeys:
    """CURVE key pairs derived from the shared secret: every holder of the secret computes the same ones, and
    nobody else can (a CURVE secret key is any 32 bytes; the public key follows from it)."""
    from zmq.utils import z85
    pairs = {}
    for role, label in CURVE_KEY_LABELS.items():
        private = z85.encode(hmac.new(secret, label, hashlib.sha256).digest())
        pairs[role] = (zmq.curve_public(private), private)
    return CurveKeys(*pairs['server'], *pairs['client'], admitted=frozenset({pairs['client'][0]}))


@dataclasses.dataclass
class Security:
    """How sockets authenticate (an HMAC signer with a shared secret, CURVE keys) and the protocol they speak:
    the message kinds and their schemas (the commander's catalogue).

    CURVE keys come from ``curve_dir`` when given; else, with a secret, they are derived from it (unless
    ``curve_from_secret`` is off, or this libzmq has no CURVE: then a warning, and HMAC alone)."""
    signer: Signer
    curve_dir: Optional[str] = None
    protocol: Optional[Mapping[str, Any]] = None
    curve_from_secret: bool = True

    @property
    def schemas(self) -> Mapping[str, Any]:
        if self.protocol is None:
            raise ValueError('Security: no protocol given; expected the message catalogue '
                             '(sparring.framework.protocol.PROTOCOL)')
        return self.protocol

    @property
    def secured(self) -> bool:
        return self.signer.enabled or self.curve_dir is not None

    @functools.cached_property  # worked out once, not per socket (a file read or a key derivation each)
    def curve(self) -> Optional[CurveKeys]:
        """The CURVE keys every socket of this process uses, or None for none."""
        if self.curve_dir:
            server_public, server_secret = _load_keypair(self.curve_dir, 'server')
            client_public, client_secret = _load_keypair(self.curve_dir, 'client')
            return CurveKeys(server_public, server_secret, client_public, client_secret)
        if not (self.signer.enabled and self.curve_from_secret):
            return None
        if not zmq.has('curve'):
            log.warning('this libzmq has no CURVE: sockets authenticate by HMAC signatures alone, so a peer without '
                        'the secret can make a listener buffer messages of many frames before they are refused')
            return None
        return derived_curve_keys(self.signer.secret)

    def server(self, socket: zmq.Socket) -> Optional[frozenset]:
        """Make ``socket`` a CURVE server (before it binds); returns the client keys it admits, or None."""
        keys = self.curve
        if keys is None:
            return None
        socket.curve_secretkey = keys.server_secret
        socket.curve_publickey = keys.server_public
        socket.curve_server = True
        return keys.admitted if keys.admitted is not None else frozenset(_authorised_keys(self.curve_dir))

    def client(self, socket: zmq.Socket) -> bool:
        """Make ``socket`` a CURVE client (before it connects); whether it is one."""
        keys = self.curve
        if keys is None:
            return False
        socket.curve_serverkey = keys.server_public
        socket.curve_publickey = keys.client_public
        socket.curve_secretkey = keys.client_secret
        return True


def make_security(auth: Optional[str] = None, key_file: Optional[str] = None,
                  curve_dir: Optional[str] = None, protocol: Optional[Mapping[str, Any]] = None) -> Security:
    """The security settings of one process. ``auth`` None picks what the given keys allow: CURVE
    with ``curve_dir``, HMAC with a secret (``$SPARRING_SECRET`` or ``key_file``), else none. CURVE
    and HMAC combine when both are given."""
    if auth not in (None, 'hmac', 'curve', 'none'):
        raise ValueError(f'parallel.auth: expected "hmac", "curve" or "none", got {auth!r}')
    secret = load_secret(key_file) if auth != 'none' else None
    if auth == 'hmac' and secret is None:
        raise ValueError(f'parallel.auth="hmac" needs a shared secret: set ${SECRET_ENV} or parallel.key_file')
    if auth == 'curve' and not curve_dir:
        raise ValueError('parallel.auth="curve" needs parallel.curve_dir (see create_curve_keys)')
    return Security(Signer(secret), curve_dir if auth in (None, 'curve') else None, protocol)


def create_curve_keys(directory: str) -> str:
    """Write a server and a client CURVE key pair into ``directory`` (copy it to every machine) and
    list the client as authorised; returns the directory."""
    import zmq.auth
    if not zmq.has('curve'):
        raise RuntimeError('this libzmq was built without CURVE support; use a shared secret (HMAC) instead')
    os.makedirs(os.path.join(directory, 'authorized'), exist_ok=True)
    zmq.auth.create_certificates(directory, 'server')
    public_file, _ = zmq.auth.create_certificates(directory, 'client')
    os.replace(public_file, os.path.join(directory, 'authorized', 'client.key'))
    return directory


def _load_keypair(directory: str, name: str, secret: bool = True) -> Tuple[bytes, Optional[bytes]]:
    import zmq.auth
    path = os.path.join(directory, f'{name}.key_secret')
    if not os.path.isfile(path):
        raise FileNotFoundError(f'parallel.curve_dir: no {name}.key_secret in {directory!r}; create the keys with '
                                f'sparring.worker.remote.transport.create_curve_keys({directory!r})')
    public, secret_key = zmq.auth.load_certificate(path)
    return public, (secret_key if secret else None)


def _authorised_keys(curve_dir: str) -> Dict[bytes, bool]:
    import zmq.auth
    return zmq.auth.load_certificates(os.path.join(curve_dir, 'authorized'))


class ZapGuard:
    """ZeroMQ's authentication handler (ZAP, RFC 27) of one context, on a thread: a CURVE client gets in only
    with an admitted public key.

    ZeroMQ takes one handler per context, so the context's listening sockets share one: each adds the keys it
    admits (:meth:`acquire`) and takes them back when it closes (:meth:`release`); the last stops the thread.
    The handler's socket is not one the context closes on ``destroy``: a context destroyed first terminates,
    the thread sees it, closes its socket and ends, and the destroy completes.
    """

    _by_context: Dict[int, 'ZapGuard'] = {}
    _lock = threading.Lock()

    def __init__(self, context: zmq.Context) -> None:
        self.context = context
        self.admitted: Counter = Counter()
        self.users = 0
        self._stop = threading.Event()
        self._socket = zmq.Socket(context, zmq.REP)  # not context.socket(): see the class's docstring
        self._socket.linger = 0
        self._socket.bind('inproc://zeromq.zap.01')
        self._thread = threading.Thread(target=self._serve, name='zap', daemon=True)
        self._thread.start()

    @classmethod
    def acquire(cls, context: zmq.Context, keys: Iterable[bytes]) -> 'ZapGuard':
        keys = list(keys)
        with cls._lock:
            guard = cls._by_context.get(id(context))
            if guard is None or guard.context is not context or not guard._thread.is_alive():
                guard = cls._by_context[id(context)] = cls(context)
            guard.admitted.update(keys)
            guard.users += 1
        return guard

    def release(self, keys: Iterable[bytes]) -> None:
        with self._lock:
            self.admitted.subtract(keys)
            self.users -= 1
            if self.users > 0:
                return
            if self._by_context.get(id(self.context)) is self:
                del self._by_context[id(self.context)]
        self._stop.set()
        self._thread.join()

    def _serve(self) -> None:
        try:
            while not self._stop.is_set():
                if self._socket.poll(200):  # a stop is seen within 0.2 s
                    self._socket.send_multipart(self._answer(self._socket.recv_multipart()))
        except zmq.ContextTerminated:
            pass
        finally:
            self._socket.close(linger=0)

    def _answer(self, request: List[bytes]) -> List[bytes]:
        """The reply to a ZAP request ``[version, id, domain, address, identity, mechanism, *credentials]``."""
        version, request_id = (request + [b'', b''])[:2]
        mechanism, credentials = (request[5], request[6:]) if len(request) >= 6 else (b'', [])
        if mechanism == b'CURVE' and len(credentials) == 1 and len(credentials[0]) == 32:
            from zmq.utils import z85
            if self.admitted[z85.encode(credentials[0])] > 0:
                return [version, request_id, b'200', b'OK', b'', b'']
        return [version, request_id, b'400', b'client key not admitted', b'', b'']


class CurveGuard:
    """Only clients whose public key is in ``<curve_dir>/authorized`` may connect to this context's CURVE
    servers (their own :class:`ZapGuard` admits their keys already; this one keeps the handler up)."""

    def __init__(self, context: zmq.Context, curve_dir: str) -> None:
        self._keys = list(_authorised_keys(curve_dir))
        self._guard = ZapGuard.acquire(context, self._keys)

    def stop(self) -> None:
        self._guard.release(self._keys)


class HandshakeWatch:
    """Failed CURVE handshakes on one socket, read from its monitor: a server counts them, a client learns from
    them that its keys are not the server's."""

    def __init__(self, socket: zmq.Socket) -> None:
        self.socket = socket
        self.monitor = socket.get_monitor_socket(HANDSHAKE_FAILED | zmq.EVENT_HANDSHAKE_SUCCEEDED,
                                                 addr=f'inproc://handshakes-{uuid.uuid4().hex}')
        self.failed = 0  # in all
        self.failed_in_a_row = 0  # since the last handshake that succeeded

    def update(self) -> int:
        """Read the events waiting; the number of failures among them."""
        from zmq.utils.monitor import parse_monitor_message
        new = 0
        while True:
            try:
                event = parse_monitor_message(self.monitor.recv_multipart(zmq.NOBLOCK))['event']
            except zmq.Again:
                return new
            if event & HANDSHAKE_FAILED:
                new += 1
                self.failed += 1
                self.failed_in_a_row += 1
            else:
                self.failed_in_a_row = 0

    def close(self) -> None:
        try:
            self.socket.disable_monitor()
        except zmq.ZMQError:
            pass
        self.monitor.close(linger=0)


# -- sockets --------------------------------------------------------------------------------------

class PeerStrikes:
    """Failed authentications per peer identity; a peer with too many is ignored (unhashed) for a while."""

    def __init__(self) -> None:
        self._strikes: 'OrderedDict[bytes, List[float]]' = OrderedDict()  # peer -> [count, blocked until]

    def strike(self, peer: bytes) -> None:
        entry = self._strikes.setdefault(peer, [0, 0.0])
        self._strikes.move_to_end(peer)
        entry[0] += 1
        if entry[0] >= STRIKES_TO_BLOCK:
            entry[1] = time.monotonic() + BLOCK_SECONDS
        while len(self._strikes) > MAX_PEERS_TRACKED:
            self._strikes.popitem(last=False)

    def count(self, peer: bytes) -> int:
        entry = self._strikes.get(peer)
        return int(entry[0]) if entry else 0

    def blocked(self, peer: bytes) -> bool:
        entry = self._strikes.get(peer)
        return entry is not None and entry[1] > time.monotonic()


class RejectCounter:
    """Counts dropped messages by reason and logs the first few of each, so a flood does not flood the log."""

    def __init__(self, where: str, log_first: int = 5) -> None:
        self.where = where
        self.counts: Dict[str, int] = {}
        self.log_first = log_first

    def add(self, err: MessageError, peer: str = '') -> None:
        n = self.counts.get(err.reason, 0) + 1
        self.counts[err.reason] = n
        if n <= self.log_first:
            log.warning('%s: dropped a %s message%s: %s', self.where, err.reason, f' from {peer}' if peer else '', err)


class ReplayGuard:
    """Rejects a signed message seen before, or older than ``window`` seconds: a captured message
    cannot be played back later."""

    def __init__(self, window: float = REPLAY_WINDOW_SECONDS, capacity: int = 200_000) -> None:
        self.window = window
        self.capacity = capacity
        self._seen: 'OrderedDict[str, float]' = OrderedDict()

    def check(self, message: Message) -> None:
        now = time.time()
        if abs(now - message.time) > self.window:
            ahead = message.time > now
            when = f'{abs(message.time - now):.0f} s {"ahead of" if ahead else "behind"}'
            raise MessageError('stale', f'{message.kind!r} message dated {when} the receiver\'s clock, which accepts '
                                        f'{self.window:.0f} s either way: synchronise the clocks of this machine and '
                                        f'the commander\'s (NTP), or this is a replay of an old message',
                               message_id=message.id)
        if message.id in self._seen:
            raise MessageError('replayed', f'message {message.id} was already received')
        self._seen[message.id] = message.time
        while self._seen and (len(self._seen) > self.capacity or next(iter(self._seen.values())) < now - self.window):
            self._seen.popitem(last=False)


def _tune(socket: zmq.Socket, max_message_bytes: int) -> None:
    socket.setsockopt(zmq.MAXMSGSIZE, max_message_bytes)
    socket.setsockopt(zmq.LINGER, 0)


class _Listener:
    """A bound socket that takes messages in: binding (a free port for port 0), and a receive loop
    that drops and counts what fails to decode, is unsigned or is replayed."""

    def __init__(self, context: zmq.Context, kind: int, host: str, port: int, security: Security, name: str,
                 queue: int, max_message_bytes: int, max_header_bytes: int = MAX_HEADER_BYTES,
                 max_frames: int = MAX_FRAMES) -> None:
        self.security = security
        self.name = name
        self.max_header_bytes = max_header_bytes
        self.max_message_bytes = max_message_bytes
        self.max_frames = max_frames
        self.strikes = PeerStrikes()
        self.socket = context.socket(kind)
        _tune(self.socket, max_message_bytes)
        # With a ZAP handler, ZeroMQ (4.3.5) queues a credential message ahead of a connection's first message;
        # a receive queue of one message then never takes that first message in: two at least.
        queue = max(queue, 2) if security.curve is not None else queue
        self.socket.setsockopt(zmq.RCVHWM, queue)
        self.socket.setsockopt(zmq.SNDHWM, queue)
        self._admitted = security.server(self.socket)
        if port:
            self.socket.bind(f'tcp://{host}:{port}')
        else:
            port = self.socket.bind_to_random_port(f'tcp://{host}')
        self.address = f'tcp://{host}:{port}'
        self.rejected = RejectCounter(name)
        self._replay = ReplayGuard() if security.signer.enabled else None
        self._guard: Optional[ZapGuard] = None
        self._handshakes: Optional[HandshakeWatch] = None
        if self._admitted is not None:
            self._guard = ZapGuard.acquire(context, self._admitted)
            self._handshakes = HandshakeWatch(self.socket)
        self._next_handshake_count = 0.0

    def _count_handshakes(self, idle: bool) -> None:
        """Count the peers refused at the CURVE handshake: whenever nothing is waiting, else once a second (a
        monitor read per message would cost a busy socket about 10 us a message)."""
        now = time.monotonic()
        if self._handshakes is None or (not idle and now < self._next_handshake_count):
            return
        self._next_handshake_count = now + 1.0
        for _ in range(self._handshakes.update()):
            self.rejected.add(MessageError('unauthenticated', 'a peer failed the CURVE handshake: it does not hold '
                                                              'the shared secret (or an authorised CURVE key)'))

    def _receive(self, timeout: float, routed: bool) -> Optional[Tuple[bytes, Message]]:
        """``(peer, message)`` of the next valid message (peer ``b''`` unless ``routed``), or None after ``timeout``."""
        deadline = time.monotonic() + timeout
        self._count_handshakes(idle=False)
        while True:
            try:  # what is waiting already is taken without a poll (a system call per message saved)
                frames = self._take(zmq.NOBLOCK, routed)
            except zmq.Again:
                self._count_handshakes(idle=True)
                remaining = deadline - time.monotonic()
                if not self.socket.poll(max(0, int(remaining * 1000))):
                    return None
                frames = self._take(0, routed)
            if frames is None:  # let go of already, frame by frame
                if time.monotonic() >= deadline:  # a flood must not keep the caller from its other duties
                    return None
                continue
            peer, frames = (frames[0].bytes, frames[1:]) if routed else (b'', frames)
            try:
                # Cheap refusals before a byte is hashed: a peer that failed authentication again and
                # again, and headers larger than any request of the protocol.
                if routed and self.strikes.blocked(peer):
                    raise MessageError('blocked', 'a peer that failed authentication repeatedly; ignored for now')
                if len(frames) > 1 and frames[1].buffer.nbytes > self.max_header_bytes:
                    raise MessageError('malformed', f'header of {frames[1].buffer.nbytes} bytes exceeds '
                                                    f'{self.max_header_bytes}')
                message = decode(frames, signer=self.security.signer, schemas=self.security.schemas)
                if self._replay is not None:
                    self._replay.check(message)
            except MessageError as err:
                self.rejected.add(err, peer.hex())
                if routed and err.reason == 'unauthenticated':
                    self.strikes.strike(peer)
                self._refused(peer, err)
                if time.monotonic() >= deadline:
                    return None
                continue
            return peer, message

    def _take(self, flags: int, routed: bool) -> Optional[list]:
        """The next message's frames; None (counted as ``oversized``) for one with more than ``max_frames``
        frames or ``max_message_bytes`` in all, whose frames are read and let go of one at a time."""
        frames: Optional[list] = []
        size, most_frames, most_bytes = 0, self.max_frames + routed, self.max_message_bytes + (256 if routed else 0)
        while True:
            frame = self.socket.recv(flags, copy=False)
            flags = 0  # the message's other frames are here already: ZeroMQ delivers a message whole
            size += len(frame)
            if frames is not None:
                if len(frames) >= most_frames or size > most_bytes:
                    frames = None  # from here on, each frame is let go of as soon as it is read
                else:
                    frames.append(frame)
            if not frame.more:
                break
        if frames is None:
            self.rejected.add(MessageError('oversized', f'a message of more than {self.max_frames} frames or '
                                                        f'{self.max_message_bytes} bytes; dropped unread'))
        return frames

    def _refused(self, peer: bytes, err: MessageError) -> None:
        """What to do about a dropped message beyond counting it."""

    def close(self) -> None:
        if self._handshakes is not None:
            self._handshakes.close()
            self._handshakes = None
        self.socket.close(linger=0)
        if self._guard is not None:
            self._guard.release(self._admitted or ())
            self._guard = None


class Server(_Listener):
    """A ROUTER socket bound at ``tcp://host:port``: receives requests, drops bad ones (counted), replies."""

    def __init__(self, context: zmq.Context, host: str, port: int, security: Security, name: str = 'commander',
                 max_message_bytes: int = 1 << 30, queue: int = 1000,
                 max_header_bytes: int = MAX_HEADER_BYTES) -> None:
        super().__init__(context, zmq.ROUTER, host, port, security, name, queue, max_message_bytes,
                         max_header_bytes)

    def recv(self, timeout: float) -> Optional[Tuple[bytes, Message]]:
        """The next valid request as ``(peer, message)``, or None after ``timeout`` seconds."""
        return self._receive(timeout, routed=True)

    def _refused(self, peer: bytes, err: MessageError) -> None:
        if err.reason in ('schema', 'stale') and err.message_id:
            # An authenticated peer sent a message that breaks its kind's schema, or dated far from this
            # clock (a worker whose clock is off): tell it why, rather than let it time out wondering.
            self.reply(peer, err.message_id, 'error', dict(error=str(err), reason=err.reason))
        elif err.reason == 'unauthenticated' and self.strikes.count(peer) == 1:
            # A worker with another secret learns it at once instead of timing out; a few bytes, once
            # per connection, so nobody can use the notice to amplify a flood.
            try:
                send_frames(self.socket, [peer, MAGIC, AUTH_REFUSED], zmq.NOBLOCK)
            except zmq.Again:
                pass

    def reply(self, peer: bytes, reply_to: Optional[str], kind: str, body: dict,
              arrays: Optional[Mapping[str, np.ndarray]] = None) -> None:
        frames = encode(kind, body, arrays, signer=self.security.signer, sender=self.name, reply_to=reply_to,
                        schemas=self.security.schemas)
        try:
            send_frames(self.socket, [peer, *frames], zmq.NOBLOCK)
        except zmq.Again:
            log.warning('%s: reply queue to a peer is full; reply dropped', self.name)


class RequestClient:
    """A DEALER socket for request/reply with a timeout; one request in flight at a time.

    A reply that does not answer the current request (a late answer to one that timed out) is
    skipped. An ``error`` reply raises :class:`MessageError`.
    """

    def __init__(self, context: zmq.Context, address: str, security: Security, sender: str,
                 timeout: float = 10.0, max_message_bytes: int = 1 << 30) -> None:
        self.context = context
        self.address = address
        self.security = security
        self.sender = sender
        self.timeout = timeout
        self.max_message_bytes = max_message_bytes
        self.rejected = RejectCounter(f'{sender} <- commander')
        self.socket = None
        self._handshakes: Optional[HandshakeWatch] = None
        self._connect()

    def _connect(self) -> None:
        self._close_socket()
        self.socket = self.context.socket(zmq.DEALER)
        _tune(self.socket, self.max_message_bytes)
        if self.security.client(self.socket):
            self._handshakes = HandshakeWatch(self.socket)
        self.socket.connect(self.address)

    def _wait(self, milliseconds: int, kind: str) -> bool:
        """Whether a reply came within ``milliseconds``; raises :class:`MessageError` once the server refused
        this socket's CURVE handshakes: its keys are not the server's, so no request of it gets through."""
        if self._handshakes is None:
            return bool(self.socket.poll(milliseconds))
        deadline = time.monotonic() + milliseconds / 1000
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        poller.register(self._handshakes.monitor, zmq.POLLIN)
        while True:
            ready = dict(poller.poll(max(0, int((deadline - time.monotonic()) * 1000))))
            if self.socket in ready:
                return True
            if self._handshakes.monitor in ready and self._handshakes.update() \
                    and self._handshakes.failed_in_a_row >= HANDSHAKE_FAILURES_TO_REFUSE:
                raise MessageError('unauthenticated', f'{self.address} refused the CURVE handshake of the {kind!r} '
                                                      f'request: this process\'s shared secret (or CURVE key) is not '
                                                      f'the commander\'s (set ${SECRET_ENV} or --key-file to the same '
                                                      f'secret on both ends)')
            if time.monotonic() >= deadline:
                return False

    def request(self, kind: str, body: dict, arrays: Optional[Mapping[str, np.ndarray]] = None,
                timeout: Optional[float] = None) -> Message:
        timeout = self.timeout if timeout is None else timeout
        request_id = uuid.uuid4().hex
        frames = encode(kind, body, arrays, signer=self.security.signer, sender=self.sender, message_id=request_id,
                        schemas=self.security.schemas)
        if not self.socket.poll(int(timeout * 1000), zmq.POLLOUT):
            self._connect()
            raise RequestTimeout(f'{kind!r} request to {self.address}: cannot send within {timeout:.1f} s')
        send_frames(self.socket, frames)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._wait(int(remaining * 1000), kind):
                # A fresh socket drops whatever the old one still had queued for the dead request.
                self._connect()
                raise RequestTimeout(f'no reply to {kind!r} from {self.address} within {timeout:.1f} s')
            frames = self.socket.recv_multipart(copy=False)
            if len(frames) == 2 and frames[1].bytes == AUTH_REFUSED:
                raise MessageError('unauthenticated', f'{self.address} refused the signature of the {kind!r} request: '
                                                      f'this process\'s shared secret (or CURVE key) is not the '
                                                      f'commander\'s (set ${SECRET_ENV} or --key-file to the same '
                                                      f'secret on both ends)')
            try:
                reply = decode(frames, signer=self.security.signer, schemas=self.security.schemas)
            except MessageError as err:
                self.rejected.add(err, self.address)
                continue
            if reply.reply_to != request_id:
                continue
            if reply.kind == 'error':
                refused = MessageError(reply.body['reason'], f'{kind!r} request refused by {self.address}: '
                                                             f'{reply.body["error"]}')
                if refused.reason == 'stale':  # this clock and the commander's disagree: say by how much
                    refused = MessageError('stale', f'{clock_skew(reply.time - time.time())}; {refused}')
                    self.rejected.add(refused, self.address)
                raise refused
            return reply

    def _close_socket(self) -> None:
        if self._handshakes is not None:
            self._handshakes.close()
            self._handshakes = None
        if self.socket is not None:
            self.socket.close(linger=0)
            self.socket = None

    def close(self) -> None:
        self._close_socket()


def clock_skew(offset: float) -> str:
    """What a worker says when the commander refused its messages for their date: ``offset`` is the commander's
    clock minus this machine's, as its reply's date shows."""
    side = 'ahead of' if offset > 0 else 'behind'
    return (f'the commander\'s messages are {abs(offset):.0f} s {side} this machine\'s clock (clock skew): '
            f'synchronise the clocks of both machines (NTP); a message dated more than '
            f'{REPLAY_WINDOW_SECONDS:.0f} s away from its receiver\'s clock is refused')


def send_frames(socket: zmq.Socket, frames: Sequence, flags: int = 0) -> None:
    """Send a message's frames: array memory without a copy, our own small byte strings copied
    (handing those to ZeroMQ without a copy costs more than the copy, as its release goes through
    pyzmq's garbage thread)."""
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        socket.send(frame, (flags if i == 0 else 0) | (zmq.SNDMORE if i < last else 0),
                    copy=not isinstance(frame, memoryview))


class DataPusher:
    """A PUSH socket to one receiver; ``send`` waits for room (the receiver's back-pressure) up to a timeout."""

    def __init__(self, context: zmq.Context, address: str, security: Security, sender: str, queue: int = 4,
                 linger_seconds: float = 5.0) -> None:
        self.address = address
        self.security = security
        self.sender = sender
        self.socket = context.socket(zmq.PUSH)
        self.socket.setsockopt(zmq.SNDHWM, queue)
        # Chunks already queued are still delivered when the collector exits after its last one.
        self.socket.setsockopt(zmq.LINGER, int(linger_seconds * 1000))
        security.client(self.socket)
        self.socket.connect(address)

    def send(self, kind: str, body: dict, arrays: Mapping[str, np.ndarray], timeout: float) -> bool:
        """True once queued; False if the receiver took nothing for ``timeout`` seconds."""
        frames = encode(kind, body, arrays, signer=self.security.signer, sender=self.sender,
                        schemas=self.security.schemas)
        try:  # room in the queue: no poll needed (a multipart message is refused, if at all, at its first frame)
            send_frames(self.socket, frames, zmq.NOBLOCK)
            return True
        except zmq.Again:
            pass
        if not self.socket.poll(int(timeout * 1000), zmq.POLLOUT):
            return False
        send_frames(self.socket, frames)
        return True

    def close(self, linger: Optional[float] = None) -> None:
        self.socket.close(linger=None if linger is None else int(linger * 1000))


class DataPuller(_Listener):
    """A PULL socket bound on ``host`` (a free port unless ``port``); ``recv`` drops bad messages (counted)."""

    def __init__(self, context: zmq.Context, host: str, security: Security, name: str, queue: int = 4,
                 max_message_bytes: int = 1 << 30, port: int = 0, max_header_bytes: int = MAX_HEADER_BYTES) -> None:
        super().__init__(context, zmq.PULL, host, port, security, name, queue, max_message_bytes, max_header_bytes)

    def recv(self, timeout: float) -> Optional[Message]:
        got = self._receive(timeout, routed=False)
        return None if got is None else got[1]


def advertised_address(bound: str, advertise_host: Optional[str] = None) -> str:
    """The address peers should connect to: ``0.0.0.0`` / ``*`` replaced by this machine's name."""
    host_port = bound.split('://', 1)[1]
    host, port = host_port.rsplit(':', 1)
    if host in ('0.0.0.0', '*', '::'):
        import socket
        host = advertise_host or socket.gethostname()
    elif advertise_host:
        host = advertise_host
    return f'tcp://{host}:{port}'
