"""The messages between collectors and forward-pass workers: their schemas, bounds and array names.

``forward`` carries one network's rows (``obs``, and a recurrent state as ``state_0``..); ``forward_wave`` carries
several networks' rows at once, segment s with ``refs[s]``, ``versions[s]``, ``rows[s]`` and the arrays
``obs_s``, ``state_<i>_s``, answered by one ``forwarded_wave`` whose arrays are ``head_s``, ``value_s``, ``log_std_s``
and ``state_<i>_s``. In a game whose seats have roles each request names the role its rows are for (``role``; a
wave's ``roles``, one per segment), so the forward-pass worker serves that role's network and checks the rows against
that role's observations; a symmetric game's requests name none. Every count is bounded (rows, segments, reference lengths), so what a sender can make a
forward-pass worker hold is bounded before a byte of it is used.
"""
from __future__ import annotations

from typing import Dict, Optional

from sparring.worker.remote.schema import INT, LIST, STR, Schema, field, non_negative
from sparring.worker.remote.wire import short

MAX_ROWS = 4096  # rows in one request at most
MAX_STATE_PARTS = 4  # arrays of a recurrent state (an LSTM's two)
MAX_REF_CHARS = 512
MAX_ROLE_CHARS = 64
MAX_SEGMENTS = 16  # networks in one wave request (a client splits a step that has more into several)
STATE_NAMES = tuple(f'state_{i}' for i in range(MAX_STATE_PARTS))


def _ref(value) -> Optional[str]:
    return None if 0 < len(value) <= MAX_REF_CHARS and value.isprintable() else \
        f'must be 1 to {MAX_REF_CHARS} printable characters, got {short(value)}'


def _role(value) -> Optional[str]:
    return None if 0 < len(value) <= MAX_ROLE_CHARS and value.isprintable() else \
        f'must be 1 to {MAX_ROLE_CHARS} printable characters, got {short(value)}'


def _roles(value) -> Optional[str]:
    if not 1 <= len(value) <= MAX_SEGMENTS:
        return f'must name 1 to {MAX_SEGMENTS} roles, got {len(value)}'
    return next((f'[{i}] {problem}' for i, problem in ((i, _role(v)) for i, v in enumerate(value)) if problem), None)


def _rows(value) -> Optional[str]:
    return None if 1 <= value <= MAX_ROWS else f'must be within 1..{MAX_ROWS}, got {value!r}'


def _refs(value) -> Optional[str]:
    if not 1 <= len(value) <= MAX_SEGMENTS:
        return f'must name 1 to {MAX_SEGMENTS} networks, got {len(value)}'
    return next((f'[{i}] {problem}' for i, problem in ((i, _ref(v)) for i, v in enumerate(value)) if problem), None)


def _versions(value) -> Optional[str]:
    return None if 1 <= len(value) <= MAX_SEGMENTS and all(v >= 0 for v in value) else \
        f'must be 1 to {MAX_SEGMENTS} versions >= 0, got {short(value)}'


def _segment_rows(value) -> Optional[str]:
    return None if 1 <= len(value) <= MAX_SEGMENTS and all(v >= 1 for v in value) and sum(value) <= MAX_ROWS else \
        f'must be 1 to {MAX_SEGMENTS} counts >= 1 adding up to at most {MAX_ROWS}, got {short(value)}'


def segment_obs(segment: int) -> str:
    """The name of a wave request's observations of its ``segment``-th network."""
    return f'obs_{segment}'


def segment_array(name: str, segment: int) -> str:
    """The name of a wave's array ``name`` (``state_0``, ``head``, ...) of its ``segment``-th network."""
    return f'{name}_{segment}'


VERSION = field(INT, check=non_negative)
ROLE = field(STR, optional=True, check=_role)  # the role a request's rows are for: only in a game with roles
# The arrays a wave request of n segments may carry.
WAVE_NAMES = [frozenset(a for s in range(n) for a in (segment_obs(s), *(segment_array(p, s) for p in STATE_NAMES)))
              for n in range(MAX_SEGMENTS + 1)]
WAVE_REQUEST_ARRAYS = tuple(sorted(WAVE_NAMES[MAX_SEGMENTS]))
WAVE_REPLY_ARRAYS = tuple(segment_array(n, s) for s in range(MAX_SEGMENTS)
                          for n in ('head', 'value', 'log_std', *STATE_NAMES))
INFERENCE_PROTOCOL: Dict[str, Schema] = {
    # -- requests (collector -> forward-pass worker) ---------------------------------------------------------
    'sync': Schema(dict(ref=field(STR, check=_ref), role=ROLE)),
    'forward': Schema(dict(ref=field(STR, check=_ref), version=VERSION, rows=field(INT, check=_rows), role=ROLE),
                      required_arrays=('obs',), array_names=STATE_NAMES),
    # Several networks' rows in one request (a battle step's home player and opponents): segment s has
    # refs[s], versions[s], rows[s] (roles[s] in a game with roles) and the arrays obs_s, state_s_0.. ; one reply
    # answers them all.
    'forward_wave': Schema(dict(refs=field(LIST, items=(STR,), check=_refs),
                                versions=field(LIST, items=(INT,), check=_versions),
                                rows=field(LIST, items=(INT,), check=_segment_rows),
                                roles=field(LIST, optional=True, items=(STR,), check=_roles)),
                           required_arrays=(segment_obs(0),), array_names=WAVE_REQUEST_ARRAYS),
    # -- replies ---------------------------------------------------------------------------------------------
    'synced': Schema(dict(ref=field(STR), version=VERSION)),
    'forwarded': Schema(dict(version=VERSION), required_arrays=('head', 'value'),
                        array_names=('log_std',) + STATE_NAMES),
    'forwarded_wave': Schema(dict(versions=field(LIST, items=(INT,))), array_names=WAVE_REPLY_ARRAYS),
    'error': Schema(dict(error=field(STR), reason=field(STR))),
}
