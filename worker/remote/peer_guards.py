"""What a listening socket keeps about its peers: failed handshakes (:class:`HandshakeWatch`), peers that
failed to authenticate and are ignored for a while (:class:`PeerStrikes`), refusals counted by reason
(:class:`RejectCounter`) and signed messages already seen or dated too far from this clock
(:class:`ReplayGuard`)."""
from __future__ import annotations

import logging
import time
import uuid
from collections import OrderedDict
from typing import Dict, List

import zmq

from sparring.worker.remote.wire import Message, MessageError

log = logging.getLogger(__name__)

STRIKES_TO_BLOCK = 3  # failed authentications after which a peer's messages are dropped unread for a while
BLOCK_SECONDS = 60.0
MAX_PEERS_TRACKED = 10_000
REPLAY_WINDOW_SECONDS = 600.0  # a signed message dated further from the receiver's clock is refused
HANDSHAKE_FAILED = zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | \
    zmq.EVENT_HANDSHAKE_FAILED_AUTH
# A client's handshakes that must fail in a row before it says so: one may fail because its peer died mid-way.
HANDSHAKE_FAILURES_TO_REFUSE = 2


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
