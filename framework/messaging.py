"""The parallel mode's messaging: the wire format and sockets of :mod:`sparring.worker.remote`, speaking
the commander's message catalogue (:data:`~sparring.framework.protocol.PROTOCOL`).

Everything the transport offers is importable from here under its usual name; :class:`Security`,
:func:`make_security`, :func:`encode` and :func:`decode` default to the catalogue, so a socket
built from here refuses any message the commander and its workers do not exchange.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional

from sparring.framework.protocol import CHUNK_ARRAYS, PROTOCOL  # noqa: F401
from sparring.worker.remote import transport, wire
from sparring.worker.remote.schema import Field, Schema, field  # noqa: F401
from sparring.worker.remote.transport import (CurveGuard, DataPuller, DataPusher, RejectCounter,  # noqa: F401
                                              ReplayGuard, RequestClient, Server, advertised_address, check_bind,
                                              create_curve_keys, is_loopback, send_frames)
from sparring.worker.remote.wire import (ALLOWED_DTYPE_KINDS, MAGIC, MAX_ARRAYS, MAX_HEADER_BYTES,  # noqa: F401
                                         MIN_SECRET_BYTES, SECRET_ENV, Message, MessageError, RequestTimeout, Signer,
                                         arrays_to_params, load_secret, new_secret, params_to_arrays)


@dataclasses.dataclass
class Security(transport.Security):
    """:class:`sparring.worker.remote.transport.Security` speaking :data:`PROTOCOL` unless told otherwise."""
    protocol: Optional[Mapping[str, Any]] = dataclasses.field(default_factory=lambda: PROTOCOL)


def make_security(auth: Optional[str] = None, key_file: Optional[str] = None, curve_dir: Optional[str] = None,
                  protocol: Mapping[str, Any] = PROTOCOL) -> transport.Security:
    """The security settings of one process (see :func:`sparring.worker.remote.transport.make_security`)."""
    return transport.make_security(auth, key_file, curve_dir, protocol)


def encode(*args, schemas: Mapping[str, Any] = PROTOCOL, **kwargs):
    """:func:`sparring.worker.remote.wire.encode` against the catalogue."""
    return wire.encode(*args, schemas=schemas, **kwargs)


def decode(frames, *, signer: Signer, schemas: Mapping[str, Any] = PROTOCOL) -> Message:
    """:func:`sparring.worker.remote.wire.decode` against the catalogue."""
    return wire.decode(frames, signer=signer, schemas=schemas)
