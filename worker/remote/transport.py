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

import logging
import time
import uuid
from typing import Mapping, Optional, Sequence, Tuple

import numpy as np
import zmq

from sparring.worker.remote.wire import (MAGIC, MAX_ARRAYS, MAX_HEADER_BYTES, SECRET_ENV, Message, MessageError,
                                         RequestTimeout, decode, encode)
from sparring.worker.remote.peer_guards import (HANDSHAKE_FAILURES_TO_REFUSE, REPLAY_WINDOW_SECONDS, HandshakeWatch,
                                                PeerStrikes, RejectCounter, ReplayGuard)
from sparring.worker.remote.security import Security, ZapGuard

log = logging.getLogger(__name__)

AUTH_REFUSED = b'refused: bad signature'  # the server's only unsigned word, to a peer that failed to authenticate
MAX_FRAMES = MAX_ARRAYS + 4  # magic, header, signature, packed small arrays, one frame per large array
SMALL_HEADER_BYTES = 256 << 10  # a request's or a chunk's header: a few kB of body and array descriptors


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
        self._handshakes: Optional[HandshakeWatch] = None
        self.socket = self._open()

    def _open(self) -> zmq.Socket:
        socket = self.context.socket(zmq.DEALER)
        _tune(socket, self.max_message_bytes)
        if self.security.client(socket):
            self._handshakes = HandshakeWatch(socket)
        socket.connect(self.address)
        return socket

    def _connect(self) -> None:
        """A fresh socket in place of the current one."""
        self._close_socket()
        self.socket = self._open()

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
        self.socket.close(linger=0)  # a second close does nothing

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
