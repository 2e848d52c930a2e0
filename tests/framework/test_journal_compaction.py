"""The journal is recycled after snapshots: what a resume reads does not grow with the run, the files on the disk
stay bounded, and a crash between any two steps of a save leaves a run that resumes to exactly the league it had."""
import os

import numpy as np
import pytest

from sparring.framework.commander import Commander
from sparring.framework.journal import JOURNAL_FILE, PREVIOUS_STATE_FILE, STATE_FILE, Journal, JournalDamaged
from tests.scripts import load_script

helpers = load_script('tests/framework/test_parallel_commander.py', 'commander_helpers')
Clock, join, publish, report, req = helpers.Clock, helpers.join, helpers.publish, helpers.report, helpers.req

TINY_SEGMENT_MB = 1e-4  # about 100 bytes: every save seals the segment being written


def small_segments(tmp_path, audit_mb=0.0):
    cfg = helpers._cfg(tmp_path, active_players=dict(naive_sp=1))
    cfg.parallel.journal_segment_mb, cfg.parallel.journal_audit_mb = TINY_SEGMENT_MB, audit_mb
    return cfg


class Run:
    """A commander with a learner and a collector, driven by hand."""

    def __init__(self, cfg, resume=False):
        self.commander = commander = Commander(cfg, resume=resume, clock=Clock())
        self.pid = commander.coordinator.player_ids[0]
        self.learner, _ = join(commander, 'learner', player_id=self.pid)
        self.collector, _ = join(commander, 'collector')
        self.version = commander.coordinator.players[self.pid].version

    def play(self, chunks):
        for _ in range(chunks):
            _, batch, _ = self.commander.handle(req('jobs', session=self.collector, player_id=self.pid, count=3))
            report(self.commander, self.collector, self.pid,
                   [[j['job_id'], o] for j, o in zip(batch['jobs'][:2], ('win', 'loss'))])
        self.version += 1
        publish(self.commander, self.learner, self.pid, self.version, self.version)  # a snapshot every other one

    def facts(self):
        """What a resume must bring back exactly."""
        co = self.commander.coordinator
        state = co.league.state_dict()
        return dict(payoff={k: np.asarray(v).tolist() for k, v in state['payoff'].items()
                            if isinstance(v, np.ndarray)},
                    players=[p['player_id'] for p in state['players']], job_count=state['job_count'],
                    rng=str(state['rng_state']), env_steps=co.env_steps, games=co.counters['games'],
                    iteration=co.players[self.pid].train_iteration, chunks=list(self.commander.state.recent_chunks))


def journal_files(commander_dir):
    return sorted(name for name in os.listdir(commander_dir) if name.startswith('journal.') and
                  name.endswith('.jsonl'))


def test_the_journal_on_the_disk_and_what_a_resume_reads_stay_bounded_as_the_run_grows(tmp_path):
    run = Run(small_segments(tmp_path))
    commander = run.commander
    sizes = []
    for _ in range(12):
        run.play(3)
        commander.save()
        files = journal_files(commander.dir)
        sizes.append(sum(os.path.getsize(os.path.join(commander.dir, f)) for f in files))
        # the file being written, and at most the segment sealed at this save (the previous snapshot covers the rest)
        assert len(files) <= 2 and JOURNAL_FILE in files
    assert max(sizes[4:]) <= 2 * min(sizes[4:])  # flat: twelve saves hold no more than four
    expected = run.facts()
    commander.close()

    read = []
    original = Journal.read

    def counting(journal, after=0):
        entries = original(journal, after)
        read.append(len(entries))
        return entries
    Journal.read = counting
    try:
        resumed = Run(small_segments(tmp_path), resume=True)
    finally:
        Journal.read = original
    assert read == [0]  # the snapshot holds everything: no entry before it is read
    resumed.facts = Run.facts.__get__(resumed)
    got = resumed.facts()
    got['chunks'] = got['chunks'][:len(expected['chunks'])]
    assert got == expected
    resumed.commander.close()


def test_an_audit_tail_keeps_covered_segments_up_to_its_size(tmp_path):
    run = Run(small_segments(tmp_path, audit_mb=1.0))
    for _ in range(6):
        run.play(2)
        run.commander.save()
    sealed = [f for f in journal_files(run.commander.dir) if f != JOURNAL_FILE]
    assert len(sealed) == 6  # nothing deleted under 1 MB of audit tail
    run.commander.close()


def test_an_unreadable_snapshot_falls_back_to_the_one_before_and_its_journal(tmp_path):
    run = Run(small_segments(tmp_path))
    for _ in range(4):
        run.play(2)
        run.commander.save()
    run.play(2)
    expected = run.facts()
    run.commander.close()
    with open(os.path.join(run.commander.dir, STATE_FILE), 'r+b') as f:
        f.write(b'damaged')
    resumed = Run(small_segments(tmp_path), resume=True)
    got = resumed.facts()
    got['chunks'] = got['chunks'][:len(expected['chunks'])]
    assert got == expected
    resumed.commander.close()
    # both snapshots unreadable, and the journal recycled: refused, not resumed short
    for name in (STATE_FILE, PREVIOUS_STATE_FILE):
        with open(os.path.join(run.commander.dir, name), 'wb') as f:
            f.write(b'damaged')
    with pytest.raises(JournalDamaged, match='lost .* committed entries'):
        Commander(small_segments(tmp_path), resume=True, clock=Clock())


class Crash(BaseException):
    """The process dies here (nothing catches it)."""


class CrashAfter:
    """Wraps functions so that the call after the first ``steps`` (all wrapped ones counted together) dies."""

    def __init__(self, steps):
        self.left = steps

    def wrap(self, original):
        def call(*args, **kwargs):
            if self.left == 0:
                raise Crash()
            self.left -= 1
            return original(*args, **kwargs)
        return call


# Every call that changes the files on the disk during a save.
STEPS = ('replace', 'remove', 'fsync', 'fdatasync', 'write', 'pwrite', 'ftruncate', 'open', 'close')


@pytest.mark.slow
def test_a_crash_between_any_two_steps_of_a_save_resumes_to_the_same_league(tmp_path, monkeypatch):
    step, completed = 0, False
    while not completed:
        where = tmp_path / f'crash_at_{step}'
        run = Run(small_segments(where))
        for _ in range(3):  # two saves before: a snapshot before the newest, sealed segments to recycle
            run.play(2)
            run.commander.save()
        run.play(2)
        expected = run.facts()
        crash = CrashAfter(step)
        with monkeypatch.context() as patch:
            for name in STEPS:
                patch.setattr(os, name, crash.wrap(getattr(os, name)))
            try:
                run.commander.save()
                completed = True
            except Crash:
                pass
        run.commander.state.journal.drop()  # the process is gone: nothing more is written
        run.commander.sessions.close()

        resumed = Run(small_segments(where), resume=True)
        got = resumed.facts()
        got['chunks'] = got['chunks'][:len(expected['chunks'])]
        assert got == expected, f'crash after {step} steps of the save'
        # a report sent again after the resume is refused as a repeat: nothing counted twice
        chunk = expected['chunks'][-1]
        _, body, _ = report(resumed.commander, resumed.collector, resumed.pid, [], chunk_id=chunk)
        assert body['duplicate'], f'crash after {step} steps of the save'
        resumed.play(2)  # and the run goes on, saves and resumes again
        resumed.commander.save()
        again = resumed.facts()
        resumed.commander.close()
        final = Run(small_segments(where), resume=True).facts()
        assert final['payoff'] == again['payoff'] and final['games'] == again['games']
        step += 1
    assert step > 10  # the save had that many steps, each crashed after
