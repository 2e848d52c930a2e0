"""ZeroMQ messaging for the parallel mode: typed, schema-checked, signed multipart messages.

A message travels as one multipart ZeroMQ message::

    [MAGIC, header, tag, buffer_0, buffer_1, ...]

* ``header`` is UTF-8 JSON: ``{"kind", "id", "time", "sender", "reply_to", "body", "arrays"}``
  where ``arrays`` lists ``[name, dtype, shape]`` for each buffer;
* each ``buffer_i`` is the raw memory of one numpy array: sent without a copy, and read back as a
  numpy view of the received frame (never pickled); arrays under 64 kB share the first buffer
  (``packed``: how many, each at an 8-byte aligned offset), since a frame of their own costs more
  than copying them;
* ``tag`` is the HMAC-SHA256 of the magic, the header and every buffer (each preceded by its
  length) under a shared secret, or empty when authentication is off.

:func:`decode` checks, in this order, the magic, the tag (before any byte of the header is
parsed), the header JSON, the kind, the body against the kind's :class:`Schema`, and every array
(plain numeric dtypes only, byte length = shape x item size). A failure raises
:class:`MessageError` naming what was wrong and what was expected; servers log and drop such
messages and carry on. :data:`PROTOCOL` holds the schema of every message kind the commander
and its workers exchange.

Sockets fit each flow: :class:`RequestClient` (DEALER, request/reply with timeouts) talks to
a :class:`Server` (ROUTER) for control; :class:`DataPusher` (PUSH) streams chunks to a
:class:`DataPuller` (PULL). High-water marks bound every queue, so a slow receiver blocks its
senders instead of exhausting memory. Optionally every socket also runs ZeroMQ CURVE
(:func:`create_curve_keys`).
"""
from __future__ import annotations

import dataclasses
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import stat
import struct
import time
import uuid
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import zmq

MAGIC = b'SPR1'
SECRET_ENV = 'SPARRING_SECRET'
MIN_SECRET_BYTES = 16
TAG_BYTES = hashlib.sha256().digest_size
MAX_HEADER_BYTES = 4 << 20
MAX_ARRAYS = 4096
# Numeric kinds only: bool, signed and unsigned integers, floats. Object, string, void
# (structured) and datetime dtypes could smuggle in anything but numbers.
ALLOWED_DTYPE_KINDS = frozenset('biuf')
HEADER_KEYS = frozenset({'kind', 'id', 'time', 'sender', 'reply_to', 'body', 'arrays', 'packed'})
# Arrays smaller than this travel together in one frame (a copy of a few kB costs less than a frame
# of its own); larger ones each get a frame that is sent and received without a copy.
PACK_BYTES = 1 << 16
ALIGN = 8

log = logging.getLogger(__name__)


class MessageError(ValueError):
    """A message that is malformed, unauthenticated or does not fit its kind's schema."""

    def __init__(self, reason: str, message: str, message_id: Optional[str] = None) -> None:
        super().__init__(message)
        self.reason = reason  # short category for counters: 'malformed', 'unauthenticated', 'schema', ...
        self.message_id = message_id  # the offending message's id, once its header could be read


class RequestTimeout(TimeoutError):
    """No reply within the timeout (the peer is gone, busy or dropped the request)."""


# -- authentication ------------------------------------------------------------------------------

def load_secret(key_file: Optional[str] = None) -> Optional[bytes]:
    """The shared secret: ``$SPARRING_SECRET`` if set, else the contents of ``key_file``, else None."""
    value = os.environ.get(SECRET_ENV)
    source = f'${SECRET_ENV}'
    if value:
        secret = value.encode('utf-8')
    elif key_file:
        if not os.path.isfile(key_file):
            raise FileNotFoundError(f'parallel.key_file: no such file {key_file!r}')
        mode = os.stat(key_file).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning('key file %s is readable by group or others; chmod 600 it', key_file)
        with open(key_file, 'rb') as f:
            secret = f.read().strip()
        source = f'key file {key_file}'
    else:
        return None
    if len(secret) < MIN_SECRET_BYTES:
        raise ValueError(f'{source}: the shared secret must be at least {MIN_SECRET_BYTES} bytes, got {len(secret)}')
    return secret


def new_secret() -> str:
    """A random secret for a local run (hex, 64 characters)."""
    return os.urandom(32).hex()


class Signer:
    """HMAC-SHA256 tags over a message's frames under a shared secret; no-op without one."""

    def __init__(self, secret: Optional[bytes]) -> None:
        self.secret = secret

    @property
    def enabled(self) -> bool:
        return self.secret is not None

    def tag(self, frames: Sequence) -> bytes:
        if self.secret is None:
            return b''
        mac = hmac.new(self.secret, digestmod=hashlib.sha256)
        for frame in frames:
            view = memoryview(frame)
            # Lengths are signed too, so bytes cannot move from one frame to the next unnoticed.
            mac.update(struct.pack('<Q', view.nbytes))
            mac.update(view)
        return mac.digest()

    def verify(self, frames: Sequence, tag: bytes) -> None:
        if self.secret is None:
            if tag:
                raise MessageError('unauthenticated', 'message carries a signature but this end has no secret '
                                                      f'(set ${SECRET_ENV} or parallel.key_file on both ends)')
            return
        if len(tag) != TAG_BYTES:
            raise MessageError('unauthenticated', f'message is not signed (tag of {len(tag)} bytes, expected '
                                                  f'{TAG_BYTES}): a peer without the shared secret')
        if not hmac.compare_digest(self.tag(frames), tag):
            raise MessageError('unauthenticated', 'bad signature: the peer does not hold the shared secret, or the '
                                                  'message was altered')


# -- schemas ------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Field:
    """One body field: accepted Python types, whether required, element types of a list."""
    types: Tuple[type, ...]
    required: bool = True
    items: Optional[Tuple[type, ...]] = None
    check: Optional[Callable[[Any], Optional[str]]] = None  # returns an error text or None

    def validate(self, name: str, value: Any, kind: str) -> None:
        if not _is_instance(value, self.types):
            raise MessageError('schema', f'{kind!r} message: field {name!r} must be {_type_names(self.types)}, '
                                         f'got {type(value).__name__} {_short(value)}')
        if self.items is not None and isinstance(value, list):
            for i, item in enumerate(value):
                if not _is_instance(item, self.items):
                    raise MessageError('schema', f'{kind!r} message: {name}[{i}] must be {_type_names(self.items)}, '
                                                 f'got {type(item).__name__} {_short(item)}')
        if self.check is not None and value is not None:
            problem = self.check(value)
            if problem:
                raise MessageError('schema', f'{kind!r} message: field {name!r} {problem}')


def field(*types: type, optional: bool = False, items: Optional[Tuple[type, ...]] = None,
          check: Optional[Callable[[Any], Optional[str]]] = None) -> Field:
    return Field(tuple(types), not optional, items, check)


@dataclasses.dataclass(frozen=True)
class Schema:
    """A message kind: its body fields and its arrays (``array_names`` None: any names)."""
    body: Mapping[str, Field] = dataclasses.field(default_factory=dict)
    required_arrays: Tuple[str, ...] = ()
    array_names: Optional[Tuple[str, ...]] = ()

    def validate(self, kind: str, body: Any, arrays: Mapping[str, np.ndarray]) -> None:
        if not isinstance(body, dict):
            raise MessageError('schema', f'{kind!r} message: body must be a JSON object, got {_short(body)}')
        unknown = sorted(set(body) - set(self.body))
        if unknown:
            raise MessageError('schema', f'{kind!r} message: unknown field(s) {unknown}; expected among '
                                         f'{sorted(self.body)}')
        for name, spec in self.body.items():
            if name not in body:
                if spec.required:
                    raise MessageError('schema', f'{kind!r} message: missing field {name!r}')
                continue
            spec.validate(name, body[name], kind)
        missing = [n for n in self.required_arrays if n not in arrays]
        if missing:
            raise MessageError('schema', f'{kind!r} message: missing arrays {missing}')
        if self.array_names is not None:
            extra = sorted(set(arrays) - set(self.array_names) - set(self.required_arrays))
            if extra:
                expected = sorted(set(self.array_names) | set(self.required_arrays))
                raise MessageError('schema', f'{kind!r} message: unexpected arrays {extra}; '
                                             f'expected {expected or "none"}')


def _is_instance(value: Any, types: Tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in types
    if isinstance(value, int) and float in types:
        return True
    return isinstance(value, types)


def _type_names(types: Tuple[type, ...]) -> str:
    return ' or '.join('null' if t is type(None) else t.__name__ for t in types)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + '...'


def _non_negative(value) -> Optional[str]:
    return None if value >= 0 else f'must be >= 0, got {value!r}'


def _outcome_pairs(value) -> Optional[str]:
    for i, pair in enumerate(value):
        if (len(pair) != 2 or not isinstance(pair[0], int) or isinstance(pair[0], bool)
                or pair[1] not in ('win', 'draw', 'loss')):
            return f'[{i}] must be [job_id, "win" | "draw" | "loss"], got {_short(pair)}'
    return None


def _numbers(value) -> Optional[str]:
    for key, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return f'[{key!r}] must be a number, got {_short(v)}'
    return None


def _outcome_lists(value) -> Optional[str]:
    for key, outcomes in value.items():
        if not isinstance(outcomes, list) or any(o not in ('win', 'draw', 'loss') for o in outcomes):
            return f'[{key!r}] must be a list of "win" | "draw" | "loss", got {_short(outcomes)}'
    return None


STR, INT, FLOAT, BOOL, LIST, DICT, NONE = str, int, float, bool, list, dict, type(None)
CHUNK_ARRAYS = ('obs', 'action', 'log_prob', 'value', 'reward', 'terminated', 'truncated', 'next_value')

#: Every message kind of the parallel mode and its schema. Requests go worker -> commander
#: (replies are the kinds in the second half); ``chunk`` goes collector -> learner.
PROTOCOL: Dict[str, Schema] = {
    # -- requests ----------------------------------------------------------------------------
    'register': Schema(dict(role=field(STR), worker_id=field(STR, NONE), session=field(STR), pid=field(INT),
                            host=field(STR), player_id=field(STR, NONE, optional=True))),
    'heartbeat': Schema(dict(session=field(STR), stats=field(DICT, optional=True, check=_numbers))),
    'goodbye': Schema(dict(session=field(STR))),
    'collect_task': Schema(dict(session=field(STR))),
    'jobs': Schema(dict(session=field(STR), player_id=field(STR), count=field(INT, check=_non_negative))),
    'chunk_report': Schema(dict(session=field(STR), task_id=field(INT, NONE), chunk_id=field(STR),
                                player_id=field(STR), version=field(INT, check=_non_negative),
                                env_steps=field(INT, check=_non_negative),
                                results=field(LIST, items=(list,), check=_outcome_pairs),
                                episode_returns=field(LIST, optional=True, items=(float,)))),
    'params_request': Schema(dict(session=field(STR), ref=field(STR), have_version=field(INT, NONE))),
    'publish': Schema(dict(session=field(STR), player_id=field(STR), version=field(INT, check=_non_negative),
                           train_iteration=field(INT, check=_non_negative), final=field(BOOL),
                           chunks_consumed=field(INT, check=_non_negative), endpoint=field(STR, optional=True),
                           stats=field(DICT, optional=True, check=_numbers)), array_names=None),
    'eval_task': Schema(dict(session=field(STR))),
    'eval_report': Schema(dict(session=field(STR), task_id=field(INT), player_id=field(STR),
                               version=field(INT), results=field(DICT, check=_outcome_lists),
                               returns=field(LIST, optional=True, items=(float,)))),
    # -- replies ----------------------------------------------------------------------------
    'registered': Schema(dict(worker_id=field(STR), session=field(STR), config=field(DICT),
                              index=field(INT), player_id=field(STR, NONE), train_iteration=field(INT),
                              version=field(INT), restore=field(BOOL), player_ids=field(LIST, items=(str,)))),
    'ack': Schema(dict(state=field(STR), accepted=field(INT, optional=True), rejected=field(INT, optional=True),
                       duplicate=field(BOOL, optional=True), expected_chunks=field(INT, optional=True),
                       reset_param_ref=field(STR, NONE, optional=True))),
    'task': Schema(dict(task_id=field(INT), player_id=field(STR), endpoint=field(STR))),
    'wait': Schema(dict(seconds=field(FLOAT), reason=field(STR))),
    'stop': Schema(dict(reason=field(STR))),
    'job_batch': Schema(dict(jobs=field(LIST, items=(dict,)))),
    'params': Schema(dict(ref=field(STR), version=field(INT), unchanged=field(BOOL),
                          policy_cfg=field(DICT, NONE)), array_names=None),
    'eval_job': Schema(dict(task_id=field(INT), player_id=field(STR), version=field(INT),
                            opponents=field(LIST, items=(list,)))),
    'error': Schema(dict(error=field(STR), reason=field(STR))),
    # -- data -------------------------------------------------------------------------------
    'chunk': Schema(dict(chunk_id=field(STR), player_id=field(STR), version=field(INT, check=_non_negative),
                         env_steps=field(INT, check=_non_negative)),
                    required_arrays=CHUNK_ARRAYS, array_names=None),
}


# -- encoding -----------------------------------------------------------------------------------

_JSON = json.JSONEncoder(separators=(',', ':'), allow_nan=False)  # NaN is not JSON: refuse it at the sender

@dataclasses.dataclass
class Message:
    kind: str
    body: dict
    arrays: Dict[str, np.ndarray]
    id: str
    sender: str
    time: float
    reply_to: Optional[str] = None


def encode(kind: str, body: dict, arrays: Optional[Mapping[str, np.ndarray]] = None, *, signer: Signer,
           sender: str = '', reply_to: Optional[str] = None, schemas: Mapping[str, Schema] = PROTOCOL,
           message_id: Optional[str] = None) -> List:
    """The frames of a message; large arrays are referenced, not copied (keep them alive until sent)."""
    arrays = {name: a if a.flags.c_contiguous else np.ascontiguousarray(a) for name, a in (arrays or {}).items()}
    if kind not in schemas:
        raise MessageError('schema', f'unknown message kind {kind!r}; known kinds: {", ".join(sorted(schemas))}')
    schemas[kind].validate(kind, body, arrays)
    small = [(name, a) for name, a in arrays.items() if a.nbytes < PACK_BYTES]
    large = [(name, a) for name, a in arrays.items() if a.nbytes >= PACK_BYTES]
    packed = len(small) if len(small) > 1 else 0
    descriptors = []
    for name, a in small + large:
        text = a.dtype.str
        _dtype(text, name, kind)
        descriptors.append([name, text, list(a.shape)])
    header = dict(kind=kind, id=message_id or os.urandom(16).hex(), time=time.time(), sender=sender,
                  reply_to=reply_to, body=body, arrays=descriptors, packed=packed)
    head = _JSON.encode(header).encode('utf-8')
    buffers = [_raw(a) for _, a in (large if packed else small + large)]
    if packed:
        parts = []
        for _, a in small:
            parts += [_raw(a), bytes(-a.nbytes % ALIGN)]
        buffers.insert(0, b''.join(parts))
    tag = signer.tag([MAGIC, head, *buffers])
    return [MAGIC, head, tag, *buffers]


def _raw(a: np.ndarray):
    return memoryview(a.reshape(-1).view(np.uint8)) if a.nbytes else b''


def decode(frames: Sequence, *, signer: Signer, schemas: Mapping[str, Schema] = PROTOCOL) -> Message:
    """A :class:`Message` from received frames (``bytes`` or ``zmq.Frame``); arrays are read-only
    views of the frames. Raises :class:`MessageError`."""
    views = [f.buffer if type(f) is zmq.Frame else memoryview(f) for f in frames]
    if len(views) < 3:
        raise MessageError('malformed', f'message has {len(views)} frame(s); expected at least 3 '
                                        f'(magic, header, signature)')
    if views[0] != MAGIC:
        raise MessageError('malformed', f'bad magic {bytes(views[0][:8])!r}; expected {MAGIC!r} '
                                        f'(not a sparring message, or another protocol version)')
    signer.verify([views[0], views[1], *views[3:]], bytes(views[2]))
    if views[1].nbytes > MAX_HEADER_BYTES:
        raise MessageError('malformed', f'header of {views[1].nbytes} bytes exceeds {MAX_HEADER_BYTES}')
    try:
        header = json.loads(bytes(views[1]))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise MessageError('malformed', f'header is not UTF-8 JSON ({err})') from None
    if not isinstance(header, dict) or not HEADER_KEYS.issuperset(header) or not {'kind', 'body', 'arrays'} <= set(header):
        raise MessageError('malformed', f'header must be an object with keys {sorted(HEADER_KEYS)}, got '
                                        f'{_short(header)}')
    kind = header['kind']
    if kind not in schemas:
        raise MessageError('malformed', f'unknown message kind {_short(kind)}; known kinds: {", ".join(sorted(schemas))}')
    descriptors = header['arrays']
    packed = header.get('packed', 0)
    buffers = views[3:]
    if not isinstance(descriptors, list) or len(descriptors) > MAX_ARRAYS or type(packed) is not int \
            or not 0 <= packed <= len(descriptors) or len(buffers) != (packed > 0) + len(descriptors) - packed:
        raise MessageError('malformed', f'{kind!r} message: header lists {_short(descriptors)} arrays ({packed!r} '
                                        f'packed) but {len(buffers)} buffer frame(s) came')
    specs = [_array_spec(d, kind) for d in descriptors]
    if packed:
        block, offset, own = buffers[0], 0, []
        for _, _, _, nbytes in specs[:packed]:
            own.append(block[offset:offset + nbytes])
            offset += nbytes + (-nbytes % ALIGN)
        if offset != block.nbytes:
            raise MessageError('malformed', f'{kind!r} message: the packed arrays need {offset} bytes, their frame '
                                            f'has {block.nbytes}')
        buffers = own + list(buffers[1:])
    arrays = {}
    for (name, dtype, shape, nbytes), buffer in zip(specs, buffers):
        if nbytes != buffer.nbytes:
            raise MessageError('malformed', f'{kind!r} message: array {name!r} {dtype.str}{tuple(shape)} needs '
                                            f'{nbytes} bytes, its frame has {buffer.nbytes}')
        if name in arrays:
            raise MessageError('malformed', f'{kind!r} message: array {name!r} twice')
        arrays[name] = np.frombuffer(buffer, dtype=dtype).reshape(shape)
    try:
        schemas[kind].validate(kind, header['body'], arrays)
    except MessageError as err:
        err.message_id = header.get('id') if isinstance(header.get('id'), str) else None
        raise
    for key in ('id', 'sender'):
        if not isinstance(header.get(key, ''), str):
            raise MessageError('malformed', f'header {key!r} must be a string')
    stamp = header.get('time', 0.0)
    if isinstance(stamp, bool) or not isinstance(stamp, (int, float)):
        raise MessageError('malformed', 'header "time" must be a number')
    reply_to = header.get('reply_to')
    if reply_to is not None and not isinstance(reply_to, str):
        raise MessageError('malformed', 'header "reply_to" must be a string or null')
    return Message(kind, header['body'], arrays, header.get('id', ''), header.get('sender', ''), float(stamp), reply_to)


def _check_dtype(dtype: np.dtype, name: str, kind: str) -> None:
    if dtype.kind not in ALLOWED_DTYPE_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise MessageError('malformed', f'{kind!r} message: array {name!r} has dtype {dtype.str!r}; only bool, '
                                        f'integer and float arrays may travel')


_DTYPES: Dict[str, np.dtype] = {}  # dtype text -> checked dtype: parsing one is dear on the hot path


def _dtype(text: str, name: str, kind: str) -> np.dtype:
    dtype = _DTYPES.get(text)
    if dtype is None:
        if len(text) > 8:
            raise MessageError('malformed', f'{kind!r} message: array {name!r}: bad dtype {_short(text)}')
        try:
            dtype = np.dtype(text)
        except TypeError:
            raise MessageError('malformed', f'{kind!r} message: array {name!r}: unknown dtype {text!r}') from None
        _check_dtype(dtype, name, kind)
        _DTYPES[text] = dtype
    return dtype


def _array_spec(descriptor: Any, kind: str) -> Tuple[str, np.dtype, list, int]:
    """``(name, dtype, shape, byte size)`` of an array descriptor, checked."""
    if not (type(descriptor) is list and len(descriptor) == 3 and type(descriptor[0]) is str
            and type(descriptor[1]) is str and type(descriptor[2]) is list):
        raise MessageError('malformed', f'{kind!r} message: array descriptor must be [name, dtype, shape], got '
                                        f'{_short(descriptor)}')
    name, dtype_text, shape = descriptor
    dtype = _dtype(dtype_text, name, kind)
    count = 1
    for d in shape:
        if type(d) is not int or d < 0 or len(shape) > 32:
            raise MessageError('malformed', f'{kind!r} message: array {name!r}: shape must be a list of ints >= 0, '
                                            f'got {_short(shape)}')
        count *= d
    return name, dtype, shape, count * dtype.itemsize


# -- parameters as arrays ----------------------------------------------------------------------

def params_to_arrays(params: Mapping[str, Any]) -> Dict[str, np.ndarray]:
    """A torch state dict as numpy arrays (views of CPU tensors where possible)."""
    return {name: tensor.detach().cpu().numpy() for name, tensor in params.items()}


def arrays_to_params(arrays: Mapping[str, np.ndarray]) -> Dict[str, Any]:
    """Numpy arrays (possibly read-only views of frames) as a torch state dict of owned tensors."""
    import torch
    return {name: torch.from_numpy(np.array(a, copy=True)) for name, a in arrays.items()}


# -- addresses and security settings ----------------------------------------------------------

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


@dataclasses.dataclass
class Security:
    """How sockets authenticate: an HMAC signer (shared secret) and optional CURVE keys."""
    signer: Signer
    curve_dir: Optional[str] = None

    @property
    def secured(self) -> bool:
        return self.signer.enabled or self.curve_dir is not None

    def server(self, socket: zmq.Socket) -> None:
        if self.curve_dir:
            public, secret = _load_keypair(self.curve_dir, 'server')
            socket.curve_secretkey = secret
            socket.curve_publickey = public
            socket.curve_server = True

    def client(self, socket: zmq.Socket) -> None:
        if self.curve_dir:
            server_public, _ = _load_keypair(self.curve_dir, 'server', secret=False)
            public, secret = _load_keypair(self.curve_dir, 'client')
            socket.curve_serverkey = server_public
            socket.curve_publickey = public
            socket.curve_secretkey = secret


def make_security(auth: Optional[str] = None, key_file: Optional[str] = None,
                  curve_dir: Optional[str] = None) -> Security:
    """The security settings of one process. ``auth`` None picks what the given keys allow: CURVE
    with ``curve_dir``, HMAC with a secret (``$SPARRING_SECRET`` or ``key_file``), else none. CURVE
    and HMAC combine when both are given."""
    if auth not in (None, 'hmac', 'curve', 'none'):
        raise ValueError(f'parallel.auth: expected "hmac", "curve" or "none", got {auth!r}')
    secret = load_secret(key_file) if auth != 'none' else None
    if auth == 'hmac' and secret is None:
        raise ValueError(f'parallel.auth="hmac" needs a shared secret: set ${SECRET_ENV} or parallel.key_file')
    if auth == 'curve' and not curve_dir:
        raise ValueError('parallel.auth="curve" needs parallel.curve_dir (see messaging.create_curve_keys)')
    return Security(Signer(secret), curve_dir if auth in (None, 'curve') else None)


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
                                f'sparring.framework.messaging.create_curve_keys({directory!r})')
    public, secret_key = zmq.auth.load_certificate(path)
    return public, (secret_key if secret else None)


class CurveGuard:
    """ZeroMQ's authentication handler for CURVE: only clients whose public key is in
    ``<curve_dir>/authorized`` may connect. One per process that binds sockets."""

    def __init__(self, context: zmq.Context, curve_dir: str) -> None:
        from zmq.auth.thread import ThreadAuthenticator
        self._auth = ThreadAuthenticator(context)
        self._auth.start()
        self._auth.configure_curve(domain='*', location=os.path.join(curve_dir, 'authorized'))

    def stop(self) -> None:
        self._auth.stop()


# -- sockets --------------------------------------------------------------------------------------

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

    def __init__(self, window: float = 600.0, capacity: int = 200_000) -> None:
        self.window = window
        self.capacity = capacity
        self._seen: 'OrderedDict[str, float]' = OrderedDict()

    def check(self, message: Message) -> None:
        now = time.time()
        if abs(now - message.time) > self.window:
            raise MessageError('stale', f'message {message.id} is {now - message.time:.0f} s old (clock skew or replay); '
                                        f'accepted within {self.window:.0f} s')
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
                 queue: int, max_message_bytes: int) -> None:
        self.security = security
        self.name = name
        self.socket = context.socket(kind)
        _tune(self.socket, max_message_bytes)
        self.socket.setsockopt(zmq.RCVHWM, queue)
        self.socket.setsockopt(zmq.SNDHWM, queue)
        security.server(self.socket)
        if port:
            self.socket.bind(f'tcp://{host}:{port}')
        else:
            port = self.socket.bind_to_random_port(f'tcp://{host}')
        self.address = f'tcp://{host}:{port}'
        self.rejected = RejectCounter(name)
        self._replay = ReplayGuard() if security.signer.enabled else None

    def _receive(self, timeout: float, routed: bool) -> Optional[Tuple[bytes, Message]]:
        """``(peer, message)`` of the next valid message (peer ``b''`` unless ``routed``), or None after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            try:  # what is waiting already is taken without a poll (a system call per message saved)
                frames = self.socket.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                remaining = deadline - time.monotonic()
                if not self.socket.poll(max(0, int(remaining * 1000))):
                    return None
                frames = self.socket.recv_multipart(copy=False)
            peer, frames = (frames[0].bytes, frames[1:]) if routed else (b'', frames)
            try:
                message = decode(frames, signer=self.security.signer)
                if self._replay is not None:
                    self._replay.check(message)
            except MessageError as err:
                self.rejected.add(err, peer.hex())
                self._refused(peer, err)
                continue
            return peer, message

    def _refused(self, peer: bytes, err: MessageError) -> None:
        """What to do about a dropped message beyond counting it."""

    def close(self) -> None:
        self.socket.close(linger=0)


class Server(_Listener):
    """A ROUTER socket bound at ``tcp://host:port``: receives requests, drops bad ones (counted), replies."""

    def __init__(self, context: zmq.Context, host: str, port: int, security: Security, name: str = 'commander',
                 max_message_bytes: int = 1 << 30, queue: int = 1000) -> None:
        super().__init__(context, zmq.ROUTER, host, port, security, name, queue, max_message_bytes)

    def recv(self, timeout: float) -> Optional[Tuple[bytes, Message]]:
        """The next valid request as ``(peer, message)``, or None after ``timeout`` seconds."""
        return self._receive(timeout, routed=True)

    def _refused(self, peer: bytes, err: MessageError) -> None:
        if err.reason == 'schema' and err.message_id:
            # An authenticated peer sent a message that breaks its kind's schema: tell it why.
            self.reply(peer, err.message_id, 'error', dict(error=str(err), reason=err.reason))

    def reply(self, peer: bytes, reply_to: Optional[str], kind: str, body: dict,
              arrays: Optional[Mapping[str, np.ndarray]] = None) -> None:
        frames = encode(kind, body, arrays, signer=self.security.signer, sender=self.name, reply_to=reply_to)
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
        self._connect()

    def _connect(self) -> None:
        if self.socket is not None:
            self.socket.close(linger=0)
        self.socket = self.context.socket(zmq.DEALER)
        _tune(self.socket, self.max_message_bytes)
        self.security.client(self.socket)
        self.socket.connect(self.address)

    def request(self, kind: str, body: dict, arrays: Optional[Mapping[str, np.ndarray]] = None,
                timeout: Optional[float] = None) -> Message:
        timeout = self.timeout if timeout is None else timeout
        request_id = uuid.uuid4().hex
        frames = encode(kind, body, arrays, signer=self.security.signer, sender=self.sender, message_id=request_id)
        if not self.socket.poll(int(timeout * 1000), zmq.POLLOUT):
            self._connect()
            raise RequestTimeout(f'{kind!r} request to {self.address}: cannot send within {timeout:.1f} s')
        send_frames(self.socket, frames)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.socket.poll(int(remaining * 1000)):
                # A fresh socket drops whatever the old one still had queued for the dead request.
                self._connect()
                raise RequestTimeout(f'no reply to {kind!r} from {self.address} within {timeout:.1f} s')
            try:
                reply = decode(self.socket.recv_multipart(copy=False), signer=self.security.signer)
            except MessageError as err:
                self.rejected.add(err, self.address)
                continue
            if reply.reply_to != request_id:
                continue
            if reply.kind == 'error':
                raise MessageError(reply.body['reason'], f'{kind!r} request refused by {self.address}: '
                                                         f'{reply.body["error"]}')
            return reply

    def close(self) -> None:
        if self.socket is not None:
            self.socket.close(linger=0)
            self.socket = None


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
        frames = encode(kind, body, arrays, signer=self.security.signer, sender=self.sender)
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
                 max_message_bytes: int = 1 << 30, port: int = 0) -> None:
        super().__init__(context, zmq.PULL, host, port, security, name, queue, max_message_bytes)

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
