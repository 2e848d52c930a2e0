"""Crafted state files (issue #28, defect 11): whatever a file makes the reader trip on is a StateFileError naming
the file, so a learner falls back to its previous checkpoint instead of crash-looping; array sizes are checked
against the bytes the file holds before anything is allocated."""
import io
import json
import os
import zipfile

import numpy as np
import pytest

from sparring.worker.checkpoint import CheckpointManager
from sparring.worker.format_version import stamped
from sparring.worker.state_file import FORMAT_VERSION, STATE_ENTRY, StateFileError, load_state_file, write_archive


def _npy(array: np.ndarray, shape=None) -> bytes:
    """The .npy bytes of ``array``, its header claiming ``shape`` if given."""
    out = io.BytesIO()
    header = np.lib.format.header_data_from_array_1_0(array)
    if shape is not None:
        header['shape'] = shape
    np.lib.format.write_array_header_2_0(out, header)
    out.write(array.tobytes())
    return out.getvalue()


def _zip(path, members: dict) -> str:
    with zipfile.ZipFile(path, 'w') as archive:
        for name, data in members.items():
            archive.writestr(name + '.npy', data)
    return str(path)


def _text(value) -> str:
    """A state file's document of the current format version: only the crafted part is wrong."""
    return json.dumps(stamped(value, FORMAT_VERSION))


def _document(value) -> np.ndarray:
    return np.frombuffer(_text(value).encode('utf-8'), dtype=np.uint8)


def crafted(tmp_path, kind: str) -> str:
    path = str(tmp_path / f'{kind}.pt')
    if kind == 'deep_json':
        return write_archive(path, '[' * 100_000 + ']' * 100_000, {})
    if kind == 'list_as_tensor':
        return write_archive(path, _text({'w': {'__tensor__': ['a0']}}), {'a0': np.zeros(2, np.float32)})
    if kind == 'unhashable_pairs_key':
        return write_archive(path, _text({'__pairs__': [[{'a': 1}, 2]]}), {})
    if kind == 'string_tensor':
        return write_archive(path, _text({'w': {'__tensor__': 'a0'}}), {'a0': np.array(['x', 'y'])})
    if kind == 'terabyte_array':  # 8 TB declared, 8 bytes held
        return _zip(path, {STATE_ENTRY: _npy(_document({'w': {'__ndarray__': 'a0'}})),
                           'a0': _npy(np.zeros(1, np.float64), shape=(2 ** 40,))})
    raise AssertionError(kind)


KINDS = ('deep_json', 'list_as_tensor', 'unhashable_pairs_key', 'string_tensor', 'terabyte_array')


@pytest.mark.parametrize('kind', KINDS)
def test_defect11_a_crafted_state_file_is_a_state_file_error_naming_it(tmp_path, kind):
    path = crafted(tmp_path, kind)
    with pytest.raises(StateFileError, match=os.path.basename(path)):
        load_state_file(path)


def test_defect11_a_crafted_newest_checkpoint_falls_back_to_the_one_before(tmp_path):
    manager = CheckpointManager(str(tmp_path))
    manager.save(dict(step=1, w=np.arange(3.0)), 1)
    for iteration, kind in enumerate(KINDS, 2):
        os.replace(crafted(tmp_path, kind), os.path.join(manager.dir, f'iter_{iteration:08d}.pt'))
    state = CheckpointManager(str(tmp_path), keep=99).load_latest()
    assert state['step'] == 1 and state['w'].tolist() == [0.0, 1.0, 2.0]


def test_an_honest_array_passes_the_size_check(tmp_path):
    path = _zip(tmp_path / 'ok.pt', {STATE_ENTRY: _npy(_document({'w': {'__ndarray__': 'a0'}})),
                                     'a0': _npy(np.arange(6, dtype=np.int64).reshape(2, 3))})
    assert load_state_file(path)['w'].tolist() == [[0, 1, 2], [3, 4, 5]]
