"""What a commander keeps on disk so that a killed one comes back with exactly what it had committed.

Every league operation is applied, then appended to ``commander/journal.jsonl`` (the commit point);
``commander/state.npz`` snapshots the league and the bookkeeping together (one atomic file) every
``parallel.save_every_seconds``. Resuming loads the snapshot and replays the journal's tail.
"""
from __future__ import annotations

import glob
import json
import logging
import os
import shutil
from typing import List

from sparring.config.compile import to_plain
from sparring.league.persistence import load_state, save_state

log = logging.getLogger(__name__)

COMMANDER_DIR = 'commander'
STATE_FILE = 'state.npz'
JOURNAL_FILE = 'journal.jsonl'


class Journal:
    """An append-only JSON-lines log of committed league operations, each with a sequence number."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.seq = 0
        self._file = None

    def read(self) -> List[dict]:
        """The committed entries; a line torn by a crash mid-write (the last one) is skipped."""
        if not os.path.exists(self.path):
            return []
        entries = []
        with open(self.path) as f:
            for number, line in enumerate(f, 1):
                try:
                    entries.append(json.loads(line))
                except json.JSONDecodeError:
                    log.warning('%s: line %d is incomplete (a crash while writing it); ignored', self.path, number)
        return entries

    def open(self, seq: int) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.seq = seq
        self._file = open(self.path, 'a')

    def append(self, entry: dict) -> None:
        self.seq += 1
        entry['seq'] = self.seq
        # Flushed to the OS: a killed process loses nothing written so far.
        self._file.write(json.dumps(entry, separators=(',', ':')) + '\n')
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def start_fresh(commander) -> None:
    """A new run under this name: an earlier run's state and learner checkpoints must not be taken for its own."""
    for name in (JOURNAL_FILE, STATE_FILE):
        path = os.path.join(commander.dir, name)
        if os.path.exists(path):
            os.remove(path)
    for ckpt_dir in glob.glob(os.path.join(commander.exp_dir, 'workers', '*', 'ckpt')):
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    commander.journal.open(0)


def save(commander) -> str:
    """Snapshot the league and the bookkeeping in one atomic file (with the journal's position); returns its path."""
    state = dict(seq=commander.journal.seq, **commander.coordinator.course_state(),
                 known_workers=sorted(commander.known_workers),
                 outstanding={str(k): list(v) for k, v in commander.outstanding.items()},
                 recent_chunks=list(commander.recent_chunks))
    return save_state(dict(league=commander.league.state_dict(), commander=to_plain(state)),
                      os.path.join(commander.dir, STATE_FILE))


def restore(commander) -> int:
    """Load the snapshot, replay the journal's tail; returns how many entries were replayed."""
    state_path = os.path.join(commander.dir, STATE_FILE)
    entries = commander.journal.read()
    if not os.path.exists(state_path) and not entries:
        raise FileNotFoundError(f'--resume: no parallel run state under {commander.dir} (neither {STATE_FILE} nor '
                                f'{JOURNAL_FILE}); was {commander.exp_dir!r} run in parallel mode?')
    saved_seq = 0
    if os.path.exists(state_path):
        saved = load_state(state_path)
        commander.league.load_state_dict(saved['league'])
        state = saved['commander']
        saved_seq = int(state['seq'])
        commander.coordinator.load_course_state(state)
        commander.known_workers = set(state['known_workers'])
        commander.outstanding = {int(k): tuple(v) for k, v in state['outstanding'].items()}
        for chunk_id in state['recent_chunks']:
            commander.remember_chunk(chunk_id)
    replayed = 0
    for entry in entries:
        if entry['seq'] > saved_seq:
            commander.apply(entry)
            replayed += 1
    commander.journal.open(entries[-1]['seq'] if entries else saved_seq)
    return replayed
