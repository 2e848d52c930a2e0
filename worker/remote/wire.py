"""The wire format of the parallel mode: typed, schema-checked, signed multipart messages.

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
parsed), the header JSON, the kind, the body against the kind's schema
(:mod:`sparring.worker.remote.schema`), and every array (plain numeric dtypes only, byte length =
shape x item size). A failure raises :class:`MessageError` naming what was wrong and what was
expected. Which kinds exist is the protocol's business (the commander's message catalogue), passed
in as ``schemas``; this module knows none of them.
"""
from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import logging
import os
import stat
import struct
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import zmq

MAGIC = b'SPR1'
SECRET_ENV = 'SPARRING_SECRET'
MIN_SECRET_BYTES = 16
TAG_BYTES = hashlib.sha256().digest_size
MAX_HEADER_BYTES = 4 << 20
MAX_ARRAYS = 4096
MAX_TIME = 1e11  # seconds since the epoch: about the year 5100
# Numeric kinds only: bool, signed and unsigned integers, floats. Object, string, void
# (structured) and datetime dtypes could smuggle in anything but numbers.
ALLOWED_DTYPE_KINDS = frozenset('biuf')
HEADER_KEYS = frozenset({'kind', 'id', 'time', 'sender', 'reply_to', 'body', 'arrays', 'packed'})
# Arrays smaller than this travel together in one frame (a copy of a few kB costs less than a frame
# of its own); larger ones each get a frame that is sent and received without a copy.
PACK_BYTES = 1 << 16
ALIGN = 8


log = logging.getLogger(__name__)


def short(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters for an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + '...'

ID_HELD = 'id_held'  # the reason a register is refused while another live worker holds the id it asks for


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
           sender: str = '', reply_to: Optional[str] = None, schemas: Mapping[str, Any],
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
    return a.reshape(-1).view(np.uint8).data if a.nbytes else b''


def _refuse_constant(name: str):
    raise ValueError(f'{name} is not a finite number')


def _finite_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float('inf'), float('-inf')):
        raise ValueError(f'{short(text)} is not a finite number')
    return value


def decode(frames: Sequence, *, signer: Signer, schemas: Mapping[str, Any]) -> Message:
    """A :class:`Message` from received frames (``bytes`` or ``zmq.Frame``); arrays are read-only
    views of the frames. Raises :class:`MessageError`, and nothing else: whatever a peer's bytes
    provoke is a malformed message, dropped and counted, never the end of the process."""
    try:
        return _decode(frames, signer, schemas)
    except MessageError:
        raise
    except Exception as err:  # noqa: BLE001 -- any failure to decode a peer's bytes is a malformed message
        raise MessageError('malformed', f'undecodable message ({type(err).__name__}: {short(str(err))})') from None


def _decode(frames: Sequence, signer: Signer, schemas: Mapping[str, Any]) -> Message:
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
        header = json.loads(bytes(views[1]), parse_constant=_refuse_constant, parse_float=_finite_float)
    except (UnicodeDecodeError, ValueError) as err:  # JSONDecodeError is a ValueError
        raise MessageError('malformed', f'header is not UTF-8 JSON of finite numbers ({short(str(err))})') from None
    except RecursionError:
        raise MessageError('malformed', 'header is nested too deeply') from None
    if not isinstance(header, dict) or not HEADER_KEYS.issuperset(header) or not {'kind', 'body', 'arrays'} <= set(header):
        raise MessageError('malformed', f'header must be an object with keys {sorted(HEADER_KEYS)}, got '
                                        f'{short(header)}')
    kind = header['kind']
    if kind not in schemas:
        raise MessageError('malformed', f'unknown message kind {short(kind)}; known kinds: {", ".join(sorted(schemas))}')
    descriptors = header['arrays']
    packed = header.get('packed', 0)
    buffers = views[3:]
    if not isinstance(descriptors, list) or len(descriptors) > MAX_ARRAYS or type(packed) is not int \
            or not 0 <= packed <= len(descriptors) or len(buffers) != (packed > 0) + len(descriptors) - packed:
        raise MessageError('malformed', f'{kind!r} message: header lists {short(descriptors)} arrays ({packed!r} '
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
    if isinstance(stamp, bool) or not isinstance(stamp, (int, float)) or not 0 <= stamp <= MAX_TIME:
        raise MessageError('malformed', f'header "time" must be seconds since the epoch, got {short(stamp)}')
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
            raise MessageError('malformed', f'{kind!r} message: array {name!r}: bad dtype {short(text)}')
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
                                        f'{short(descriptor)}')
    name, dtype_text, shape = descriptor
    dtype = _dtype(dtype_text, name, kind)
    count = 1
    for d in shape:
        if type(d) is not int or d < 0 or len(shape) > 32:
            raise MessageError('malformed', f'{kind!r} message: array {name!r}: shape must be a list of ints >= 0, '
                                            f'got {short(shape)}')
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
