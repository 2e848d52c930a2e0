"""Checkpoints and parameter files without pickles: loading one never runs code from the file.

A state (nested dicts, lists, tuples, numbers, strings, numpy arrays and torch tensors: a learner's
parameters and optimiser, RNG states, counters) is written as a numpy ``.npz`` archive: every array
and tensor as an array of its own, everything else as one JSON document (entry ``__state__``) that
refers to them. :func:`load_state_file` reads it back with ``allow_pickle=False``.

The document carries the format version (:mod:`sparring.worker.format_version`); a file of another
version, or of none (the torch pickles of versions before it), is refused. Writes go to a temporary
file that is renamed into place.

:func:`read_archive` is the one reader of such archives (checkpoints, parameter files, the league state): it
refuses, before inflating or allocating anything, a member that is compressed (sparring writes them stored, so
a deflated member can only be crafted, and a few kB of it may inflate to gigabytes) and an array whose header
declares more bytes than the member holds. What it reads is bounded by the file's size.
"""
from __future__ import annotations

import json
import math
import os
import zipfile
from typing import Any, Dict, Tuple

import gymnasium as gym
import numpy as np
import torch

from sparring.worker.format_version import refusal, stamped, unstamped
from sparring.worker.run_files import atomic_replacement

STATE_ENTRY = '__state__'
FORMAT_VERSION = 1  # of state files: raise it when what a reader finds in one changes
_TAGS = ('__tensor__', '__ndarray__', '__tuple__', '__pairs__', '__space__')


class StateFileError(ValueError):
    """A state file that cannot be read: damaged, or of another format version."""


def save_state_file(state: Any, path: str) -> str:
    """Write ``state`` to ``path`` atomically; returns the path."""
    arrays: Dict[str, np.ndarray] = {}
    return write_archive(path, json.dumps(stamped(_pack(state, arrays), FORMAT_VERSION)), arrays)


def write_archive(path: str, document: str, arrays: Dict[str, np.ndarray]) -> str:
    """An ``.npz`` of ``document`` (entry ``__state__``) and ``arrays``, written to a temporary file in the same
    directory, flushed to disk and renamed over ``path``: a crash leaves the old file or the new one."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with atomic_replacement(path, 'wb', durable=True) as f:
        entries: Dict[str, Any] = {STATE_ENTRY: np.frombuffer(document.encode('utf-8'), dtype=np.uint8), **arrays}
        np.savez(f, **entries)
    return path


# Whatever a crafted file makes the reader raise (nesting too deep, a tag of the wrong type, an unhashable key, a
# string array as a tensor) is a damaged file: the caller falls back to an earlier checkpoint.
_DAMAGE = (ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError, MemoryError, OSError,
           EOFError, zipfile.BadZipFile)


def load_state_file(path: str) -> Any:
    """The state in ``path``; :class:`StateFileError` naming the file if it cannot be read safely."""
    document, arrays = read_archive(path, 'state file')
    try:
        return _unpack(unstamped(document, FORMAT_VERSION, path, 'state file', StateFileError), arrays)
    except StateFileError:  # of another format version: already says so
        raise
    except _DAMAGE as err:
        raise StateFileError(f'{path} is damaged ({type(err).__name__}: {str(err)[:200]}); expected a sparring '
                             f'state file') from None


def read_archive(path: str, what: str = 'state file',
                 version: int = FORMAT_VERSION) -> Tuple[Any, Dict[str, np.ndarray]]:
    """The parsed JSON document and the arrays of the archive at ``path``, a ``what`` of format ``version``
    (named in errors); :class:`StateFileError` naming the file if it cannot be read safely (see the module)."""
    if not os.path.exists(path):
        raise FileNotFoundError(f'{path}: no such {what}')
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            _refuse_compressed(archive, path)
    except (zipfile.BadZipFile, OSError) as err:
        raise StateFileError(f'{path} is damaged or cut short ({err}); expected a sparring {what}') from None
    if STATE_ENTRY + '.npy' not in names:  # a torch pickle, as versions before format versions wrote
        raise StateFileError(refusal(path, what, None, version))
    try:
        with zipfile.ZipFile(path) as archive:
            _check_array_sizes(archive)
        with np.load(path, allow_pickle=False) as archive:
            document = json.loads(bytes(archive[STATE_ENTRY]).decode('utf-8'))
            arrays = {name: archive[name] for name in archive.files if name != STATE_ENTRY}
    except _DAMAGE as err:
        raise StateFileError(f'{path} is damaged ({type(err).__name__}: {str(err)[:200]}); expected a sparring '
                             f'{what}') from None
    return document, arrays


def _refuse_compressed(archive: zipfile.ZipFile, path: str) -> None:
    """StateFileError for a member that is not stored as is: it would be inflated before any check could see its
    size (a 2 MB member may inflate to gigabytes), and sparring never writes one."""
    for info in archive.infolist():
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
            raise StateFileError(f'{path}: member {info.filename!r} is compressed ({info.compress_size} bytes that '
                                 f'would inflate to {info.file_size}); expected a sparring state file, whose members '
                                 f'are stored uncompressed. It is refused unread')


def _check_array_sizes(archive: zipfile.ZipFile) -> None:
    """ValueError unless every array member holds exactly the bytes its header declares: a header may not make
    the reader allocate more than the file holds."""
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    for info in archive.infolist():
        if not info.filename.endswith('.npy'):
            continue
        with archive.open(info) as member:
            version = np.lib.format.read_magic(member)
            if version not in readers:
                raise ValueError(f'member {info.filename}: .npy format {version}, expected 1.0 or 2.0')
            shape, _, dtype = readers[version](member)
            if dtype.hasobject:
                raise ValueError(f'member {info.filename}: an object array; expected numbers only')
            declared = math.prod(int(n) for n in shape) * dtype.itemsize
            held = info.file_size - member.tell()
        if declared != held:
            raise ValueError(f'member {info.filename} declares {declared} bytes of data ({dtype} {list(shape)}) '
                             f'but holds {held}')


def _pack(value: Any, arrays: Dict[str, np.ndarray]) -> Any:
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        key = f'a{len(arrays)}'
        if tensor.dtype == torch.bfloat16:  # numpy has no bfloat16: keep its bits
            arrays[key] = tensor.view(torch.int16).numpy().copy()
            return {'__tensor__': key, 'dtype': 'bfloat16'}
        arrays[key] = tensor.numpy().copy() if tensor.dim() else tensor.reshape(1).numpy().copy()
        return {'__tensor__': key, 'scalar': tensor.dim() == 0}
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise TypeError('a state file holds numeric arrays only, not object arrays')
        key = f'a{len(arrays)}'
        arrays[key] = value
        return {'__ndarray__': key}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {'__tuple__': [_pack(v, arrays) for v in value]}
    if isinstance(value, list):
        return [_pack(v, arrays) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and not any(k in _TAGS for k in value):
            return {k: _pack(v, arrays) for k, v in value.items()}
        return {'__pairs__': [[_pack(k, arrays), _pack(v, arrays)] for k, v in value.items()]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, gym.Space):  # e.g. a surgery adapter's old spaces
        return {'__space__': _pack(_describe_space(value), arrays)}
    raise TypeError(f'a state file cannot hold a {type(value).__name__}: {str(value)[:80]}')


def _unpack(value: Any, arrays: Dict[str, np.ndarray]) -> Any:
    if isinstance(value, list):
        return [_unpack(v, arrays) for v in value]
    if not isinstance(value, dict):
        return value
    if '__tensor__' in value:
        array = arrays[value['__tensor__']]
        if array.dtype.kind not in 'biufc':
            raise TypeError(f'tensor {value["__tensor__"]!r} holds {array.dtype} data; expected numbers')
        if value.get('dtype') == 'bfloat16':
            return torch.from_numpy(array.copy()).view(torch.bfloat16)
        tensor = torch.from_numpy(array.copy())
        return tensor.reshape(()) if value.get('scalar') else tensor
    if '__ndarray__' in value:
        return arrays[value['__ndarray__']]
    if '__tuple__' in value:
        return tuple(_unpack(v, arrays) for v in value['__tuple__'])
    if '__space__' in value:
        return _build_space(_unpack(value['__space__'], arrays))
    if '__pairs__' in value:
        return {_hashable(_unpack(k, arrays)): _unpack(v, arrays) for k, v in value['__pairs__']}
    return {k: _unpack(v, arrays) for k, v in value.items()}


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


def _describe_space(space: gym.Space) -> dict:
    """A gymnasium space as plain data (its kind and the arrays that define it)."""
    if isinstance(space, gym.spaces.Box):
        return dict(kind='box', low=space.low, high=space.high, dtype=space.dtype.str)
    if isinstance(space, gym.spaces.Discrete):
        return dict(kind='discrete', n=int(space.n), start=int(space.start))
    if isinstance(space, gym.spaces.MultiDiscrete):
        return dict(kind='multi_discrete', nvec=space.nvec, dtype=space.dtype.str)
    if isinstance(space, gym.spaces.MultiBinary):
        return dict(kind='multi_binary', n=np.asarray(space.n))
    if isinstance(space, gym.spaces.Dict):
        return dict(kind='dict', spaces={k: _describe_space(v) for k, v in space.spaces.items()})
    if isinstance(space, gym.spaces.Tuple):
        return dict(kind='tuple', spaces=[_describe_space(v) for v in space.spaces])
    raise TypeError(f'a state file cannot hold a {type(space).__name__} space')


def _build_space(d: dict) -> gym.Space:
    kind = d['kind']
    if kind == 'box':
        return gym.spaces.Box(low=d['low'], high=d['high'], dtype=np.dtype(d['dtype']))
    if kind == 'discrete':
        return gym.spaces.Discrete(d['n'], start=d['start'])
    if kind == 'multi_discrete':
        return gym.spaces.MultiDiscrete(d['nvec'], dtype=np.dtype(d['dtype']))
    if kind == 'multi_binary':
        return gym.spaces.MultiBinary(d['n'].tolist() if d['n'].ndim else int(d['n']))
    if kind == 'dict':
        return gym.spaces.Dict({k: _build_space(v) for k, v in d['spaces'].items()})
    if kind == 'tuple':
        return gym.spaces.Tuple([_build_space(v) for v in d['spaces']])
    raise StateFileError(f'unknown space kind {kind!r} in a state file')
