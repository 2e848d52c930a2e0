"""The commander's committed state: the journal it writes, the jobs outstanding, the workers seen, the chunks
reported lately; saved with the league in one snapshot file and restored from it and the journal's tail.

Every league operation is applied, then appended to the journal (:mod:`~sparring.framework.journal`, whose sync
is the commit point); ``commander/state.npz`` snapshots the league and this bookkeeping together (one atomic
file) every ``parallel.save_every_seconds``. Resuming loads the snapshot and replays the journal's tail, so a
commander killed at any moment comes back with exactly the games, iterations and snapshots it had committed.

A save keeps the snapshot before it (``state.previous.npz``) and recycles the journal
(:meth:`~sparring.framework.journal.Journal.compact`): the segments the previous snapshot covers go, so what a
resume reads (a snapshot and the journal after it) does not grow with the run, and an unreadable snapshot still
leaves the one before it with its journal. After a failed write of the journal nothing is saved: the snapshot
would hold operations that are not on the disk.
"""
from __future__ import annotations

import glob
import logging
import os
from collections import deque
from typing import Callable, Deque, Dict, List, Optional, Set, Tuple, Union

from sparring.config.compile import to_plain
from sparring.framework.coordinator import RunCoordinator
from sparring.framework.journal import (COMMITTED_FILE, JOURNAL_FILE, PREVIOUS_STATE_FILE, STATE_FILE, Journal,
                                        JournalDamaged, ranges, remove_partial_files)
from sparring.framework.league_ops import AbandonOp, GamesOp, JobsOp, LeagueOp, RankedGamesOp
from sparring.league.job_protocol import JobInfo
from sparring.league.persistence import load_state, save_state
from sparring.worker.run_files import DISK_FULL, StorageFailure, storage_failure

log = logging.getLogger(__name__)

RECENT_CHUNK_IDS = 200_000  # chunk ids remembered to refuse a repeated report


class CommanderState:
    """What a commander has committed, and its bookkeeping of it: the journal, the jobs outstanding (by job id:
    the session holding it, home and away player), the worker ids seen in the run (a returning learner restores)
    and the ids of chunks reported lately (with the games recorded from each, to refuse a repeated report).

    Every league operation goes through it: applied to the coordinator, then journaled, so the journal holds
    exactly what was applied; :meth:`save` snapshots it with the league, :meth:`restore` loads the snapshot and
    replays the journal's tail.
    """

    def __init__(self, directory: str, exp_dir: str, coordinator: RunCoordinator, say: Callable[[str], None]) -> None:
        self.dir, self.exp_dir, self.coordinator, self.say = directory, exp_dir, coordinator, say
        par = coordinator.cfg.parallel
        self.journal = Journal(os.path.join(directory, JOURNAL_FILE), segment_bytes=int(par.journal_segment_mb * 2**20),
                               audit_bytes=int(par.journal_audit_mb * 2**20))
        # The sequence numbers of the snapshots on the disk that are known whole (read or written by this process;
        # None: not known): the newest, and the one before it, up to which the journal may go.
        self.snapshot_seq: Optional[int] = None
        self.previous_seq: Optional[int] = None
        self.known_workers: Set[str] = set()
        # job id -> (session, home, the opponents: one per other seat)
        self.outstanding: Dict[int, Tuple[str, str, Tuple[str, ...]]] = {}
        self.recent_chunks: Deque[str] = deque()
        self.seen_chunks: Dict[str, int] = {}  # recent chunk ids -> the games recorded from them

    # -- league operations ------------------------------------------------------------------
    def draw_jobs(self, pid: str, n: int, session: str) -> List[JobInfo]:
        """``n`` jobs for ``pid``, outstanding with ``session`` until their games are reported or abandoned."""
        entry = JobsOp(op='jobs', player=pid, n=n, session=session)
        infos = self._apply_jobs(entry)
        self.journal.append(entry)
        return infos

    def record_games(self, entry: Union[GamesOp, RankedGamesOp]) -> None:
        self.apply(entry)
        self.journal.append(entry)

    def abandon(self, job_ids: List[int]) -> None:
        """Jobs whose games will never end."""
        entry = AbandonOp(op='abandon', jobs=job_ids)
        self.apply(entry)
        self.journal.append(entry)

    def apply(self, entry: LeagueOp) -> None:
        """A league operation on the coordinator, and what it means for the jobs outstanding (also on replay)."""
        if entry['op'] == 'jobs':
            self._apply_jobs(entry)
            return
        self.coordinator.apply(entry)
        if entry['op'] in ('games', 'ranked_games'):
            for job_id in (j for g in entry['games'] for j in g[1]):
                self.outstanding.pop(job_id, None)
            self.remember_chunk(entry['chunk'], sum(len(g[1]) for g in entry['games']))
        elif entry['op'] == 'abandon':
            for job_id in entry['jobs']:
                self.outstanding.pop(job_id, None)

    def _apply_jobs(self, entry: JobsOp) -> List[JobInfo]:
        infos = self.coordinator.apply(entry)
        for info in infos:
            self.outstanding[info['job_id']] = (entry['session'], entry['player'], tuple(info['player_ids'][1:]))
        return infos

    def remember_chunk(self, chunk_id: str, games: int = 0) -> None:
        self.seen_chunks[chunk_id] = games
        self.recent_chunks.append(chunk_id)
        if len(self.recent_chunks) > RECENT_CHUNK_IDS:
            self.seen_chunks.pop(self.recent_chunks.popleft(), None)

    def know(self, worker_id: str) -> bool:
        """Note a worker id as seen in this run; whether it was seen before (a returning worker restores)."""
        seen = worker_id in self.known_workers
        self.known_workers.add(worker_id)
        return seen

    # -- the files --------------------------------------------------------------------------
    def start_fresh(self) -> None:
        """A new run under this name. An earlier run's journal, state or learner checkpoints are refused, never
        deleted (the entry points refuse an earlier run of either mode before writing anything; this guards the
        commander built by hand)."""
        left = [os.path.join(self.dir, name) for name in (JOURNAL_FILE, STATE_FILE, PREVIOUS_STATE_FILE, COMMITTED_FILE)]
        left = [path for path in left if os.path.exists(path)] + [path for _, path in self.journal.segments()]
        left += glob.glob(os.path.join(glob.escape(self.exp_dir), 'workers', '*', 'ckpt', '*.pt'))
        if left:
            raise FileExistsError(f'experiment dir {self.exp_dir!r} holds an earlier run ({left[0]}); expected a new '
                                  f'directory, or resume=True to continue that run')
        self.journal.open(0)

    def save(self) -> str:
        """Snapshot the league and the bookkeeping in one atomic file (with the journal's position), keep the one
        before it, recycle the journal; returns the snapshot's path. Each step leaves a resumable run."""
        journal = self.journal
        journal.sync()  # raises the failure of an earlier write: nothing that is not on the disk is snapshotted
        state = dict(seq=journal.seq, **self.coordinator.course_state(),
                     known_workers=sorted(self.known_workers),
                     outstanding={str(k): [v[0], v[1], *v[2]] for k, v in self.outstanding.items()},
                     recent_chunks=list(self.recent_chunks))
        path = os.path.join(self.dir, STATE_FILE)
        try:
            if self.snapshot_seq is not None:  # whole: it becomes the one before (else the one before stays)
                self._keep_as_previous(path)
                self.previous_seq = self.snapshot_seq
            save_state(dict(league=self.coordinator.league.state_dict(), commander=to_plain(state)), path)
            self.snapshot_seq = journal.seq
            journal.compact(self.previous_seq)
        except OSError as err:
            if isinstance(err, StorageFailure) or err.errno not in DISK_FULL:
                raise
            raise storage_failure(path, err) from err
        return path

    def _keep_as_previous(self, path: str) -> None:
        """The snapshot at ``path`` also as the one before, by a second name (no copy): until the new one replaces
        it, both names hold it, so a failed or interrupted save leaves the newest snapshot where it was."""
        previous = os.path.join(self.dir, PREVIOUS_STATE_FILE)
        link = previous + '.tmp'  # a kill leaves it to remove_partial_files
        if os.path.lexists(link):
            os.remove(link)
        os.link(path, link)
        os.replace(link, previous)

    def _load_snapshot(self) -> Tuple[Optional[dict], int]:
        """The newest snapshot that reads back whole (None if none does) and its journal position."""
        for name in (STATE_FILE, PREVIOUS_STATE_FILE):
            path = os.path.join(self.dir, name)
            if not os.path.exists(path):
                continue
            try:
                saved = load_state(path)
                seq = int(saved['commander']['seq'])
            except Exception as err:  # noqa: BLE001 -- a torn or damaged snapshot: the one before, or the journal alone
                log.warning('%s is unreadable (%s: %s); trying the snapshot before it, then the journal alone',
                            path, type(err).__name__, err)
                self.say(f'{path} is unreadable; resuming from the snapshot before it and the journal')
                continue
            if name == STATE_FILE:
                self.snapshot_seq = seq
            else:
                self.previous_seq = seq
            return saved, seq
        return None, 0

    def restore(self) -> int:
        """Load the snapshot, replay the journal's tail; returns how many entries were replayed."""
        journal = self.journal
        if not any(os.path.exists(os.path.join(self.dir, name)) for name in (STATE_FILE, PREVIOUS_STATE_FILE)) \
                and not journal.exists():
            raise FileNotFoundError(f'--resume: no parallel run state under {self.dir} (neither {STATE_FILE} nor '
                                    f'{JOURNAL_FILE}); was {self.exp_dir!r} run in parallel mode?')
        remove_partial_files(self.dir)
        saved, saved_seq = self._load_snapshot()
        entries = journal.read(after=saved_seq)
        if journal.missing:
            lost = journal.missing
            raise JournalDamaged(f'--resume: {journal.path} lost {len(lost)} committed entr'
                                 f'{"y" if len(lost) == 1 else "ies"} (sequence numbers {ranges(lost)}) that no '
                                 f'snapshot holds; resuming would forget games, iterations or snapshots the workers '
                                 f'were told were recorded. Restore the file from a backup, or start the run afresh')
        last = max(journal.last_read, saved_seq)
        committed = journal.committed()
        if committed > last:
            raise JournalDamaged(f'--resume: {journal.path} ends at entry {last}, but {committed} entries were '
                                 f'committed ({journal.committed_path} says so): {committed - last} line'
                                 f'{"s are" if committed - last > 1 else " is"} missing at its end. Resuming would '
                                 f'forget games, iterations or snapshots the workers were told were recorded. Restore '
                                 f'the file from a backup, or start the run afresh')
        if saved is not None:
            self.coordinator.league.load_state_dict(saved['league'])
            state = saved['commander']
            self.coordinator.load_course_state(state)
            self.known_workers = set(state['known_workers'])
            self.outstanding = {int(k): (v[0], v[1], tuple(v[2:])) for k, v in state['outstanding'].items()}
            for chunk_id in state['recent_chunks']:
                self.remember_chunk(chunk_id)
        for entry in entries:
            self.apply(entry)
        journal.open(last)
        return len(entries)
