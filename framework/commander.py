"""The commander of a parallel run: the run coordinator, served to workers over the network.

The league, the parameter store, jobs and results, verdicts, evaluation, the stop rule and the phases
are the :class:`~sparring.framework.coordinator.RunCoordinator`'s, exactly as in the serial mode. The
commander adds what a network needs, each part an object it owns: the workers' sessions
(:class:`~sparring.framework.sessions.SessionTable`), the journal and what it commits
(:class:`~sparring.framework.commander_state.CommanderState`), back-pressure
(:class:`~sparring.framework.collect_tasks.CollectTasks`), the evaluation jobs
(:class:`~sparring.framework.eval_dispatch.EvalDispatch`), the parameters workers fetch
(:class:`~sparring.framework.param_service.ParamService`) and the progress report
(:class:`~sparring.framework.commander_report.ProgressReport`). Workers talk to it by request and reply;
``handle`` maps a validated request (:data:`~sparring.worker.remote.protocol.PROTOCOL`, whose typed bodies the
handlers read) to a reply through the table :attr:`Commander.handlers`, with an injected clock, so the
commander is tested without a socket:

``register``        a worker joins; it gets the compiled config, its index and, for a learner, its player
``heartbeat``       liveness both ways; the reply carries the run's state (``run``, ``drain``, ``stop``)
``goodbye``         a worker leaves on purpose, with its last figures
``collect_task``    which player to collect the next chunk for, and where that player's learner listens
``jobs``            a batch of league jobs (``get_job_info``): one opponent per game a collector plays
``chunk_report``    a chunk's finished games ``[job_id, outcome]`` and its env steps (``finish_job``)
``params_request``  parameters by reference; only sent when newer than the version the worker holds
``publish``         a learner's parameters and train iteration (``update_active_player``, then the
                    ``judge_snapshot`` verdict back: a snapshot is stored, a reset is carried out by the learner)
``eval_task``, ``eval_report``  evaluation jobs against the reference players, and their results

Exactly once: every game is a league job with an id, and a result counts only while its job is
outstanding with the worker that reports it; a repeated report (same chunk id) or a result of an
abandoned job is refused and counted. A request sent again (its reply lost or late) keeps its number and
gets the first reply, not a second doing (:meth:`~sparring.framework.sessions.WorkerRecord.answer_once`).
A worker silent for ``parallel.worker_timeout_seconds``, or whose local process died, is dropped: its
outstanding jobs are abandoned (a game is recorded whole or not at all), its collect task goes to another
collector, its evaluation job back to the queue. A worker's id is its lease: no register takes the id of a
worker that still heartbeats, only one silent that long. The env-step budget pays for accepted work only.

Back-pressure: a player gets no new collect task while its learner has ``parallel.max_chunks_ahead``
chunks reported but not yet taken (learners say how many they took with each publish), so a slow
learner holds its collectors back instead of training on stale data.

Persistence: every league operation (:mod:`~sparring.framework.league_ops`) is applied, then appended to
``commander/journal.jsonl``; replies go out after the journal is synced (the commit point);
``commander/state.npz`` snapshots the league and the bookkeeping together (one atomic file) every
``parallel.save_every_seconds``. Resuming loads the snapshot and replays the journal's tail, so a commander
killed at any moment comes back with exactly the games, iterations and snapshots it had committed.

A single-agent config (no league) has one player, ``'agent'``, no jobs or games, and is evaluated
by episode return.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, cast

import numpy as np

from sparring.config.compile import CompiledConfig, to_plain
from sparring.config.registry import POLICY_REGISTRY
from sparring.framework import report_bounds
from sparring.framework.collect_tasks import CollectTasks
from sparring.framework.commander_report import ProgressReport
from sparring.framework.commander_state import CommanderState
from sparring.framework.coordinator import EvaluationJob, RunCoordinator
from sparring.framework.eval_dispatch import EvalDispatch
from sparring.framework.journal import COMMANDER_DIR
from sparring.framework.league_ops import ProgressOp
from sparring.framework.param_service import ParamService
from sparring.worker.remote.protocol import (Ack, ChunkReport, CollectTaskRequest, ErrorReply, EvalReport,
                                         GoodbyeRequest, HeartbeatRequest, JobBatch, JobOffer, JobsRequest,
                                         ParamsRequest, SeatOffer, PublishRequest, Registered, RegisterRequest)
from sparring.framework.sessions import LEDGER_FILE, Admission, SessionTable, WorkerRecord, learner_id
from sparring.league.errors import LeagueError
from sparring.policy.replay_opponents import roster_to_send
from sparring.worker.evaluation import EvalResults
from sparring.worker.logger import RunLogger
from sparring.worker.remote.wire import Message, MessageError, arrays_to_params
from sparring.worker.run_kind import run_kind

log = logging.getLogger(__name__)

MAX_JOBS_PER_REQUEST = 4096

# A reply: its kind, its body and its arrays (parameters, or None).
Reply = Tuple[str, Mapping[str, object], Optional[Dict[str, np.ndarray]]]
Handler = Callable[[WorkerRecord, Message], Reply]


def _error(text: str, reason: str) -> Reply:
    return 'error', ErrorReply(error=text, reason=reason), None


class Commander:
    """The coordinator's decisions served over a network; transport-free (``handle`` maps a request to a reply)."""

    def __init__(self, cfg: CompiledConfig, resume: bool = False, clock: Callable[[], float] = time.monotonic,
                 logger: Optional[RunLogger] = None) -> None:
        self.cfg, self.par, self.clock, self.logger = cfg, cfg.parallel, clock, logger
        self.exp_dir: str = cfg.exp_name
        self.dir = os.path.join(self.exp_dir, COMMANDER_DIR)
        kind = run_kind(cfg)
        self.coordinator = co = RunCoordinator(cfg, kind, clock=clock, say=self.say, logger=logger)
        # A game whose seats have roles: each player plays its category's, with that seat's spaces (no common ones).
        self.roles = kind.roles
        spaces: Tuple[Any, Any] = kind.spaces() if self.roles is None else (None, None)
        self.observation_space, self.action_space = spaces
        self.chunk_steps = (self.par.chunk_len or cfg.policy.collect.n_steps) * cfg.env.collector_env_num
        self.params = ParamService(co.store, co.player_ids, to_plain(cfg.policy), co.counters,
                                   {pid: co.initial_ref(pid) for pid in co.player_ids})
        self.live = self.params.live
        self.collect = CollectTasks(co, self.par, self.chunk_steps)
        self.evals = EvalDispatch(co)
        self.state = CommanderState(self.dir, self.exp_dir, co, self.say)
        started = self._last_save = clock()
        if resume:
            replayed = self.state.restore()
            # The workers that held outstanding jobs died with the old commander: those games never end.
            if self.state.outstanding:
                self.state.abandon(sorted(self.state.outstanding))
            self.state.known_workers.update(learner_id(pid, 0) for pid in co.player_ids)
            self.say(f'resumed from {self.dir}: {co.env_steps} env steps, {replayed} journal entries replayed, '
                     f'iterations {co.course_state()["train_iterations"]}')
        else:
            self.state.start_fresh()
            # Learner processes start from (and may restart from) the same initial parameters (one set per role).
            for role in dict.fromkeys(self.roles or (None,)):
                policy = POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, *kind.spaces(role), seed=cfg.seed)
                co.store_initial(policy.get_params(), category=role)
        self.sessions = SessionTable(cfg, co.player_ids, os.path.join(self.dir, LEDGER_FILE), resume, co.counters)
        self.report = ProgressReport(co, self.sessions, logger, clock, self.say, self.par.log_every_seconds,
                                     self.exp_dir, started)
        # What each request kind is answered by (``register`` comes before a session exists: see handle).
        self.handlers: Dict[str, Handler] = {
            'heartbeat': self._on_heartbeat, 'goodbye': self._on_goodbye, 'collect_task': self._on_collect_task,
            'jobs': self._on_jobs, 'chunk_report': self._on_chunk_report, 'params_request': self._on_params_request,
            'publish': self._on_publish, 'eval_task': self._on_eval_task, 'eval_report': self._on_eval_report}

    def save(self) -> str:
        self._last_save = self.clock()
        return self.state.save()

    # ------------------------------------------------------------------------------ requests
    def handle(self, message: Message) -> Reply:
        """The reply ``(kind, body, arrays)`` to a validated request."""
        if message.kind == 'register':
            return self._on_register(cast(RegisterRequest, message.body))
        worker = self.sessions.get(message.body.get('session'))
        if worker is None:
            # Dropped after a timeout, or it registered with a commander that has since restarted.
            return _error(f'unknown or expired session {message.body.get("session")!r}; register again', 'session')
        worker.last_seen = self.clock()
        if message.kind not in self.handlers:
            return _error(f'{message.kind!r} is not a request the commander serves', 'schema')
        return worker.answer_once(message, self._dispatch, self.coordinator.counters)

    def _dispatch(self, worker: WorkerRecord, message: Message) -> Reply:
        try:
            return self.handlers[message.kind](worker, message)
        except (MessageError, LeagueError) as err:
            return _error(str(err), getattr(err, 'reason', 'schema'))

    def _on_register(self, body: RegisterRequest) -> Reply:
        """A worker joins: its id (a learner also gets a free player and replica), its index, the compiled config,
        the run's state, and for a learner of several replicas the address where its group meets."""
        admitted = self.sessions.admit(body, self.clock())
        if not isinstance(admitted, Admission):
            return 'error', admitted, None
        pid, co = admitted.player_id, self.coordinator
        if pid is not None:
            self.collect.learner_joined(pid)
        for session in self.sessions.sessions_of(admitted.worker_id):  # silent past its lease: the id is free
            self.drop_worker(session, 'its lease expired and a new process took its id')
        record = self.sessions.enter(admitted, body, self.clock())
        restore = self.state.know(record.worker_id)
        self.say(f'{record.worker_id} joined (pid {body["pid"]} on {body["host"]}{", restoring" if restore else ""})')
        reply = Registered(worker_id=record.worker_id, session=record.session, config=to_plain(self.cfg),
                           index=self.sessions.index_of(record), player_id=pid, restore=restore,
                           player_ids=list(co.player_ids),
                           train_iteration=co.players[pid].train_iteration if pid else 0,
                           version=co.players[pid].version if pid else 0)
        if self.roles is not None:
            reply['player_roles'] = {p: cast(str, co.role_of(p)) for p in co.player_ids}
            if pid:
                reply['initial_ref'] = co.initial_ref(pid)
        replicas = self.par.learner_replicas
        if pid and replicas > 1:
            reply['replica'], reply['replicas'] = record.replica, replicas
            reply['group_address'] = self.sessions.group_address.get(pid)
        return 'registered', reply, None

    def _on_heartbeat(self, worker: WorkerRecord, message: Message) -> Reply:
        body = cast(HeartbeatRequest, message.body)
        self.sessions.take_stats(worker, body.get('stats', {}))
        if worker.role == 'learner' and worker.player_id is not None and body.get('received'):
            self.collect.received(worker.player_id, body['received'])
        return 'ack', self._state_for(worker), None

    def _state_for(self, worker: WorkerRecord) -> Ack:
        phase = self.coordinator.phase
        if phase == 'done':
            return Ack(state='stop')
        if worker.role == 'learner' and worker.player_id is not None and phase != 'collect':
            return Ack(state='drain', expected_chunks=self.collect.expected_chunks(worker.player_id))
        return Ack(state='stop' if worker.role == 'collector' and phase != 'collect' else 'run')

    def _ack(self, worker: WorkerRecord, **fields) -> Reply:
        return 'ack', dict(state=self._state_for(worker)['state'], **fields), None

    def _on_goodbye(self, worker: WorkerRecord, message: Message) -> Reply:
        # The figures it ends with: its last heartbeat's may miss the work after it (a collector's last reports).
        self.sessions.take_stats(worker, cast(GoodbyeRequest, message.body).get('stats', {}))
        self.drop_worker(worker.session, 'said goodbye')
        return 'ack', Ack(state='stop'), None

    # -- collection ----------------------------------------------------------------------------
    def _on_collect_task(self, worker: WorkerRecord, message: Message) -> Reply:
        body = cast(CollectTaskRequest, message.body)
        self.collect.release(worker)  # its previous chunk never arrived: hand the budget back
        self.collect.undelivered(body.get('undelivered', []))
        co = self.coordinator
        if co.phase != 'collect':
            return 'stop', dict(reason=co.stop_reason or 'collection finished'), None
        return (*self.collect.next_task(worker, self.sessions.learner_endpoints, self.live), None)

    def _on_jobs(self, worker: WorkerRecord, message: Message) -> Reply:
        body = cast(JobsRequest, message.body)
        pid, count = body['player_id'], min(body['count'], MAX_JOBS_PER_REQUEST)
        co = self.coordinator
        self._check_player(pid)
        infos = self.state.draw_jobs(pid, count, worker.session) if count else []
        worker.jobs.update(info['job_id'] for info in infos)
        offers = [JobOffer(job_id=info['job_id'], opponent_id=info['player_ids'][1],
                           param_ref=info['players'][1]['param_ref'], kind=info['players'][1]['kind']) for info in infos]
        if co.seat_games.seats > 2:  # the opponents of the other seats
            for offer, info in zip(offers, infos):
                offer['more'] = [SeatOffer(opponent_id=p['player_id'], param_ref=p['param_ref'], kind=p['kind'])
                                 for p in info['players'][2:]]
        if self.roles is not None:  # the role each opponent plays, so the collector builds it for that seat
            for offer in offers:
                offer['role'] = cast(str, co.league.get_player(offer['opponent_id']).category)
        return 'job_batch', JobBatch(jobs=offers), None

    def _check_player(self, pid: str) -> None:
        if pid not in self.coordinator.player_ids:
            raise MessageError('schema', f'unknown player {pid!r}; active players: {self.coordinator.player_ids}')

    def _on_chunk_report(self, worker: WorkerRecord, message: Message) -> Reply:
        body, co = cast(ChunkReport, message.body), self.coordinator
        pid = body['player_id']
        self._check_player(pid)
        report_bounds.check_chunk_report(body, self.chunk_steps)
        sent_to = self.collect.release(worker, body['task_id']) if body['task_id'] is not None else None
        seen = self.state.seen_chunks
        if body['chunk_id'] in seen:  # sent again as its answer was late: the same answer, no record
            co.counters['duplicate_reports'] += 1
            return self._ack(worker, duplicate=True, accepted=seen[body['chunk_id']], rejected=0)
        games: List[Tuple[int, Tuple[str, ...], list]] = []  # (job id, its opponents, [outcome] or [ranks(, teams)])
        rejected, taken = 0, set()
        for job_id, *result in body['results']:
            owner = self.state.outstanding.get(job_id)
            if owner is None or owner[0] != worker.session or owner[1] != pid or job_id not in worker.jobs \
                    or job_id in taken:
                rejected += 1  # a finished, abandoned or foreign job: recording it would count a game twice
                continue
            taken.add(job_id)
            problem = co.seat_games.result_problem(result, pid, owner[2])
            if problem is not None:
                raise MessageError('schema', f'chunk_report: job {job_id}: {problem}')
            games.append((job_id, owner[2], result))
        for job_id, _, _ in games:
            worker.jobs.discard(job_id)
        co.counters['results_refused'] += rejected
        redirect = self.collect.reported(pid, body['chunk_id'], worker.session, self.clock(), sent_to,
                                         self.sessions.learner_endpoints(pid))
        co.recent_returns.extend(body.get('episode_returns', []))
        # The budget pays for accepted work only: a game the league records, or a chunk of the task handed to this
        # worker whose games have not ended yet. A report whose results were all refused, or one of no task with
        # none, spends nothing (a loop of them would end the run with no data behind its steps).
        accepted = len(body['results']) - rejected
        steps = body['env_steps'] if accepted or (not body['results'] and sent_to is not None) else 0
        co.counters['env_steps_refused'] += body['env_steps'] - steps
        self.state.record_games(co.seat_games.reported(pid, body['chunk_id'], steps, games))
        co.check_budget()
        self._advance()
        return self._ack(worker, duplicate=False, accepted=accepted, rejected=rejected,
                         **({} if redirect is None else dict(endpoint=redirect)))

    # -- parameters ----------------------------------------------------------------------------
    def _on_params_request(self, worker: WorkerRecord, message: Message) -> Reply:
        body = cast(ParamsRequest, message.body)
        return self.params.reply(body['ref'], body['have_version'])

    def _on_publish(self, worker: WorkerRecord, message: Message) -> Reply:
        body, co = cast(PublishRequest, message.body), self.coordinator
        pid = body['player_id']
        if worker.role != 'learner' or worker.player_id != pid:
            raise MessageError('schema', f'{worker.worker_id} may not publish parameters of {pid!r}')
        if not worker.replica:  # checked (names, shapes, finite) before anything of the publish is taken
            self.params.publish(pid, body['version'], message.arrays)
        if 'endpoint' in body:
            worker.endpoint = body['endpoint']
        if worker.replica:  # another replica of the player: only where it takes chunks; the lead speaks for it
            self.sessions.take_stats(worker, body.get('stats', {}))
            return self._state_with_verdict(worker, None)
        self.collect.consumed(pid, body['chunks_consumed'])
        self.sessions.take_stats(worker, body.get('stats', {}))
        course = co.players[pid]
        iteration = max(body['train_iteration'], course.train_iteration)
        reset_ref = None
        if iteration > course.train_iteration or body['version'] > course.version:
            entry = ProgressOp(op='progress', player=pid, iteration=iteration, version=body['version'])
            verdict = co.apply(entry)
            if verdict['snapshot']:
                # Stored before the journal commits the snapshot, so a replayed snapshot finds its parameters.
                ref = co.store_snapshot(verdict, arrays_to_params(message.arrays), body['version'])
                self.params.forget(ref)
            self.state.journal.append(entry)
            reset_ref = verdict['reset_param_ref'] if verdict['reset'] else None
            co.schedule_evaluation(pid)
        if self.logger is not None and body.get('stats'):
            self.logger.scalars(body['stats'], co.env_steps, prefix=f'train/{pid}/')
        if body['final']:
            worker.final = True
            self._advance()
        return self._state_with_verdict(worker, reset_ref)

    def _state_with_verdict(self, worker: WorkerRecord, reset_ref: Optional[str]) -> Reply:
        """A publish's reply: the run's state for the learner, and the parameters to reset to (None: keep on)."""
        reply = self._state_for(worker)
        reply['reset_param_ref'] = reset_ref
        # A replay that forgets by opponent age learns the league's ages with the same reply as a new snapshot.
        roster = roster_to_send(self.coordinator.league, self.cfg.policy.get('replay', {}).get('max_opponent_age'))
        if roster:
            reply['opponent_ages'] = roster['opponent_ages']
        return 'ack', reply, None

    # -- evaluation ----------------------------------------------------------------------------
    def _on_eval_task(self, worker: WorkerRecord, message: Message) -> Reply:
        return (*self.evals.task(worker), None)

    def _on_eval_report(self, worker: WorkerRecord, message: Message) -> Reply:
        if not self.evals.report(worker, cast(EvalReport, message.body), self.state.journal.append):
            return self._ack(worker, duplicate=True)
        self._advance()
        return self._ack(worker)

    def finish_pending_evaluation(self, job: EvaluationJob, results: EvalResults, returns: Sequence[float] = (),
                                  version: Optional[int] = None) -> None:
        self.evals.finish_pending(job, results, returns, self.state.journal.append, version)
        self._advance()

    # ------------------------------------------------------------------------------ the run's course
    def begin_drain(self, reason: str) -> None:
        """Stop collecting; learners train on what was sent to them, publish a last time, then evaluation."""
        self.coordinator.begin_drain(reason)
        self._advance()

    def _advance(self) -> None:
        """Move the run on: every learner drained -> the final evaluation -> done once it is all in."""
        co = self.coordinator
        if co.phase == 'drain' and self.sessions.drained() >= set(co.player_ids):
            co.begin_final_evaluation()
        co.check_evaluated(running=len(self.evals.running))

    def tick(self) -> None:
        """Periodic duties: drop silent workers, stop on the wall-time budget, save, log."""
        now, timeout = self.clock(), self.par.worker_timeout_seconds
        for session in self.sessions.silent(now, timeout):
            self.drop_worker(session, f'silent for {timeout:.0f} s')
        self.collect.sweep(now, timeout, self.sessions.learner_idle)
        self.coordinator.check_limits()
        self._advance()
        if now - self._last_save >= self.par.save_every_seconds:
            self.save()
        self.report.on_tick(now)

    def drop_worker(self, session: str, why: str) -> Optional[WorkerRecord]:
        """Forget a worker: abandon its unfinished games, free its task, requeue its evaluation."""
        worker = self.sessions.leave(session)
        if worker is None:
            return None
        held = sorted(j for j in worker.jobs if j in self.state.outstanding)
        if held:
            self.state.abandon(held)
        self.collect.release(worker)
        self.collect.session_gone(session, self.clock())
        self.evals.requeue(worker)
        if why != 'said goodbye':
            self.coordinator.counters[f'{worker.role}_lost'] += 1
        self.say(f'{worker.worker_id} left ({why}); {len(held)} unfinished game(s) abandoned')
        return worker

    def drop_worker_id(self, worker_id: str, why: str) -> None:
        for session in self.sessions.sessions_of(worker_id):
            self.drop_worker(session, why)

    # ------------------------------------------------------------------------------ reporting
    def say(self, text: str) -> None:
        self.logger.line(text) if self.logger is not None else log.info(text)

    def close(self) -> None:
        self.state.journal.close()
        self.sessions.close()
