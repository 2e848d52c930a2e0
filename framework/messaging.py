"""The parallel mode's sockets, speaking the commander's catalogue (:data:`~sparring.worker.remote.protocol.PROTOCOL`).

The wire format, the sockets and their security are :mod:`~sparring.worker.remote.wire`,
:mod:`~sparring.worker.remote.transport` and :mod:`~sparring.worker.remote.security`; they take the catalogue as
an argument, since they speak others too (the forward-pass workers' and a learner's own chunk check). :class:`Security`,
:func:`make_security`, :func:`encode` and :func:`decode` here default to the catalogue, so a socket
built from them refuses any message the commander and its workers do not exchange.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional

from sparring.worker.remote.protocol import PROTOCOL
from sparring.worker.remote import security, wire


@dataclasses.dataclass
class Security(security.Security):
    """:class:`sparring.worker.remote.security.Security` speaking :data:`PROTOCOL` unless told otherwise."""
    protocol: Optional[Mapping[str, Any]] = dataclasses.field(default_factory=lambda: PROTOCOL)


def make_security(auth: Optional[str] = None, key_file: Optional[str] = None, curve_dir: Optional[str] = None,
                  protocol: Mapping[str, Any] = PROTOCOL) -> security.Security:
    """The security settings of one process (see :func:`sparring.worker.remote.security.make_security`)."""
    return security.make_security(auth, key_file, curve_dir, protocol)


def encode(*args, schemas: Mapping[str, Any] = PROTOCOL, **kwargs):
    """:func:`sparring.worker.remote.wire.encode` against the catalogue."""
    return wire.encode(*args, schemas=schemas, **kwargs)


def decode(frames, *, signer: wire.Signer, schemas: Mapping[str, Any] = PROTOCOL) -> wire.Message:
    """:func:`sparring.worker.remote.wire.decode` against the catalogue."""
    return wire.decode(frames, signer=signer, schemas=schemas)
