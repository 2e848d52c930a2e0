"""How the sockets of the parallel mode authenticate: the settings of one process (:class:`Security`: an HMAC
signer with a shared secret, CURVE keys, the protocol spoken), the CURVE key pairs (derived from the secret,
:func:`derived_curve_keys`, or written to a folder, :func:`create_curve_keys`), where a socket may bind without
them (:func:`check_bind`), and the ZAP handler that admits only the authorised client keys (:class:`ZapGuard`).

With a shared secret every socket also runs ZeroMQ CURVE with the key pairs derived from it, so a peer
without the secret cannot finish the handshake and nothing it sends is ever buffered.
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
from collections import Counter
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

import zmq

from sparring.worker.remote.wire import (SECRET_ENV, Signer, load_secret)

log = logging.getLogger(__name__)

# What a CURVE key pair derived from the shared secret is derived under, per role (HMAC-SHA256 of the label).
CURVE_KEY_LABELS = {'server': b'sparring server curve key', 'client': b'sparring client curve key'}


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
                             '(sparring.worker.remote.protocol.PROTOCOL)')
        return self.protocol

    @property
    def secured(self) -> bool:
        return self.signer.enabled or self.curve_dir is not None

    def describe(self) -> str:
        """How this process's sockets authenticate, in words (the commander says it when it starts)."""
        if self.curve_dir:
            return f'CURVE keys from {self.curve_dir}' + (' and HMAC signatures' if self.signer.enabled else '')
        if self.signer.enabled:
            return 'HMAC signatures' + (' and CURVE keys derived from the secret' if self.curve is not None else '')
        return 'no authentication'

    @functools.cached_property  # worked out once, not per socket (a file read or a key derivation each)
    def curve(self) -> Optional[CurveKeys]:
        """The CURVE keys every socket of this process uses, or None for none."""
        if self.curve_dir:
            server_public, server_secret = _load_keypair(self.curve_dir, 'server')
            client_public, client_secret = _load_keypair(self.curve_dir, 'client')
            return CurveKeys(server_public, server_secret, client_public, client_secret)
        if self.signer.secret is None or not self.curve_from_secret:
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
        if keys.admitted is not None:
            return keys.admitted
        assert self.curve_dir is not None  # keys without their admitted clients are read from a folder
        return frozenset(_authorised_keys(self.curve_dir))

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


def _load_keypair(directory: str, name: str) -> Tuple[bytes, bytes]:
    import zmq.auth
    path = os.path.join(directory, f'{name}.key_secret')
    if not os.path.isfile(path):
        raise FileNotFoundError(f'parallel.curve_dir: no {name}.key_secret in {directory!r}; create the keys with '
                                f'sparring.worker.remote.security.create_curve_keys({directory!r})')
    public, secret_key = zmq.auth.load_certificate(path)
    if secret_key is None:
        raise ValueError(f'parallel.curve_dir: {path!r} holds no secret key; expected a key pair written by '
                         f'sparring.worker.remote.security.create_curve_keys({directory!r})')
    return public, secret_key


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
