"""Workers' sessions with the commander: who joined, as which role and player, and with what index.

The :class:`SessionTable` is the commander's part that keeps them: it admits a registering worker (its id, a
learner's player and replica), holds each worker's record and statistics, and answers who learns for whom.

Every session registers once in a run's life: the :class:`SessionLedger` keeps the ids of the sessions that
registered in a file beside the journal, so a register message captured before a commander restart and played
back to the resumed commander is refused (it would revive the old session, under which any other captured
request would be taken again). Requests of an unknown session are refused, so the ledger is the replay window
that survives a restart; it keeps only the sessions a replay could still reach, so it does not grow with the run.

A worker's id is a lease: while the worker that holds it heartbeats, no register takes it (:meth:`SessionTable.admit`);
once it has been silent for ``parallel.worker_timeout_seconds`` the id is free for the next process.
"""
from __future__ import annotations

import dataclasses
import os
import socket
import time
from collections import defaultdict
from typing import IO, Callable, Dict, List, Optional, Set, Tuple, Union

from sparring.config.compile import CompiledConfig
from sparring.worker.remote.protocol import ErrorReply, RegisterRequest
from sparring.worker.remote.peer_guards import REPLAY_WINDOW_SECONDS
from sparring.worker.remote.wire import ID_HELD, short
from sparring.worker.run_files import atomic_replacement, open_run_file

ROLES = ('collector', 'learner', 'evaluator', 'inference')
LEDGER_FILE = 'sessions.txt'
MAX_SESSION_CHARS = 128  # a worker's session id is a uuid's 32 hex digits
LEDGER_SLACK = 256  # lines the ledger may hold beyond twice those it needs before it is compacted


# Requests that only read: asked again, they are answered anew (a parameters reply is too large to keep).
READ_ONLY = ('heartbeat', 'params_request')


@dataclasses.dataclass
class WorkerRecord:
    """One worker process in session: who it is, what it holds (jobs, its collect and evaluation task), what it
    said last (statistics, endpoint) and the reply to its last numbered request."""
    worker_id: str
    role: str
    session: str
    pid: int
    host: str
    last_seen: float
    player_id: Optional[str] = None
    endpoint: Optional[str] = None
    jobs: Set[int] = dataclasses.field(default_factory=set)
    task_id: Optional[int] = None
    eval_task_id: Optional[int] = None
    stats: Dict[str, float] = dataclasses.field(default_factory=dict)
    final: bool = False
    replica: int = 0  # a learner's place in its player's replica group (0: the lead)
    # (request number, kind, body, reply) of its last numbered request
    last_reply: Optional[Tuple[int, str, dict, tuple]] = None

    def answer_once(self, message, handle: Callable, counters: Dict[str, int]) -> tuple:
        """The reply to this worker's request, done once however often it is sent: a request sent again because
        its reply was lost or late (same number) gets the reply kept from the first time, so a lost answer
        neither hands out a second batch of jobs nor loses a reset verdict of a publish. A request is sent again
        unchanged: another one under a used number (another chunk's report) is refused, not answered as the
        first. ``handle(worker, message)`` answers a request the first time."""
        number = message.body.get('request_number')
        kept = self.last_reply
        if number is not None and kept is not None and kept[:2] == (number, message.kind):
            if kept[2] != message.body:
                counters['requests_refused'] += 1
                return 'error', dict(error=f'request number {number} was answered already for another '
                                           f'{message.kind!r} request; a request sent again must be the same, a new '
                                           f'one needs a new number', reason='schema'), None
            counters['repeated_requests'] += 1
            return kept[3]
        reply = handle(self, message)
        if number is not None and message.kind not in READ_ONLY:
            self.last_reply = (number, message.kind, message.body, reply)
        return reply



class SessionLedger:
    """The sessions that registered in this run within the replay horizon, kept in ``path`` across commander
    restarts: one ``<session> <wall time of its register>`` a line.

    A captured register can be played back only while its signed time is within the receiver's replay window
    (:data:`~sparring.worker.remote.peer_guards.REPLAY_WINDOW_SECONDS` either way), so at most two windows after it
    was first taken: an older session needs no remembering. The file is compacted as a database recycles its log:
    once it holds more than twice the lines still needed (plus :data:`LEDGER_SLACK`), those are written to a new
    file that replaces it whole, so it stays bounded by the registers of the horizon however long the run lasts
    (and each register costs O(1) writes on average).
    """

    def __init__(self, path: str, resume: bool, wall: Callable[[], float] = time.time,
                 horizon: float = 2 * REPLAY_WINDOW_SECONDS) -> None:
        self.path, self.wall, self.horizon = path, wall, horizon
        self.sessions: Dict[str, float] = {}
        self._lines = self._kept = 0  # lines in the file now; sessions kept by the last compaction
        if resume and os.path.exists(path):
            with open(path, encoding='utf-8', errors='replace') as f:
                for line in f:
                    session, _, when = line.strip().partition(' ')
                    if session:
                        self.sessions[session] = _float(when, default=wall())  # a line cut by a crash: keep it
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self._file: Optional[IO] = None
        self.compact()

    def __contains__(self, session: str) -> bool:
        return session in self.sessions

    def __len__(self) -> int:
        return len(self.sessions)

    def add(self, session: str) -> None:
        now = self.wall()
        self.sessions[session] = now
        assert self._file is not None
        self._file.write(f'{session} {now:.3f}\n')
        self._file.flush()
        os.fsync(self._file.fileno())  # a few per worker start: cheap, and it outlives the machine too
        self._lines += 1
        if self._lines > 2 * self._kept + LEDGER_SLACK:
            self.compact()

    def compact(self) -> None:
        """Forget the sessions past the horizon and rewrite the file with the others (replacing it whole)."""
        now = self.wall()
        self.sessions = {s: t for s, t in self.sessions.items() if now - t <= self.horizon}
        if self._file is not None:
            self._file.close()
        with atomic_replacement(self.path, durable=True) as f:
            f.writelines(f'{s} {t:.3f}\n' for s, t in self.sessions.items())
        self._lines = self._kept = len(self.sessions)
        self._file = open_run_file(self.path, 'a')

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _float(text: str, default: float) -> float:
    try:
        return float(text)
    except ValueError:
        return default


@dataclasses.dataclass(frozen=True)
class Admission:
    """Who a registering worker will be: its id, and a learner's player and replica."""
    worker_id: str
    player_id: Optional[str] = None
    replica: int = 0


class SessionTable:
    """The workers in session (by session id), their statistics (by worker id, kept after they leave; an earlier
    process of a restarted worker as ``'<id>/<pid>'``), where each player's learner replicas meet, and the ledger
    of every session that registered in the run."""

    def __init__(self, cfg: CompiledConfig, player_ids: List[str], ledger_path: str, resume: bool,
                 counters: Dict[str, int]) -> None:
        self.player_ids = player_ids
        self.replicas, self.host = cfg.parallel.learner_replicas, cfg.parallel.host
        self.lease = cfg.parallel.worker_timeout_seconds  # how long a silent worker still holds its id
        self.counters = counters
        self.workers: Dict[str, WorkerRecord] = {}
        self.stats: Dict[str, Dict[str, float]] = {}
        self.counts: Dict[str, int] = defaultdict(int)  # workers named by the commander, by role
        self.group_address: Dict[str, str] = {}  # where each player's learner replicas meet
        self.ledger = SessionLedger(ledger_path, resume)

    def get(self, session: Optional[str]) -> Optional[WorkerRecord]:
        return self.workers.get(session) if isinstance(session, str) else None

    def admit(self, body: RegisterRequest, now: float) -> Union[Admission, ErrorReply]:
        """Who a joining worker will be (a learner also gets a free player and replica), or why it cannot join.

        A worker's id is its lease: while its holder heartbeats no one else may register under it (that would end
        a live worker's session); a holder silent for ``parallel.worker_timeout_seconds`` has let it expire, and
        the id is free for the next process (a restarted worker takes its id back that way)."""
        role, worker_id = body['role'], body['worker_id']
        if role not in ROLES:
            return ErrorReply(error=f'unknown role {role!r}; expected one of {ROLES}', reason='schema')
        if not 0 < len(body['session']) <= MAX_SESSION_CHARS or not body['session'].isprintable() \
                or ' ' in body['session']:
            return ErrorReply(error=f'session must be 1 to {MAX_SESSION_CHARS} printable characters but spaces, got '
                                    f'{short(body["session"])}', reason='schema')
        if body['session'] in self.ledger or body['session'] in self.workers:
            self.counters['replayed_registers'] += 1
            return ErrorReply(error=f'session {short(body["session"])} registered before; a worker registers each '
                                    f'session once (a replayed message?)', reason='replayed')
        if role == 'learner':
            slot = self._learner_slot(body)
            if isinstance(slot, str):
                return ErrorReply(error=slot, reason='schema' if 'unknown' in slot else 'busy')
            player_id, replica = slot
            admission = Admission(worker_id or learner_id(player_id, replica), player_id, replica)
        elif worker_id is None:
            self.counts[role] += 1
            admission = Admission(f'{role}-remote{self.counts[role]}')
        else:
            admission = Admission(worker_id)
        holder = next((w for w in self.workers.values() if w.worker_id == admission.worker_id
                       and now - w.last_seen <= self.lease), None)
        if holder is not None:
            self.counters['registers_refused_id_held'] += 1
            return ErrorReply(error=f'worker id {short(admission.worker_id)} is held by a live worker (pid {holder.pid} '
                                    f'on {short(holder.host)}, heard from {now - holder.last_seen:.1f} s ago); an id '
                                    f'is free once its holder has been silent for parallel.worker_timeout_seconds '
                                    f'({self.lease:g} s)', reason=ID_HELD)
        return admission

    def sessions_of(self, worker_id: str) -> List[str]:
        return [s for s, w in self.workers.items() if w.worker_id == worker_id]

    def enter(self, admission: Admission, body: RegisterRequest, now: float) -> WorkerRecord:
        """The admitted worker in session (its earlier sessions already ended); a lead learner's group (re)forms at
        a new meeting address, given here rather than at admission because ending the lead's earlier session
        takes its group's old address away."""
        if body['role'] == 'learner' and admission.replica == 0 and admission.player_id is not None:
            self.group_address[admission.player_id] = free_address(self.host)
        earlier = self.stats.pop(admission.worker_id, None)
        if earlier is not None:
            self.stats[f'{admission.worker_id}/{int(earlier["pid"])}'] = earlier
        self.ledger.add(body['session'])
        record = WorkerRecord(admission.worker_id, body['role'], body['session'], body['pid'], body['host'], now,
                              player_id=admission.player_id, replica=admission.replica)
        self.workers[record.session] = record
        return record

    def index_of(self, worker: WorkerRecord) -> int:
        """A worker's index (seeds, names): a learner's player's place, else the number its id ends with."""
        digits = ''.join(ch for ch in worker.worker_id.rsplit('-', 1)[-1] if ch.isdigit())
        return self.player_ids.index(worker.player_id) if worker.player_id else int(digits or 0)

    def leave(self, session: str) -> Optional[WorkerRecord]:
        """End a session (a lead learner's replica group loses its meeting point with it)."""
        worker = self.workers.pop(session, None)
        if worker is not None and worker.role == 'learner' and not worker.replica and worker.player_id is not None:
            self.group_address.pop(worker.player_id, None)
        return worker

    def take_stats(self, worker: WorkerRecord, stats: Dict[str, float]) -> None:
        worker.stats.update(stats)
        self.stats[worker.worker_id] = dict(worker.stats, pid=worker.pid)

    def silent(self, now: float, timeout: float) -> List[str]:
        """The sessions not heard from for more than ``timeout`` seconds."""
        return [s for s, w in self.workers.items() if now - w.last_seen > timeout]

    def learners(self, pid: Optional[str] = None) -> List[WorkerRecord]:
        """The learners in session (of ``pid``, or of every player)."""
        return [w for w in self.workers.values() if w.role == 'learner' and (pid is None or w.player_id == pid)]

    def learner_endpoints(self, pid: str) -> List[str]:
        """Where chunks of ``pid`` may go: its learner, or each of its replicas."""
        return [e for _, e in sorted((w.replica, w.endpoint) for w in self.learners(pid) if w.endpoint)]

    def learner_idle(self, pid: str) -> bool:
        """Whether the learner of ``pid`` says (by heartbeat) that it has nothing queued."""
        return any(w.stats.get('queued', 1) == 0 for w in self.learners(pid))

    def drained(self) -> Set[str]:
        """The players whose learner published its last parameters."""
        return {w.player_id for w in self.learners() if w.final and w.player_id is not None}

    def _learner_slot(self, body: RegisterRequest) -> Union[Tuple[str, int], str]:
        """``(player, replica)`` for a joining learner, or the reason it cannot join."""
        replicas = self.replicas
        taken = {(w.player_id, w.replica) for w in self.learners() if w.worker_id != body['worker_id']}
        wanted, replica = body.get('player_id'), body.get('replica')
        if wanted is not None and wanted not in self.player_ids:
            return f'unknown player {wanted!r}; active players: {self.player_ids}'
        if replica is not None and replica >= replicas:
            return f'unknown replica {replica}; parallel.learner_replicas is {replicas}'
        free = [(p, r) for p in self.player_ids for r in range(replicas) if (p, r) not in taken
                and (wanted is None or p == wanted) and (replica is None or r == replica)]
        if not free:
            return (f'player {wanted!r} already has a live learner' if wanted is not None
                    else 'every active player already has a learner')
        player_id, replica = free[0]
        if replica and player_id not in self.group_address:
            return f'the lead learner of {player_id!r} has not joined yet; replica {replica} waits for it'
        return player_id, replica

    def close(self) -> None:
        self.ledger.close()


def learner_id(player_id: str, replica: int) -> str:
    """``learner-<player>``, and ``learner-<player>-r<k>`` for the other replicas of that player."""
    return f'learner-{player_id}' + (f'-r{replica}' if replica else '')


def free_address(host: str) -> str:
    """``tcp://host:port`` with a port free at the moment (a replica group's meeting point)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return f'tcp://{host}:{probe.getsockname()[1]}'
