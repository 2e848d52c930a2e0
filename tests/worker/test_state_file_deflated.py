"""A deflated member of a state file is refused before anything is inflated: sparring writes every member stored,
so a compressed one is crafted, and a few kB of it can inflate to gigabytes. The same reader opens checkpoints,
parameter files, the league state and the commander's snapshot."""
import zipfile

import numpy as np
import pytest

from sparring.league import LeagueError, load_state
from sparring.league.persistence import save_state
from sparring.worker.checkpoint import CheckpointManager
from sparring.worker.state_file import STATE_ENTRY, StateFileError, load_state_file, save_state_file

INFLATED_BYTES = 64 << 20  # what the crafted member would inflate to; it is a few dozen kB in the file


def deflate_members(path: str) -> str:
    """``path`` rewritten with every member deflated, and one more array member of zeros that inflates to
    :data:`INFLATED_BYTES` (its header honest: only its compression is crafted)."""
    with zipfile.ZipFile(path) as source:
        members = [(info.filename, source.read(info)) for info in source.infolist()]
    with zipfile.ZipFile(path, 'w', compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(name, data)
        info = zipfile.ZipInfo('bomb.npy')
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, 'w', force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(member, dict(descr='|u1', fortran_order=False,
                                                              shape=(INFLATED_BYTES,)))
            block = bytes(1 << 20)
            for _ in range(INFLATED_BYTES >> 20):
                member.write(block)
    return path


@pytest.fixture
def no_inflating(monkeypatch):
    """Any attempt to inflate a member fails the test."""
    original = zipfile._get_decompressor

    def refuse(compress_type):
        if compress_type != zipfile.ZIP_STORED:
            raise AssertionError('a compressed member was inflated')
        return original(compress_type)
    monkeypatch.setattr(zipfile, '_get_decompressor', refuse)


def test_a_deflated_member_is_refused_unread(tmp_path, no_inflating):
    path = deflate_members(save_state_file(dict(w=np.arange(3.0)), str(tmp_path / 'iter_00000001.pt')))
    assert (tmp_path / 'iter_00000001.pt').stat().st_size < INFLATED_BYTES // 100
    with pytest.raises(StateFileError, match=r"iter_00000001\.pt: member '__state__\.npy' is compressed"):
        load_state_file(path)


def test_a_checkpoint_with_a_deflated_member_falls_back_to_the_one_before(tmp_path, no_inflating):
    manager = CheckpointManager(str(tmp_path))
    manager.save(dict(step=1), 1)
    deflate_members(manager.save(dict(step=2), 2))
    assert manager.load_latest() == dict(step=1)


def test_a_league_state_with_a_deflated_member_is_a_league_error(tmp_path, no_inflating):
    path = deflate_members(save_state(dict(payoff=np.zeros((2, 2))), str(tmp_path / 'state.npz')))
    with pytest.raises(LeagueError, match=r"state\.npz: member .* is compressed"):
        load_state(path)


def test_stored_members_still_read(tmp_path, no_inflating):
    assert load_state(save_state(dict(x=np.ones(2)), str(tmp_path / 'a.npz')))['x'].tolist() == [1.0, 1.0]
    assert load_state_file(save_state_file(dict(x=1), str(tmp_path / 'b.pt'))) == dict(x=1)
    with zipfile.ZipFile(tmp_path / 'b.pt') as archive:
        assert STATE_ENTRY + '.npy' in archive.namelist()
