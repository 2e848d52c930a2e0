"""The commander's files: its journal of committed league operations, and where its state snapshot lies.

What a commander keeps on disk so that a killed one comes back with exactly what it had committed. Every league
operation is applied, then appended to ``commander/journal.jsonl``; the commit point is
:meth:`Journal.sync`, which makes the lines written so far durable (fsync) and then records the last committed
sequence number in ``commander/journal.committed``, so a journal that later lost lines at its end is refused
rather than resumed short. Replies go out only after the sync. ``commander/state.npz`` snapshots the league and
the bookkeeping together (one atomic file) every ``parallel.save_every_seconds``. Resuming loads the snapshot and
replays the journal's tail (:class:`~sparring.framework.commander_state.CommanderState` does it); the entries
are :mod:`~sparring.framework.league_ops`. The journal's first line is its format version
(:mod:`sparring.worker.format_version`); a journal of another one is refused.
"""
from __future__ import annotations

import glob
import json
import logging
import os
import zlib
from typing import IO, List, Optional, cast

from sparring.framework.league_ops import LeagueOp
from sparring.worker.format_version import FORMAT_KEY, refusal
from sparring.worker.run_files import open_run_file, run_file_fd

log = logging.getLogger(__name__)

COMMANDER_DIR = 'commander'
STATE_FILE = 'state.npz'
JOURNAL_FILE = 'journal.jsonl'
COMMITTED_FILE = 'journal.committed'
FORMAT_VERSION = 1  # of the journal: raise it when what a reader finds in one changes


class JournalDamaged(RuntimeError):
    """The journal cannot be replayed: it lost entries that were committed (acknowledged to workers) and are in
    no snapshot, or it is of another format version."""


class Journal:
    """An append-only JSON-lines log of committed league operations, each with a sequence number and a
    checksum (``crc``, over the line without it), so that damage is told apart from a torn last write."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.committed_path = os.path.join(os.path.dirname(path), COMMITTED_FILE)
        self.seq = 0
        self.synced = 0  # the last sequence number made durable
        self._file: Optional[IO] = None
        self.missing: List[int] = []  # sequence numbers of committed entries that were lost

    def read(self) -> List[LeagueOp]:
        """The intact entries, in order; :attr:`missing` says which committed ones are gone.

        A last line without its newline is a write the crash interrupted: it was never committed (the
        reply goes out after the line is written), so it is left out. A complete line that does not
        parse or fails its checksum, or a gap in the sequence numbers, is a lost committed entry.
        """
        self.missing = []
        if not os.path.exists(self.path):
            return []
        with open(self.path, 'rb') as f:
            data = f.read()
        lines = data.split(b'\n')
        torn = lines.pop()  # empty when the file ends with a newline
        if torn:
            log.warning('%s: the last line (%d bytes) was cut short by a crash while writing it; it was never '
                        'committed and is dropped', self.path, len(torn))
        if lines:
            version = _version_of(lines[0])
            if version != FORMAT_VERSION:
                raise JournalDamaged(refusal(self.path, 'journal', version, FORMAT_VERSION))
        entries: List[LeagueOp] = []
        damaged_after: List[int] = []  # the sequence number before each damaged line
        for number, raw in enumerate(lines[1:], 2):
            entry = _parse(raw)
            if entry is None:
                log.error('%s: line %d is damaged (not the JSON it was written as)', self.path, number)
                damaged_after.append(entries[-1]['seq'] if entries else 0)
                continue
            expected = entries[-1]['seq'] + 1 if entries else entry['seq']
            self.missing += list(range(expected, entry['seq']))
            entries.append(entry)
        last = entries[-1]['seq'] if entries else 0
        # A damaged line after the last intact entry held the next committed one.
        self.missing += [seq + 1 for seq in damaged_after if seq == last]
        if entries and entries[0]['seq'] > 1:
            self.missing = list(range(1, entries[0]['seq'])) + self.missing
        return entries

    def open(self, seq: int) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        _cut_torn_tail(self.path)
        self.seq = self.synced = seq
        new = not os.path.exists(self.path) or os.path.getsize(self.path) == 0
        self._file = file = open_run_file(self.path, 'a')
        if new:
            file.write(json.dumps({FORMAT_KEY: FORMAT_VERSION}) + '\n')
            file.flush()

    def append(self, entry: LeagueOp) -> None:
        if self._file is None:
            raise RuntimeError(f'{self.path}: an entry appended to a journal that is not open')
        self.seq += 1
        entry['seq'] = self.seq
        entry.pop('crc', None)
        line = json.dumps(entry, separators=(',', ':'))
        entry['crc'] = zlib.crc32(line.encode('utf-8'))
        # Flushed to the OS: a killed process loses nothing written so far; :meth:`sync` makes it durable.
        self._file.write(line[:-1] + f',"crc":{entry["crc"]}}}\n')
        self._file.flush()

    def sync(self) -> None:
        """Make every line appended so far durable, then record the last one's sequence number beside the journal
        (in that order: the record never claims a line the disk may not have). One call covers many appends."""
        if self._file is None or self.synced == self.seq:
            return
        os.fsync(self._file.fileno())
        fd = run_file_fd(self.committed_path, 'r+')
        try:
            os.pwrite(fd, f'{self.seq:020d}\n'.encode('ascii'), 0)
            os.fdatasync(fd)
        finally:
            os.close(fd)
        self.synced = self.seq

    def committed(self) -> int:
        """The last sequence number a sync recorded (0 if none was yet: a commander killed before its first sync)."""
        if not os.path.lexists(self.committed_path):
            return 0
        with open_run_file(self.committed_path, 'rb+') as f:
            text = f.read(64).decode('ascii', 'replace').strip()
        return int(text) if text.isdigit() else 0

    def close(self) -> None:
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None


def _parse(raw: bytes) -> Optional[LeagueOp]:
    """The entry on one line, or None if the line is damaged."""
    try:
        entry = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get('seq'), int) or 'op' not in entry or 'crc' not in entry:
        return None
    crc = entry.pop('crc')
    if zlib.crc32(json.dumps(entry, separators=(',', ':')).encode('utf-8')) != crc:
        return None
    return cast(LeagueOp, entry)  # as it was written: its checksum holds


def _version_of(header: bytes) -> Optional[int]:
    """The format version the journal's first line states; None if it states none."""
    try:
        first = json.loads(header)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return first.get(FORMAT_KEY) if isinstance(first, dict) else None


def _cut_torn_tail(path: str) -> None:
    """Drop a torn last line, so that the next entry starts on a line of its own."""
    if not os.path.exists(path):
        return
    with open_run_file(path, 'rb+') as f:
        data = f.read()
        keep = data.rfind(b'\n') + 1
        if keep != len(data):
            f.truncate(keep)


def remove_partial_files(directory: str) -> None:
    """Temporary files a kill left half-written (``*.tmp``): never read, only in the way."""
    for path in glob.glob(os.path.join(directory, '*.tmp')) + glob.glob(os.path.join(directory, '.*.tmp')):
        log.warning('removing %s, left half-written by an interrupted save', path)
        os.remove(path)


def ranges(numbers: List[int]) -> str:
    """``[3, 4, 5, 9]`` as ``'3-5, 9'``."""
    out, start = [], None
    for i, n in enumerate(numbers):
        if start is None:
            start = n
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            out.append(f'{start}-{n}' if n != start else f'{n}')
            start = None
    return ', '.join(out)
