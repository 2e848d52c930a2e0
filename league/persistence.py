"""Saving a league's state to one file, atomically, and reading it back.

The file is a numpy ``.npz`` archive: numpy arrays (the payoff) are stored as arrays, and
everything else as one JSON document (entry ``__state__``), so loading never unpickles
anything; the document carries the format version (:mod:`sparring.worker.format_version`), and a
file of another version, or of none, is refused. A write goes to a temporary file in the same
directory, is flushed to disk and then renamed over the target, so a crash leaves either the old
file or the new one, never half.
"""
from __future__ import annotations

import json
from typing import Any, Dict

import numpy as np

from sparring.league.errors import LeagueError
from sparring.worker.format_version import stamped, unstamped
from sparring.worker.state_file import StateFileError, read_archive, write_archive

_ARRAY_TAG = '__ndarray__'
FORMAT_VERSION = 2  # of league state files: raise it when what a reader finds in one changes


def save_state(state: dict, path: str) -> str:
    """Write ``state`` (nested dicts / lists / scalars / numpy arrays) to ``path``; returns it."""
    arrays: Dict[str, np.ndarray] = {}
    return write_archive(path, json.dumps(stamped(_pack(state, arrays), FORMAT_VERSION), allow_nan=False), arrays)


def load_state(path: str) -> dict:
    """Read a state written by :func:`save_state` (with the checks of
    :func:`~sparring.worker.state_file.read_archive`, the reader of every state file)."""
    try:
        document, arrays = read_archive(path, 'league state file', FORMAT_VERSION)
    except (OSError, StateFileError) as err:
        named = str(err) if path in str(err) else f'{path}: {err}'
        raise LeagueError(f'cannot read a league state file: {named[:400]}') from None
    return _unpack(unstamped(document, FORMAT_VERSION, path, 'league state file', LeagueError), arrays)


def _pack(obj: Any, arrays: Dict[str, np.ndarray]) -> Any:
    if isinstance(obj, np.ndarray):
        name = f'a{len(arrays)}'
        arrays[name] = obj
        return {_ARRAY_TAG: name}
    if isinstance(obj, dict):
        for key in obj:
            if not isinstance(key, str):
                raise LeagueError(f'league state: keys must be strings, got {key!r}')
        return {k: _pack(v, arrays) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_pack(v, arrays) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _unpack(obj: Any, arrays: Dict[str, np.ndarray]) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {_ARRAY_TAG}:
            return arrays[obj[_ARRAY_TAG]]
        return {k: _unpack(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_unpack(v, arrays) for v in obj]
    return obj
