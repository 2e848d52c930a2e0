"""Workers' sessions with the commander: who joined, as which role and player, and with what index.

Every session registers once in a run's life: the :class:`SessionLedger` keeps the ids of the sessions that
registered in a file beside the journal, so a register message captured before a commander restart and played
back to the resumed commander is refused (it would evict the live worker of that id and revive the old session,
under which any other captured request would be taken again). Requests of an unknown session are refused, so
the ledger is the replay window that survives a restart, at one short line per worker process.
"""
from __future__ import annotations

import dataclasses
import os
import socket
from typing import Callable, Dict, Optional, Set, Tuple

from sparring.config.compile import to_plain
from sparring.worker.remote.wire import short

ROLES = ('collector', 'learner', 'evaluator', 'inference')
LEDGER_FILE = 'sessions.txt'
MAX_SESSION_CHARS = 128  # a worker's session id is a uuid's 32 hex digits


@dataclasses.dataclass
class WorkerRecord:
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


# Requests that only read: asked again, they are answered anew (a parameters reply is too large to keep).
READ_ONLY = ('heartbeat', 'params_request')


def answer_once(worker: WorkerRecord, message, handle: Callable, counters: Dict[str, int]) -> tuple:
    """The reply to a worker's request, done once however often it is sent: a request sent again because
    its reply was lost or late (same number) gets the reply kept from the first time, so a lost answer
    neither hands out a second batch of jobs nor loses a reset verdict of a publish. A request is sent again
    unchanged: another one under a used number (another chunk's report) is refused, not answered as the first."""
    number = message.body.get('request_number')
    kept = worker.last_reply
    if number is not None and kept is not None and kept[:2] == (number, message.kind):
        if kept[2] != message.body:
            counters['requests_refused'] += 1
            return 'error', dict(error=f'request number {number} was answered already for another {message.kind!r} '
                                       f'request; a request sent again must be the same, a new one needs a new '
                                       f'number', reason='schema'), None
        counters['repeated_requests'] += 1
        return kept[3]
    reply = handle(worker, message)
    if number is not None and message.kind not in READ_ONLY:
        worker.last_reply = (number, message.kind, message.body, reply)
    return reply


class SessionLedger:
    """The sessions that registered in this run, kept in ``path`` (one id a line) across commander restarts."""

    def __init__(self, path: str, resume: bool) -> None:
        self.path = path
        self.sessions: Set[str] = set()
        if resume and os.path.exists(path):
            with open(path) as f:
                self.sessions.update(line.strip() for line in f)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self._file = open(path, 'a' if resume else 'w')

    def __contains__(self, session: str) -> bool:
        return session in self.sessions

    def add(self, session: str) -> None:
        self.sessions.add(session)
        self._file.write(session + '\n')
        self._file.flush()
        os.fsync(self._file.fileno())  # a few per worker start: cheap, and it outlives the machine too

    def close(self) -> None:
        self._file.close()


def register(commander, body: dict):
    """A worker joins: its id (a learner also gets a free player and replica), its index, the compiled config,
    the run's state, and for a learner of several replicas the address where its group meets."""
    role, worker_id, player_id, replica = body['role'], body['worker_id'], None, 0
    if role not in ROLES:
        return 'error', dict(error=f'unknown role {role!r}; expected one of {ROLES}', reason='schema'), None
    if not 0 < len(body['session']) <= MAX_SESSION_CHARS or not body['session'].isprintable():
        return 'error', dict(error=f'session must be 1 to {MAX_SESSION_CHARS} printable characters, got '
                                   f'{short(body["session"])}', reason='schema'), None
    if body['session'] in commander.ledger:
        commander.counters['replayed_registers'] += 1
        return 'error', dict(error=f'session {short(body["session"])} registered before; a worker registers each '
                                   f'session once (a replayed message?)', reason='replayed'), None
    if role == 'learner':
        slot = _learner_slot(commander, body)
        if isinstance(slot, str):
            return 'error', dict(error=slot, reason='schema' if 'unknown' in slot else 'busy'), None
        player_id, replica = slot
        worker_id = worker_id or learner_id(player_id, replica)
        commander.collect.learner_joined(player_id)
        if replica == 0:  # a new lead: its group (re)forms at a new address
            commander.group_address[player_id] = free_address(commander.cfg.parallel.host)
    if worker_id is None:
        commander.worker_counts[role] += 1
        worker_id = f'{role}-remote{commander.worker_counts[role]}'
    for old in [w for w in commander.workers.values() if w.worker_id == worker_id]:
        commander.drop_worker(old.session, 'registered again')
    earlier = commander.worker_stats.pop(worker_id, None)
    if earlier is not None:
        commander.worker_stats[f'{worker_id}/{int(earlier["pid"])}'] = earlier
    commander.ledger.add(body['session'])
    restore = worker_id in commander.known_workers
    commander.known_workers.add(worker_id)
    record = WorkerRecord(worker_id, role, body['session'], body['pid'], body['host'], commander.clock(),
                          player_id=player_id, replica=replica)
    commander.workers[record.session] = record
    digits = ''.join(ch for ch in worker_id.rsplit('-', 1)[-1] if ch.isdigit())
    index = commander.player_ids.index(player_id) if player_id else int(digits or 0)
    commander.say(f'{worker_id} joined (pid {body["pid"]} on {body["host"]}{", restoring" if restore else ""})')
    co, replicas = commander.coordinator, commander.cfg.parallel.learner_replicas
    extra = dict(replica=replica, replicas=replicas, group_address=commander.group_address.get(player_id)) \
        if player_id and replicas > 1 else {}
    return 'registered', dict(worker_id=worker_id, session=record.session, config=to_plain(commander.cfg),
                              index=index, player_id=player_id, restore=restore, player_ids=list(commander.player_ids),
                              train_iteration=co.players[player_id].train_iteration if player_id else 0,
                              version=co.players[player_id].version if player_id else 0, **extra), None


def learner_id(player_id: str, replica: int) -> str:
    """``learner-<player>``, and ``learner-<player>-r<k>`` for the other replicas of that player."""
    return f'learner-{player_id}' + (f'-r{replica}' if replica else '')


def _learner_slot(commander, body: dict):
    """``(player, replica)`` for a joining learner, or the reason it cannot join."""
    replicas = commander.cfg.parallel.learner_replicas
    taken = {(w.player_id, w.replica) for w in commander.workers.values()
             if w.role == 'learner' and w.worker_id != body['worker_id']}
    wanted, replica = body.get('player_id'), body.get('replica')
    if wanted is not None and wanted not in commander.player_ids:
        return f'unknown player {wanted!r}; active players: {commander.player_ids}'
    if replica is not None and replica >= replicas:
        return f'unknown replica {replica}; parallel.learner_replicas is {replicas}'
    free = [(p, r) for p in commander.player_ids for r in range(replicas) if (p, r) not in taken
            and (wanted is None or p == wanted) and (replica is None or r == replica)]
    if not free:
        return (f'player {wanted!r} already has a live learner' if wanted is not None
                else 'every active player already has a learner')
    player_id, replica = free[0]
    if replica and player_id not in commander.group_address:
        return f'the lead learner of {player_id!r} has not joined yet; replica {replica} waits for it'
    return player_id, replica


def free_address(host: str) -> str:
    """``tcp://host:port`` with a port free at the moment (a replica group's meeting point)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return f'tcp://{host}:{probe.getsockname()[1]}'
