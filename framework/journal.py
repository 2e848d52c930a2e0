"""The commander's files: its journal of committed league operations, and where its state snapshots lie.

What a commander keeps on disk so that a killed one comes back with exactly what it had committed. Every league
operation is applied, then appended to ``commander/journal.jsonl``; the commit point is
:meth:`Journal.sync`, which makes the lines written so far durable (fsync) and then records the last committed
sequence number in ``commander/journal.committed``, so a journal that later lost lines at its end is refused
rather than resumed short. Replies go out only after the sync. ``commander/state.npz`` snapshots the league and
the bookkeeping together (one atomic file) every ``parallel.save_every_seconds``. Resuming loads the snapshot and
replays the journal's tail (:class:`~sparring.framework.commander_state.CommanderState` does it); the entries
are :mod:`~sparring.framework.league_ops`. Each journal file's first line is its format version
(:mod:`sparring.worker.format_version`); a journal of another one is refused.

The journal is recycled as a database recycles its write-ahead log, so that what a resume reads does not grow
with the run: after a durable snapshot, :meth:`Journal.compact` seals the file being written once it has reached
``parallel.journal_segment_mb`` (renamed ``journal.<last seq>.jsonl``, a new ``journal.jsonl`` begun) and deletes
the sealed segments the previous snapshot covers as well, oldest first, beyond an audit tail of
``parallel.journal_audit_mb``. A resume reads only the segments after its snapshot. Each step leaves files a
resume reads correctly if the process dies right after it.

A write that fails (the disk is full, or a sync fails) is a :class:`~sparring.worker.run_files.StorageFailure`:
the journal takes no more entries and never records as committed what it could not write, and the commander
stops, as a database stops on a failed write of its log.
"""
from __future__ import annotations

import glob
import json
import logging
import os
import re
import zlib
from typing import Iterator, List, Optional, Tuple, cast

from sparring.framework.league_ops import LeagueOp
from sparring.worker.format_version import FORMAT_KEY, refusal
from sparring.worker.run_files import StorageFailure, run_file_fd, storage_failure, sync_directory

log = logging.getLogger(__name__)

COMMANDER_DIR = 'commander'
STATE_FILE = 'state.npz'
PREVIOUS_STATE_FILE = 'state.previous.npz'  # the snapshot before: read when the newest one is unreadable
JOURNAL_FILE = 'journal.jsonl'
COMMITTED_FILE = 'journal.committed'
SEGMENT_PATTERN = re.compile(r'^journal\.(\d{12})\.jsonl$')  # a sealed segment, named by its last entry
FORMAT_VERSION = 1  # of the journal: raise it when what a reader finds in one changes


class JournalDamaged(RuntimeError):
    """The journal cannot be replayed: it lost entries that were committed (acknowledged to workers) and are in
    no snapshot, or it is of another format version."""


class Journal:
    """An append-only JSON-lines log of committed league operations, each with a sequence number and a
    checksum (``crc``, over the line without it), so that damage is told apart from a torn last write; written
    in segments (see the module)."""

    def __init__(self, path: str, segment_bytes: int = 16 << 20, audit_bytes: int = 64 << 20) -> None:
        self.path = path
        self.dir = os.path.dirname(path)
        self.committed_path = os.path.join(self.dir, COMMITTED_FILE)
        self.segment_bytes, self.audit_bytes = segment_bytes, audit_bytes
        self.seq = 0
        self.synced = 0  # the last sequence number made durable
        self.last_read = 0  # the last sequence number :meth:`read` found
        self._fd: Optional[int] = None
        self._size = 0  # bytes in the file being written
        self.failed: Optional[StorageFailure] = None  # a write or sync that failed: nothing more is taken
        self.missing: List[int] = []  # sequence numbers of committed entries that were lost

    # -- reading ----------------------------------------------------------------------------
    def segments(self) -> List[Tuple[int, str]]:
        """The sealed segments, ``(last sequence number, path)``, oldest first."""
        found = []
        for name in os.listdir(self.dir) if os.path.isdir(self.dir) else ():
            match = SEGMENT_PATTERN.match(name)
            if match:
                found.append((int(match.group(1)), os.path.join(self.dir, name)))
        return sorted(found)

    def exists(self) -> bool:
        return os.path.exists(self.path) or bool(self.segments())

    def read(self, after: int = 0) -> List[LeagueOp]:
        """The intact entries after sequence number ``after``, in order; :attr:`missing` says which committed
        ones after it are gone, :attr:`last_read` the last one found. Sealed segments that end at or before
        ``after`` are not opened.

        A last line without its newline is a write the crash interrupted: it was never committed (the
        reply goes out after the line is written), so it is left out. A complete line that does not
        parse or fails its checksum, or a gap in the sequence numbers, is a lost committed entry.
        """
        files = [path for last, path in self.segments() if last > after] + [self.path]
        entries: List[LeagueOp] = []
        missing: List[int] = []
        first, last = None, 0  # the first and last intact sequence numbers seen
        damaged_after: List[int] = []  # the sequence number before each damaged line
        for path in files:
            for number, raw in _lines(path, torn_allowed=path == self.path):
                entry = _parse(raw)
                if entry is None:
                    log.error('%s: line %d is damaged (not the JSON it was written as)', path, number)
                    damaged_after.append(last)
                    continue
                first = entry['seq'] if first is None else first
                missing += list(range(last + 1 if last else entry['seq'], entry['seq']))
                last = entry['seq']
                if last > after:
                    entries.append(entry)
        # A damaged line after the last intact entry held the next committed one.
        missing += [seq + 1 for seq in damaged_after if seq == last]
        if first is not None and first > 1:
            missing = list(range(1, first)) + missing
        self.missing = [seq for seq in missing if seq > after]
        self.last_read = last
        return entries

    # -- writing ----------------------------------------------------------------------------
    def open(self, seq: int) -> None:
        """Go on writing after sequence number ``seq``."""
        os.makedirs(self.dir, exist_ok=True)
        _cut_torn_tail(self.path)
        self.seq = self.synced = seq
        self._fd = run_file_fd(self.path, 'a')
        self._size = os.fstat(self._fd).st_size
        if self._size == 0:
            self._write((json.dumps({FORMAT_KEY: FORMAT_VERSION}) + '\n').encode('utf-8'))

    def append(self, entry: LeagueOp) -> None:
        if self._fd is None:
            raise RuntimeError(f'{self.path}: an entry appended to a journal that is not open')
        if self.failed is not None:
            raise self.failed
        entry['seq'] = self.seq + 1
        entry.pop('crc', None)
        line = json.dumps(entry, separators=(',', ':'))
        entry['crc'] = zlib.crc32(line.encode('utf-8'))
        # Written to the OS at once: a killed process loses nothing written so far; :meth:`sync` makes it durable.
        self._write((line[:-1] + f',"crc":{entry["crc"]}}}\n').encode('utf-8'))
        self.seq += 1

    def _write(self, data: bytes) -> None:
        """All of ``data`` at the end of the file, or :class:`StorageFailure` with the file as it was."""
        assert self._fd is not None
        done = 0
        try:
            while done < len(data):
                done += os.write(self._fd, data[done:])
        except OSError as err:
            self.failed = storage_failure(self.path, err)
            try:  # a line cut short is dropped on reading anyway; this keeps the file clean for the next one
                os.ftruncate(self._fd, self._size)
            except OSError:
                pass
            raise self.failed from err
        self._size += len(data)

    def sync(self) -> None:
        """Make every line appended so far durable, then record the last one's sequence number beside the journal
        (in that order: the record never claims a line the disk may not have). One call covers many appends."""
        if self.failed is not None:
            raise self.failed
        if self._fd is None or self.synced == self.seq:
            return
        path = self.path
        try:
            os.fsync(self._fd)
            path = self.committed_path
            fd = run_file_fd(path, 'r+')
            try:
                written = os.pwrite(fd, f'{self.seq:020d}\n'.encode('ascii'), 0)
                if written != 21:
                    raise OSError(28, 'short write')
                os.fdatasync(fd)
            finally:
                os.close(fd)
        except OSError as err:
            # After a failed fsync nothing written since the last good one can be known durable (PostgreSQL's
            # lesson): the journal takes nothing more, and the commit record is never advanced.
            self.failed = storage_failure(path, err, 'syncing' if path == self.path else 'writing')
            raise self.failed from err
        self.synced = self.seq

    def committed(self) -> int:
        """The last sequence number a sync recorded (0 if none was yet: a commander killed before its first sync)."""
        if not os.path.lexists(self.committed_path):
            return 0
        fd = run_file_fd(self.committed_path, 'r+')
        try:
            text = os.read(fd, 64).decode('ascii', 'replace').strip()
        finally:
            os.close(fd)
        return int(text) if text.isdigit() else 0

    # -- recycling --------------------------------------------------------------------------
    def compact(self, covered: Optional[int]) -> None:
        """After a durable snapshot: seal the file being written once it reached the segment size, then delete
        the sealed segments whose every entry is at or before ``covered`` (the sequence number of a snapshot
        older than the newest, so that one unreadable snapshot still leaves the one before it and its journal;
        None: none is known, nothing is deleted), oldest first, beyond the audit tail."""
        if self.failed is not None:
            raise self.failed
        if self._fd is not None and self._size >= self.segment_bytes and self.seq > self._first_in_file():
            self.sync()
            os.close(self._fd)
            self._fd = None
            # Renamed whole: a crash leaves it as the file being written (read and sealed again next time) or
            # sealed with no file being written (the next open begins one).
            os.replace(self.path, os.path.join(self.dir, f'journal.{self.seq:012d}.jsonl'))
            sync_directory(self.dir)
            self.open(self.seq)
        if covered is None:
            return
        old = [(path, os.path.getsize(path)) for last, path in self.segments() if last <= covered]
        kept = sum(size for _, size in old)
        removed = False
        for path, size in old:
            if kept <= self.audit_bytes:
                break
            os.remove(path)  # oldest first: a crash midway leaves a journal that begins later, still whole
            kept -= size
            removed = True
        if removed:
            sync_directory(self.dir)

    def _first_in_file(self) -> int:
        """The sequence number before the first entry of the file being written (entries after it are in it)."""
        sealed = self.segments()
        return sealed[-1][0] if sealed else 0

    def close(self) -> None:
        """Sync and close; after a failure only close (what could not be written stays unclaimed)."""
        if self._fd is not None:
            try:
                if self.failed is None:
                    self.sync()
            finally:
                self.drop()

    def drop(self) -> None:
        """Close without a sync, as a killed process would."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _lines(path: str, torn_allowed: bool) -> Iterator[Tuple[int, bytes]]:
    """``(line number, line)`` of a journal file's entries, after its format-version line is checked. A last line
    cut short (no newline) is dropped with a warning where ``torn_allowed`` (the file being written), else it is
    given as is (a damaged line)."""
    if not os.path.exists(path):
        return
    with open(path, 'rb') as f:
        header = f.readline()
        if not header.endswith(b'\n'):
            return  # empty, or its first line cut short: no entry was written after it
        version = _version_of(header)
        if version != FORMAT_VERSION:
            raise JournalDamaged(refusal(path, 'journal', version, FORMAT_VERSION))
        for number, raw in enumerate(f, 2):
            if not raw.endswith(b'\n') and torn_allowed:
                log.warning('%s: the last line (%d bytes) was cut short by a crash while writing it; it was never '
                            'committed and is dropped', path, len(raw))
                return
            yield number, raw


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
    """Drop a torn last line, so that the next entry starts on a line of its own (reads the file's end only)."""
    if not os.path.exists(path):
        return
    fd = run_file_fd(path, 'r+')
    try:
        end = os.fstat(fd).st_size
        keep, position = 0, end
        while position > 0:
            start = max(0, position - (64 << 10))
            block = os.pread(fd, position - start, start)
            newline = block.rfind(b'\n')
            if newline >= 0:
                keep = start + newline + 1
                break
            position = start
        if keep != end:
            os.ftruncate(fd, keep)
    finally:
        os.close(fd)


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
