"""A full disk is a stop, not a corruption: a failed write or sync of the journal, the commit record, a snapshot,
a checkpoint, a parameter file or the league state raises StorageFailure (one line naming the file, its disk and
the space left), nothing that was not written is acknowledged, saved or marked committed, and once space is freed
a resume continues with everything that was acknowledged."""
import errno
import os
import shutil
import subprocess
import uuid

import numpy as np
import pytest
import torch

from sparring.framework.commander import Commander
from sparring.framework.journal import STATE_FILE
from sparring.league.persistence import load_state, save_state
from sparring.worker.checkpoint import CheckpointManager
from sparring.worker.policy_pool import ParamStore
from sparring.worker.run_files import StorageFailure
from tests.scripts import load_script

compaction = load_script('tests/framework/test_journal_compaction.py', 'compaction_helpers')
helpers, Run = compaction.helpers, compaction.Run
Clock, req, report = helpers.Clock, helpers.req, helpers.report

DISK_FULL = r'failed: the disk is full \(the disk of /.*: .* free of .*\).*Free space'


def no_space(monkeypatch, name, after=0):
    """``os.<name>`` fails with ENOSPC after ``after`` calls that work."""
    original, calls = getattr(os, name), [0]

    def full(*args, **kwargs):
        calls[0] += 1
        if calls[0] > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return original(*args, **kwargs)
    monkeypatch.setattr(os, name, full)


def run_with_games(tmp_path):
    run = Run(helpers._cfg(tmp_path, active_players=dict(naive_sp=1)))
    run.play(3)
    run.commander.save()
    run.play(2)
    run.commander.state.journal.sync()
    return run


def a_report(run):
    _, batch, _ = run.commander.handle(req('jobs', session=run.collector, player_id=run.pid, count=2))
    return req('chunk_report', session=run.collector, task_id=None, chunk_id=uuid.uuid4().hex, player_id=run.pid,
               version=0, env_steps=4, results=[[j['job_id'], 'win'] for j in batch['jobs']])


def resumed_facts(tmp_path):
    resumed = Commander(helpers._cfg(tmp_path, active_players=dict(naive_sp=1)), resume=True, clock=Clock())
    co = resumed.coordinator
    facts = (co.env_steps, co.counters['games'], set(resumed.state.seen_chunks))
    resumed.close()
    return facts


@pytest.mark.parametrize('failing', ['write', 'fsync', 'pwrite'])
def test_a_failed_journal_write_is_fatal_and_never_marked_committed(tmp_path, monkeypatch, failing):
    run = run_with_games(tmp_path)
    journal, co = run.commander.state.journal, run.commander.coordinator
    committed, before = journal.committed(), (co.env_steps, co.counters['games'], set(run.commander.state.seen_chunks))
    message = a_report(run)
    with monkeypatch.context() as patch:
        no_space(patch, failing)
        if failing == 'write':  # the append itself fails: the report is not acknowledged
            with pytest.raises(StorageFailure, match=DISK_FULL):
                run.commander.handle(message)
        else:  # the append is written, its sync (of the journal, or of the commit record) fails
            run.commander.handle(message)
            with pytest.raises(StorageFailure, match=DISK_FULL):
                journal.sync()
    # With space again, the journal still takes nothing and never records as committed what it did not write.
    with pytest.raises(StorageFailure, match=DISK_FULL):
        journal.sync()
    with pytest.raises(StorageFailure, match=DISK_FULL):
        run.commander.handle(a_report(run))
    with pytest.raises(StorageFailure, match=DISK_FULL):
        run.commander.save()  # a snapshot would hold what is not on the disk
    run.commander.close()
    assert journal.committed() == committed
    steps, games, chunks = resumed_facts(tmp_path)  # the resume is not refused, and nothing acknowledged is lost
    assert chunks >= before[2] and games >= before[1] and steps >= before[0]
    if failing == 'write':
        assert (steps, games, chunks) == before
    else:  # written but not synced: on the disk after all, replayed (it was never acknowledged either way)
        assert chunks - before[2] == {message.body['chunk_id']}


class FakeServer:
    """Requests waiting at the commander's socket; the replies sent."""

    def __init__(self, waiting):
        self.waiting, self.replies = list(waiting), []
        self.rejected = type('R', (), dict(counts={}))()

    def recv(self, timeout):
        return self.waiting.pop(0) if self.waiting else None

    def reply(self, peer, reply_to, kind, body, arrays=None):
        self.replies.append((kind, body))

    def close(self):
        pass


class FakeLauncher:
    processes, restarts = {}, {}

    def poll(self):
        return []

    def stop(self, timeout):
        self.stopped = True


def test_a_full_disk_stops_the_run_with_no_reply_and_nothing_saved(tmp_path, monkeypatch):
    from sparring.framework.parallel import ParallelRun
    run = run_with_games(tmp_path)
    commander = run.commander
    state_path = os.path.join(commander.dir, STATE_FILE)
    with open(state_path, 'rb') as f:
        snapshot = f.read()
    parallel = ParallelRun.__new__(ParallelRun)
    parallel.commander, parallel.cfg, parallel.failed, parallel.closed = commander, commander.cfg, None, False
    parallel.server = FakeServer([(b'peer', a_report(run)) for _ in range(3)])
    parallel.launcher, parallel.curve_guard = FakeLauncher(), None
    parallel.context = type('C', (), dict(term=lambda self: None))()
    lines = []
    parallel.logger = type('L', (), dict(line=lambda self, text: lines.append(text), close=lambda self: None))()
    no_space(monkeypatch, 'write', after=1)  # the second report of the batch cannot be journaled
    with pytest.raises(StorageFailure, match=DISK_FULL):
        parallel.step(0.0)
    assert parallel.server.replies == []  # not even the first report, written but not made durable, is answered
    monkeypatch.undo()
    with pytest.raises(StorageFailure, match=DISK_FULL):
        parallel.close(abort='failed (StorageFailure)')
    assert parallel.launcher.stopped
    with open(state_path, 'rb') as f:
        assert f.read() == snapshot  # nothing saved after the failure
    assert not os.path.exists(os.path.join(commander.exp_dir, 'league_state.npz'))
    assert any(line.startswith('stopped, nothing saved: writing') for line in lines), lines
    resumed_facts(tmp_path)  # resumes


def test_a_failed_snapshot_keeps_the_one_before_and_the_run_resumes(tmp_path, monkeypatch):
    run = run_with_games(tmp_path)
    state_path = os.path.join(run.commander.dir, STATE_FILE)
    with open(state_path, 'rb') as f:
        snapshot = f.read()
    before = run.facts()
    with monkeypatch.context() as patch:
        no_space(patch, 'fsync')
        with pytest.raises(StorageFailure, match=r'state\.npz failed: the disk is full'):
            run.commander.save()
    with open(state_path, 'rb') as f:
        assert f.read() == snapshot
    assert not [name for name in os.listdir(run.commander.dir) if name.endswith('.tmp')]
    run.commander.close()
    steps, games, _ = resumed_facts(tmp_path)
    assert (steps, games) == (before['env_steps'], before['games'])


def test_checkpoint_parameter_and_league_state_writes_on_a_full_disk(tmp_path, monkeypatch):
    manager = CheckpointManager(str(tmp_path / 'run'))
    manager.save(dict(step=1), 1)
    store = ParamStore(str(tmp_path / 'params'))
    store.put('a', dict(w=torch.zeros(3)), dict(type='ppo'))
    league_path = save_state(dict(x=np.ones(2)), str(tmp_path / 'league_state.npz'))
    no_space(monkeypatch, 'fsync')
    with pytest.raises(StorageFailure, match=r'iter_00000002\.pt failed: the disk is full'):
        manager.save(dict(step=2), 2)
    with pytest.raises(StorageFailure, match=r'b\.pt failed: the disk is full'):
        store.put('b', dict(w=torch.ones(3)), dict(type='ppo'))
    with pytest.raises(StorageFailure, match=r'league_state\.npz failed: the disk is full'):
        save_state(dict(x=np.zeros(2)), league_path)
    monkeypatch.undo()
    assert manager.load_latest() == dict(step=1)  # the last good checkpoint, and no half-written one beside it
    assert sorted(os.listdir(manager.dir)) == ['iter_00000001.pt']
    assert sorted(os.listdir(tmp_path / 'params')) == ['a.pt']
    assert load_state(league_path)['x'].tolist() == [1.0, 1.0]


def test_train_stopped_by_a_full_disk_says_so_in_one_line_with_the_resume_command(tmp_path, monkeypatch, capsys):
    from sparring.framework import serial
    from sparring.framework.cli import main
    from sparring.worker.run_files import storage_failure
    path = tmp_path / 'cfg.py'
    path.write_text('config = dict(env=dict(type="zero_sum_2x2"))\n')

    def full(*args, **kwargs):
        raise storage_failure(str(tmp_path / 'run' / 'ckpt' / 'iter_00000002.pt'), OSError(errno.ENOSPC, 'full'))
    monkeypatch.setattr(serial, 'serial_pipeline', full)
    assert main(['train', str(path), '--exp-name', str(tmp_path / 'run')]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith('sparring train: stopped: writing ')
    assert 'the disk is full' in err and f'sparring train {path} --mode serial --resume' in err


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MB tmpfs (where this machine lets a test mount one)."""
    where = tmp_path / 'disk'
    where.mkdir()
    if shutil.which('mount') is None or os.geteuid() != 0:
        pytest.skip('mounting a tmpfs needs root and mount(8)')
    done = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f'cannot mount a tmpfs here: {done.stderr.decode(errors="replace").strip()}')
    try:
        yield where
    finally:
        subprocess.run(['umount', '-l', str(where)], check=False)


def fill(path):
    """Write ``path`` until the disk is full."""
    with open(path, 'wb', buffering=0) as f:
        try:
            while True:
                f.write(bytes(4096))
        except OSError as err:
            assert err.errno == errno.ENOSPC


@pytest.mark.slow
def test_a_real_full_disk_stops_the_commander_and_a_resume_after_freeing_it_loses_nothing(small_disk):
    run = Run(helpers._cfg(small_disk, active_players=dict(naive_sp=1)))
    run.play(2)
    run.commander.save()
    journal, co = run.commander.state.journal, run.commander.coordinator
    acknowledged, games_acknowledged = set(run.commander.state.seen_chunks), co.counters['games']
    fill(small_disk / 'filler')
    with pytest.raises(StorageFailure, match=DISK_FULL):
        for _ in range(10_000):  # jobs and reports until the journal's last page is full too
            message = a_report(run)
            run.commander.handle(message)
            journal.sync()  # the commit point: the report is acknowledged
            acknowledged.add(message.body['chunk_id'])
            games_acknowledged = co.counters['games']
    assert co.counters['games'] >= games_acknowledged  # a failed report's games were applied, never written
    with pytest.raises(StorageFailure, match=DISK_FULL):
        run.commander.save()
    run.commander.close()
    os.remove(small_disk / 'filler')
    steps, games, chunks = resumed_facts(small_disk)
    assert chunks == acknowledged and games == games_acknowledged


def test_a_worker_whose_checkpoint_finds_the_disk_full_stops_the_run_in_one_line(tmp_path, monkeypatch, caplog):
    import logging
    from types import SimpleNamespace

    from easydict import EasyDict

    from sparring.framework import workers
    from sparring.framework.parallel import ParallelRun
    from sparring.worker.remote.base import EXIT_DISK_FULL
    from sparring.worker.run_files import storage_failure
    checkpoint = str(tmp_path / 'workers' / 'learner-p' / 'ckpt' / 'iter_00000009.pt')

    class Learner:  # its checkpoint write fails with a full disk
        def __init__(self, *args, **kwargs):
            pass

        def run(self):
            raise storage_failure(checkpoint, OSError(errno.ENOSPC, 'full'))

        def close(self):
            pass
    monkeypatch.setitem(workers.ROLES, 'learner', Learner)
    args = workers.build_parser().parse_args(['--role', 'learner', '--commander', 'tcp://127.0.0.1:5999'])
    monkeypatch.setenv('SPARRING_SECRET', 'x' * 32)
    with caplog.at_level(logging.ERROR, logger='sparring.worker'):
        assert workers.run_worker(args) == EXIT_DISK_FULL  # not restarted in a loop: it says why and stops
    (line,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert '\n' not in line and line.startswith(f'writing {checkpoint} failed: the disk is full')

    # The commander stops the run with that line instead of restarting the learner until max_restarts.
    run = ParallelRun.__new__(ParallelRun)
    run.launcher = SimpleNamespace(processes={}, restarts={}, roles={'learner-p': ('learner', 'p', 0)},
                                   tail=lambda worker_id: f'2026-11-28 19:00:00 sparring.worker ERROR {line}\n')
    run.cfg = EasyDict(parallel=dict(max_restarts=5, learner_replicas=1))
    run.commander = SimpleNamespace(coordinator=SimpleNamespace(phase='collect'), drop_worker_id=lambda wid, why: None)
    with pytest.raises(StorageFailure, match=rf'^learner-p stopped: writing {checkpoint} failed: the disk is full'):
        run._exited('learner-p', EXIT_DISK_FULL)
