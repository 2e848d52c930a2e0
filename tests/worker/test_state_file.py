"""Checkpoints and parameter files: no pickles, damaged files named and passed over, pickles refused unread."""
import os
import random

import numpy as np
import pytest
import torch

from sparring.worker.checkpoint import CheckpointError, CheckpointManager
from sparring.worker.policy_pool import ParamStore
from sparring.worker.runtime import capture_rng
from sparring.worker.state_file import StateFileError, load_state_file, save_state_file


class Payload:
    """What a stranger's pickle may hold: unpickling it would run a command."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f'touch {self.marker}',)


def _state():
    optimizer = torch.optim.Adam([torch.nn.Parameter(torch.ones(3))])
    return dict(params={'w': torch.arange(6.0).reshape(2, 3), 'b': torch.tensor(1.5)}, version=4,
                optimizer=optimizer.state_dict(), rng=capture_rng(), counts={'a': 1}, steps=(1, 2.5, None),
                history=[(3, 21.5)], keyed={0: 'x', 2: 'y'}, bits=torch.zeros(2, dtype=torch.bfloat16),
                mask=np.array([True, False]))


def test_a_state_round_trips_exactly_without_a_pickle(tmp_path):
    state = _state()
    path = save_state_file(state, str(tmp_path / 'iter_00000001.pt'))
    with np.load(path, allow_pickle=False) as archive:  # readable by numpy alone: no pickle anywhere
        assert '__state__' in archive.files
    back = load_state_file(path)
    assert torch.equal(back['params']['w'], state['params']['w']) and back['params']['b'].shape == ()
    assert back['steps'] == (1, 2.5, None) and back['history'] == [(3, 21.5)] and back['keyed'] == {0: 'x', 2: 'y'}
    assert back['rng']['python'] == state['rng']['python']
    np.testing.assert_array_equal(back['rng']['numpy'][1], state['rng']['numpy'][1])
    assert torch.equal(back['rng']['torch'], state['rng']['torch']) and back['bits'].dtype == torch.bfloat16
    assert back['optimizer'] == state['optimizer'] and back['mask'].dtype == bool
    random.setstate(back['rng']['python'])  # as resume does


def test_a_crafted_pickle_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / 'pwned'
    (tmp_path / 'run' / 'ckpt').mkdir(parents=True)
    (tmp_path / 'run' / 'params').mkdir()
    torch.save(dict(learner=Payload(marker)), tmp_path / 'run' / 'ckpt' / 'iter_00000099.pt')
    torch.save(dict(params=Payload(marker)), tmp_path / 'run' / 'params' / 'init.pt')
    with pytest.raises(CheckpointError, match='iter_00000099.pt: a state file of format version none'):
        CheckpointManager(str(tmp_path / 'run')).load_latest()
    with pytest.raises(StateFileError, match='init.pt: a state file of format version none'):
        ParamStore(str(tmp_path / 'run' / 'params')).get('init')
    assert not marker.exists()


def test_a_damaged_newest_checkpoint_is_named_and_the_one_before_is_used(tmp_path, caplog):
    ckpt = CheckpointManager(str(tmp_path))
    ckpt.save(dict(it=1), 1)
    newest = ckpt.save(dict(it=2), 2)
    with open(newest, 'rb') as f:
        data = f.read()
    with open(newest, 'wb') as f:
        f.write(data[:len(data) // 2])  # cut short by a full disk or a kill
    with open(os.path.join(ckpt.dir, '.iter_00000003.pt.abc.tmp'), 'wb') as f:
        f.write(b'half')
    assert ckpt.load_latest() == dict(it=1)
    assert 'iter_00000002.pt' in caplog.text and ckpt.resumed_from.endswith('iter_00000001.pt')
    open(os.path.join(ckpt.dir, 'iter_00000001.pt'), 'wb').close()  # empty
    with pytest.raises(CheckpointError, match='none of the 2 checkpoints.*iter_00000002.pt.*iter_00000001.pt'):
        ckpt.load_latest()
    ckpt.save(dict(it=4), 4)
    assert not [n for n in os.listdir(ckpt.dir) if n.endswith('.tmp')]
