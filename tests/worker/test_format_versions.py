"""Every file format carries its version: state files (checkpoints, parameter files), league state files and
the commander's journal. A file of this version loads; one without a version, or with another, is refused in
one line naming the file, its version and what to do."""
import json
import os
import re

import pytest
import torch

from sparring.framework.journal import FORMAT_VERSION as JOURNAL_VERSION, Journal, JournalDamaged
from sparring.league import LeagueError, OneVsOneLeague
from sparring.league.persistence import FORMAT_VERSION as LEAGUE_STATE_VERSION, load_state
from sparring.worker.checkpoint import CheckpointError, CheckpointManager
from sparring.worker.format_version import FORMAT_KEY
from sparring.worker.state_file import (FORMAT_VERSION as STATE_FILE_VERSION, StateFileError, load_state_file,
                                        save_state_file, write_archive)

WHAT_TO_DO = 'Start a new run directory, or use the sparring version that wrote it'


def _refusal(path, what, version, expected):
    """The one line refusing ``path``, as a pattern (any sparring version may be the one reading it)."""
    return (re.escape(f'{path}: a {what} of format version {version}; this sparring (') + r'[^)]+'
            + re.escape(f') reads version {expected}. {WHAT_TO_DO}'))


def _versionless(path, document):
    """A file as sparring 0.1.0 wrote it before format versions: the content alone as the document."""
    return write_archive(str(path), json.dumps(document), {})


def test_a_checkpoint_round_trips_with_its_version(tmp_path):
    path = CheckpointManager(str(tmp_path)).save(dict(learner=dict(train_iter=3), w=torch.ones(2)), 3)
    with open(path, 'rb') as f:
        assert f.read(2) == b'PK'  # an npz archive
    loaded = CheckpointManager(str(tmp_path)).load_latest()
    assert loaded['learner'] == dict(train_iter=3) and torch.equal(loaded['w'], torch.ones(2))


def test_a_checkpoint_written_before_versions_is_refused_naming_its_version(tmp_path):
    ckpt = CheckpointManager(str(tmp_path))
    os.makedirs(ckpt.dir)
    path = _versionless(os.path.join(ckpt.dir, 'iter_00000003.pt'), dict(learner=dict(train_iter=3)))
    pattern = _refusal(path, 'state file', 'none: written before versions', STATE_FILE_VERSION)
    with pytest.raises(StateFileError, match=pattern):
        load_state_file(path)
    with pytest.raises(CheckpointError, match=pattern):  # resuming passes over it as over a damaged one
        ckpt.load_latest()


def test_a_torch_pickle_of_the_versions_before_is_refused_unread(tmp_path):
    path = str(tmp_path / 'init.pt')
    torch.save(dict(params={'w': torch.ones(2)}), path)
    with pytest.raises(StateFileError, match=_refusal(path, 'state file', 'none: written before versions',
                                                      STATE_FILE_VERSION)):
        load_state_file(path)


def test_a_state_file_of_another_version_is_refused_naming_it(tmp_path):
    path = write_archive(str(tmp_path / 'iter_00000001.pt'),
                         json.dumps({FORMAT_KEY: STATE_FILE_VERSION + 1, 'state': dict(it=1)}), {})
    with pytest.raises(StateFileError, match=_refusal(path, 'state file', STATE_FILE_VERSION + 1,
                                                      STATE_FILE_VERSION)):
        load_state_file(path)
    save_state_file(dict(it=1), path)
    assert load_state_file(path) == dict(it=1)


def test_a_league_state_file_round_trips_and_one_without_a_version_is_refused(tmp_path):
    league = OneVsOneLeague()
    league.finish_job(dict(player_ids=['naive_sp_0', 'naive_sp_0_h0'], result=['win']))
    path = league.save(str(tmp_path / 'league_state.npz'))
    restored = OneVsOneLeague()
    restored.restore(path)
    assert restored.payoff.state_dict()['wins'].sum() == 1
    state = league.state_dict()
    state.pop('payoff')  # arrays aside, and without the version the state dict now carries itself, this is what
    state.pop(FORMAT_KEY)  # the league state file held before versions
    old = _versionless(tmp_path / 'old_league_state.npz', state)
    with pytest.raises(LeagueError, match=_refusal(old, 'league state file', 'none: written before versions',
                                                   LEAGUE_STATE_VERSION)):
        OneVsOneLeague().restore(old)
    other = write_archive(str(tmp_path / 'other.npz'), json.dumps({FORMAT_KEY: 0, 'state': state}), {})
    with pytest.raises(LeagueError, match=_refusal(other, 'league state file', 0, LEAGUE_STATE_VERSION)):
        load_state(other)


def test_a_journal_starts_with_its_version_and_reads_back(tmp_path):
    path = str(tmp_path / 'commander' / 'journal.jsonl')
    journal = Journal(path)
    journal.open(0)
    journal.append(dict(op='abandon', jobs=[1]))
    journal.close()
    with open(path) as f:
        assert json.loads(f.readline()) == {FORMAT_KEY: JOURNAL_VERSION}
    journal = Journal(path)
    assert [e['op'] for e in journal.read()] == ['abandon'] and not journal.missing
    journal.open(1)  # reopened to append: no second version line
    journal.append(dict(op='abandon', jobs=[2]))
    journal.close()
    assert [e['seq'] for e in Journal(path).read()] == [1, 2]


@pytest.mark.parametrize('first_line, version', [
    ('{"op":"abandon","jobs":[1],"seq":1}', 'none: written before versions'),  # a journal from before versions
    (json.dumps({FORMAT_KEY: JOURNAL_VERSION + 1}), JOURNAL_VERSION + 1),
])
def test_a_journal_of_another_version_is_refused_naming_it(tmp_path, first_line, version):
    path = str(tmp_path / 'journal.jsonl')
    with open(path, 'w') as f:
        f.write(first_line + '\n' + '{"op":"abandon","jobs":[2],"seq":2}\n')
    with pytest.raises(JournalDamaged, match=_refusal(path, 'journal', version, JOURNAL_VERSION)):
        Journal(path).read()
