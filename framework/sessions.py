"""Workers' sessions with the commander: who joined, as which role and player, and with what index."""
from __future__ import annotations

import dataclasses
from typing import Dict, Optional, Set

from sparring.config.compile import to_plain

ROLES = ('collector', 'learner', 'evaluator')


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


def register(commander, body: dict):
    """A worker joins: its id (a learner also gets a free player), its index, the compiled config, the run's state."""
    role, worker_id, player_id = body['role'], body['worker_id'], None
    if role not in ROLES:
        return 'error', dict(error=f'unknown role {role!r}; expected one of {ROLES}', reason='schema'), None
    if role == 'learner':
        taken = {w.player_id for w in commander.workers.values() if w.role == 'learner' and w.worker_id != worker_id}
        wanted = body.get('player_id')
        free = [p for p in commander.player_ids if p not in taken]
        if wanted is not None and wanted not in commander.player_ids:
            return 'error', dict(error=f'unknown player {wanted!r}; active players: {commander.player_ids}',
                                 reason='schema'), None
        if wanted is not None and wanted not in free:
            return 'error', dict(error=f'player {wanted!r} already has a live learner', reason='busy'), None
        if not free:
            return 'error', dict(error='every active player already has a learner', reason='busy'), None
        player_id = wanted or free[0]
        worker_id = worker_id or f'learner-{player_id}'
        commander.collect.learner_joined(player_id)
    if worker_id is None:
        commander.worker_counts[role] += 1
        worker_id = f'{role}-remote{commander.worker_counts[role]}'
    for old in [w for w in commander.workers.values() if w.worker_id == worker_id]:
        commander.drop_worker(old.session, 'registered again')
    earlier = commander.worker_stats.pop(worker_id, None)
    if earlier is not None:
        commander.worker_stats[f'{worker_id}/{int(earlier["pid"])}'] = earlier
    restore = worker_id in commander.known_workers
    commander.known_workers.add(worker_id)
    record = WorkerRecord(worker_id, role, body['session'], body['pid'], body['host'], commander.clock(),
                          player_id=player_id)
    commander.workers[record.session] = record
    digits = ''.join(ch for ch in worker_id.rsplit('-', 1)[-1] if ch.isdigit())
    index = commander.player_ids.index(player_id) if player_id else int(digits or 0)
    commander.say(f'{worker_id} joined (pid {body["pid"]} on {body["host"]}{", restoring" if restore else ""})')
    co = commander.coordinator
    return 'registered', dict(worker_id=worker_id, session=record.session, config=to_plain(commander.cfg),
                              index=index, player_id=player_id, restore=restore, player_ids=list(commander.player_ids),
                              train_iteration=co.train_iterations[player_id] if player_id else 0,
                              version=co.versions[player_id] if player_id else 0), None
