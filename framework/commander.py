"""The commander of a parallel run: the run coordinator, served to workers over the network.

The league, the parameter store, jobs and results, verdicts, evaluation, the stop rule and the phases
are the :class:`~sparring.framework.coordinator.RunCoordinator`'s, exactly as in the serial mode. The
commander adds what a network needs: sessions (:mod:`~sparring.framework.sessions`), the journal
(:mod:`~sparring.framework.commander_state`), back-pressure (:mod:`~sparring.framework.collect_tasks`)
and the replies to the requests of :data:`~sparring.framework.protocol.PROTOCOL`. ``handle`` maps a
validated request to a reply, with an injected clock, so the commander is tested without a socket.

Exactly once: every game is a league job with an id, and a result counts only while its job is held
by the worker reporting it; a repeated report or a result of an abandoned job is refused and counted;
a request sent again gets its first reply. A worker silent for ``parallel.worker_timeout_seconds`` is
dropped: its outstanding jobs are abandoned (a game is recorded whole or not at all), its collect
task goes to another collector, its evaluation job back to the queue.
"""
from __future__ import annotations

import logging
import os
import time
from collections import defaultdict, deque
from typing import Callable, Deque, Dict, List, Optional, Set, Tuple

from sparring.config.compile import to_plain
from sparring.config.registry import POLICY_REGISTRY
from sparring.framework import commander_report, commander_state, report_bounds, sessions
from sparring.framework.collect_tasks import CollectTasks
from sparring.framework.coordinator import RunCoordinator
from sparring.framework.eval_dispatch import EvalDispatch
from sparring.framework.param_service import ParamService
from sparring.framework.sessions import WorkerRecord
from sparring.league.errors import LeagueError
from sparring.worker.remote.wire import Message, MessageError, arrays_to_params
from sparring.worker.run_kind import run_kind

log = logging.getLogger(__name__)

COMMANDER_DIR = commander_state.COMMANDER_DIR
STATE_FILE = commander_state.STATE_FILE
MAX_JOBS_PER_REQUEST = 4096
RECENT_CHUNK_IDS = 200_000  # chunk ids remembered to refuse a repeated report


def _delegated(name: str) -> property:
    """An attribute that is the coordinator's (the commander reads and sets it through)."""
    return property(lambda self: getattr(self.coordinator, name),
                    lambda self, value: setattr(self.coordinator, name, value))


class Commander:
    """The coordinator's decisions served over a network; transport-free (``handle`` maps a request to a reply)."""

    (league, player_ids, store, env_steps, phase, stop_reason, reached, last_eval, counters, eval_opponents,
     wall_seconds) = map(_delegated, (
        'league', 'player_ids', 'store', 'env_steps', 'phase', 'stop_reason', 'reached', 'last_eval', 'counters',
        'eval_opponents', 'wall_seconds'))

    def __init__(self, cfg, resume: bool = False, clock: Callable[[], float] = time.monotonic, logger=None) -> None:
        self.cfg, self.par, self.clock, self.logger = cfg, cfg.parallel, clock, logger
        self.exp_dir = cfg.exp_name
        self.dir = os.path.join(self.exp_dir, COMMANDER_DIR)
        kind = run_kind(cfg)
        self.coordinator = RunCoordinator(cfg, kind, clock=clock, say=self.say, logger=logger)
        self.observation_space, self.action_space = kind.spaces()
        self.chunk_steps = (self.par.chunk_len or cfg.policy.collect.n_steps) * cfg.env.collector_env_num
        self.params = ParamService(self.store, self.player_ids, to_plain(cfg.policy), self.counters)
        self.live = self.params.live
        self.known_workers: Set[str] = set()  # worker ids seen in this run: a returning learner restores
        self.outstanding: Dict[int, Tuple[str, str, str]] = {}  # job id -> (session, home, away)
        self.recent_chunks: Deque[str] = deque()
        self.seen_chunks: Dict[str, int] = {}  # recent chunk ids -> the games recorded from them
        self.workers: Dict[str, WorkerRecord] = {}  # by session
        # By worker id, kept after it leaves; an earlier process of a restarted worker as '<id>/<pid>'.
        self.worker_stats: Dict[str, Dict[str, float]] = {}
        self.collect = CollectTasks(self.coordinator, self.par, self.chunk_steps)
        self.tasks, self.max_ahead, self.chunks_ahead = self.collect.tasks, self.collect.max_ahead, \
            self.collect.chunks_ahead
        self.evals = EvalDispatch(self.coordinator)
        self.worker_counts: Dict[str, int] = defaultdict(int)
        self.group_address: Dict[str, str] = {}  # where each player's learner replicas meet
        self._last_save = self.last_line_at = clock()
        self.last_line_steps = 0
        self.transport_rejects: Callable[[], Dict[str, int]] = dict  # messages the transport dropped, by reason
        self.journal = commander_state.Journal(os.path.join(self.dir, commander_state.JOURNAL_FILE))
        if resume:
            replayed = commander_state.restore(self)
            # The workers that held outstanding jobs died with the old commander: those games never end.
            if self.outstanding:
                self._commit(dict(op='abandon', jobs=sorted(self.outstanding)))
            self.known_workers.update(f'learner-{pid}' for pid in self.player_ids)
            self.say(f'resumed from {self.dir}: {self.env_steps} env steps, {replayed} journal entries replayed, '
                      f'iterations {self.coordinator.course_state()["train_iterations"]}')
        else:
            commander_state.start_fresh(self)
            # Learner processes start from (and may restart from) the same initial parameters.
            policy = POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, self.observation_space, self.action_space,
                                                          seed=cfg.seed)
            self.coordinator.store_initial(policy.get_params())
        self.ledger = sessions.SessionLedger(os.path.join(self.dir, sessions.LEDGER_FILE), resume)

    def save(self) -> str:
        self._last_save = self.clock()
        return commander_state.save(self)

    # ------------------------------------------------------------------------------ the journal
    def apply(self, entry: dict):
        """A league operation on the coordinator, and what it means for outstanding jobs (also on replay)."""
        result = self.coordinator.apply(entry)
        op = entry['op']
        if op == 'jobs':
            for info in result:
                self.outstanding[info['job_id']] = (entry['session'], entry['player'], info['player_ids'][1])
        elif op in ('games', 'abandon'):
            for job_id in (j for g in entry['games'] for j in g[1]) if op == 'games' else entry['jobs']:
                self.outstanding.pop(job_id, None)
            if op == 'games':
                self.remember_chunk(entry['chunk'], sum(len(ids) for _, ids, _ in entry['games']))
        return result

    def _commit(self, entry: dict):
        """Apply, then journal: the journal holds exactly what was applied."""
        result = self.apply(entry)
        self.journal.append(entry)
        return result

    def remember_chunk(self, chunk_id: str, games: int = 0) -> None:
        self.seen_chunks[chunk_id] = games
        self.recent_chunks.append(chunk_id)
        if len(self.recent_chunks) > RECENT_CHUNK_IDS:
            self.seen_chunks.pop(self.recent_chunks.popleft(), None)

    # ------------------------------------------------------------------------------ requests
    def handle(self, message: Message) -> Tuple[str, dict, Optional[dict]]:
        """The reply ``(kind, body, arrays)`` to a validated request."""
        kind, body = message.kind, message.body
        if kind == 'register':
            return sessions.register(self, body)
        worker = self.workers.get(body.get('session'))
        if worker is None:
            # Dropped after a timeout, or it registered with a commander that has since restarted.
            return 'error', dict(error=f'unknown or expired session {body.get("session")!r}; register again',
                                 reason='session'), None
        worker.last_seen = self.clock()
        if not hasattr(self, f'_on_{kind}'):
            return 'error', dict(error=f'{kind!r} is not a request the commander serves', reason='schema'), None
        return sessions.answer_once(worker, message, self._dispatch, self.counters)

    def _dispatch(self, worker: WorkerRecord, message: Message) -> Tuple[str, dict, Optional[dict]]:
        try:
            return getattr(self, f'_on_{message.kind}')(worker, message)
        except (MessageError, LeagueError) as err:
            return 'error', dict(error=str(err), reason=getattr(err, 'reason', 'schema')), None

    def _on_heartbeat(self, worker: WorkerRecord, message: Message):
        self._take_stats(worker, message.body.get('stats', {}))
        if worker.role == 'learner' and message.body.get('received'):
            self.collect.received(worker.player_id, message.body['received'])
        return 'ack', self._state_for(worker), None

    def _take_stats(self, worker: WorkerRecord, stats: Dict[str, float]) -> None:
        worker.stats.update(stats)
        self.worker_stats[worker.worker_id] = dict(worker.stats, pid=worker.pid)

    def _state_for(self, worker: WorkerRecord) -> dict:
        if self.phase == 'done':
            return dict(state='stop')
        if worker.role == 'learner' and self.phase != 'collect':
            return dict(state='drain', expected_chunks=self.collect.expected_chunks(worker.player_id))
        return dict(state='stop' if worker.role == 'collector' and self.phase != 'collect' else 'run')

    def _ack(self, worker: WorkerRecord, **body):
        return 'ack', dict(state=self._state_for(worker)['state'], **body), None

    def _on_goodbye(self, worker: WorkerRecord, message: Message):
        self.drop_worker(worker.session, 'said goodbye')
        return 'ack', dict(state='stop'), None

    # -- collection ----------------------------------------------------------------------------
    def _on_collect_task(self, worker: WorkerRecord, message: Message):
        self.collect.release(worker)  # its previous chunk never arrived: hand the budget back
        self.collect.undelivered(message.body.get('undelivered', []))
        if self.phase != 'collect':
            return 'stop', dict(reason=self.stop_reason or 'collection finished'), None
        return (*self.collect.next_task(worker, self._learner_endpoints, self.live), None)

    def _learner_endpoints(self, pid: str) -> List[str]:
        """Where chunks of ``pid`` may go: its learner, or each of its replicas."""
        return [e for _, e in sorted((w.replica, w.endpoint) for w in self.workers.values()
                                     if w.role == 'learner' and w.player_id == pid and w.endpoint)]

    def _on_jobs(self, worker: WorkerRecord, message: Message):
        pid, count = message.body['player_id'], min(message.body['count'], MAX_JOBS_PER_REQUEST)
        self._check_player(pid)
        infos = self._commit(dict(op='jobs', player=pid, n=count, session=worker.session)) if count else []
        worker.jobs.update(info['job_id'] for info in infos)
        return 'job_batch', dict(jobs=[dict(job_id=info['job_id'], opponent_id=info['player_ids'][1],
                                            param_ref=info['players'][1]['param_ref'],
                                            kind=info['players'][1]['kind']) for info in infos]), None

    def _check_player(self, pid: str) -> None:
        if pid not in self.player_ids:
            raise MessageError('schema', f'unknown player {pid!r}; active players: {self.player_ids}')

    def _on_chunk_report(self, worker: WorkerRecord, message: Message):
        body = message.body
        pid = body['player_id']
        self._check_player(pid)
        report_bounds.check_chunk_report(body, self.chunk_steps)
        sent_to = self.collect.release(worker, body['task_id']) if body['task_id'] is not None else None
        if body['chunk_id'] in self.seen_chunks:  # sent again as its answer was late: the same answer, no record
            self.counters['duplicate_reports'] += 1
            return self._ack(worker, duplicate=True, accepted=self.seen_chunks[body['chunk_id']], rejected=0)
        groups: Dict[str, Tuple[List[int], List[str]]] = {}
        rejected = 0
        for job_id, outcome in body['results']:
            owner = self.outstanding.get(job_id)
            if owner is None or owner[0] != worker.session or owner[1] != pid or job_id not in worker.jobs:
                rejected += 1  # a finished, abandoned or foreign job: recording it would count a game twice
                continue
            worker.jobs.discard(job_id)
            ids, outcomes = groups.setdefault(owner[2], ([], []))
            ids.append(job_id)
            outcomes.append(outcome)
        self.counters['results_refused'] += rejected
        redirect = self.collect.reported(pid, body['chunk_id'], worker.session, self.clock(), sent_to,
                                         self._learner_endpoints(pid))
        self.coordinator.recent_returns.extend(body.get('episode_returns', []))
        self._commit(dict(op='games', chunk=body['chunk_id'], player=pid, steps=body['env_steps'],
                          games=[[away, ids, outcomes] for away, (ids, outcomes) in groups.items()]))
        self.coordinator.check_budget()
        self._advance()
        return self._ack(worker, duplicate=False, accepted=len(body['results']) - rejected, rejected=rejected,
                         **({} if redirect is None else dict(endpoint=redirect)))

    # -- parameters ----------------------------------------------------------------------------
    def _on_params_request(self, worker: WorkerRecord, message: Message):
        return self.params.reply(message.body['ref'], message.body['have_version'])

    def _on_publish(self, worker: WorkerRecord, message: Message):
        body, co = message.body, self.coordinator
        pid = body['player_id']
        if worker.role != 'learner' or worker.player_id != pid:
            raise MessageError('schema', f'{worker.worker_id} may not publish parameters of {pid!r}')
        if not worker.replica:  # checked (names, shapes, finite) before anything of the publish is taken
            self.params.publish(pid, body['version'], message.arrays)
        if 'endpoint' in body:
            worker.endpoint = body['endpoint']
        if worker.replica:  # another replica of the player: only where it takes chunks; the lead speaks for it
            self._take_stats(worker, body.get('stats', {}))
            return 'ack', dict(self._state_for(worker), reset_param_ref=None), None
        self.collect.consumed(pid, body['chunks_consumed'])
        self._take_stats(worker, body.get('stats', {}))
        course = co.players[pid]
        iteration = max(body['train_iteration'], course.train_iteration)
        reset_ref = None
        if iteration > course.train_iteration or body['version'] > course.version:
            entry = dict(op='progress', player=pid, iteration=iteration, version=body['version'])
            verdict = co.apply(entry)
            if verdict['snapshot']:
                # Stored before the journal commits the snapshot, so a replayed snapshot finds its parameters.
                ref = co.store_snapshot(verdict, arrays_to_params(message.arrays), body['version'])
                self.params.forget(ref)
            self.journal.append(entry)
            reset_ref = verdict['reset_param_ref'] if verdict['reset'] else None
            co.schedule_evaluation(pid)
        if self.logger is not None and body.get('stats'):
            self.logger.scalars(body['stats'], self.env_steps, prefix=f'train/{pid}/')
        if body['final']:
            worker.final = True
            self._advance()
        return 'ack', dict(self._state_for(worker), reset_param_ref=reset_ref), None

    # -- evaluation ----------------------------------------------------------------------------
    def _on_eval_task(self, worker: WorkerRecord, message: Message):
        return (*self.evals.task(worker), None)

    def _on_eval_report(self, worker: WorkerRecord, message: Message):
        if not self.evals.report(worker, message.body, self.journal.append):
            return self._ack(worker, duplicate=True)
        self._advance()
        return self._ack(worker)

    def finish_pending_evaluation(self, job: dict, results: Dict[str, List[str]], returns: List[float] = (),
                                  version: Optional[int] = None) -> None:
        self.evals.finish_pending(job, results, returns, self.journal.append, version)
        self._advance()

    # ------------------------------------------------------------------------------ the run's course
    def begin_drain(self, reason: str) -> None:
        """Stop collecting; learners train on what was sent to them, publish a last time, then evaluation."""
        self.coordinator.begin_drain(reason)
        self._advance()

    def _advance(self) -> None:
        """Move the run on: every learner drained -> the final evaluation -> done once it is all in."""
        co = self.coordinator
        finals = {w.player_id for w in self.workers.values() if w.role == 'learner' and w.final}
        if co.phase == 'drain' and finals >= set(self.player_ids):
            co.begin_final_evaluation()
        co.check_evaluated(running=len(self.evals.running))

    def tick(self) -> None:
        """Periodic duties: drop silent workers, stop on the wall-time budget, save, log."""
        now, timeout = self.clock(), self.par.worker_timeout_seconds
        for session in [s for s, w in self.workers.items() if now - w.last_seen > timeout]:
            self.drop_worker(session, f'silent for {timeout:.0f} s')
        self.collect.sweep(now, timeout, self._learner_idle)
        self.coordinator.check_limits()
        self._advance()
        if now - self._last_save >= self.par.save_every_seconds:
            self.save()
        commander_report.on_tick(self, now)

    def drop_worker(self, session: str, why: str) -> Optional[WorkerRecord]:
        """Forget a worker: abandon its unfinished games, free its task, requeue its evaluation."""
        worker = self.workers.pop(session, None)
        if worker is None:
            return None
        held = sorted(j for j in worker.jobs if j in self.outstanding)
        if held:
            self._commit(dict(op='abandon', jobs=held))
        self.collect.release(worker)
        self.collect.session_gone(session, self.clock())
        if worker.role == 'learner' and not worker.replica:  # its replicas' meeting point went with it
            self.group_address.pop(worker.player_id, None)
        self.evals.requeue(worker)
        if why != 'said goodbye':
            self.counters[f'{worker.role}_lost'] += 1
        self.say(f'{worker.worker_id} left ({why}); {len(held)} unfinished game(s) abandoned')
        return worker

    def _learner_idle(self, pid: str) -> bool:
        """Whether the learner of ``pid`` says (by heartbeat) that it has nothing queued."""
        return any(w.role == 'learner' and w.player_id == pid and w.stats.get('queued', 1) == 0
                   for w in self.workers.values())

    def drop_worker_id(self, worker_id: str, why: str) -> None:
        for session in [s for s, w in self.workers.items() if w.worker_id == worker_id]:
            self.drop_worker(session, why)

    # ------------------------------------------------------------------------------ reporting
    def say(self, text: str) -> None:
        self.logger.line(text) if self.logger is not None else log.info(text)

    log_progress = commander_report.log_progress  # a progress line and the run's figures
    summary = commander_report.summary  # (pictures, state_path): what parallel_pipeline returns

    def close(self) -> None:
        self.journal.close()
        self.ledger.close()
