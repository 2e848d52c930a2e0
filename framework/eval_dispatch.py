"""Evaluation jobs handed to evaluator workers: the coordinator's queue, what is running where, requeues."""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

from sparring.framework.coordinator import EvaluationJob, RunCoordinator
from sparring.framework.league_ops import LeagueOp
from sparring.framework.param_service import WAIT_SECONDS
from sparring.worker.remote.protocol import EvalReport
from sparring.framework.sessions import WorkerRecord
from sparring.framework.report_bounds import check_eval_report
from sparring.worker.evaluation import EvalResults
from sparring.worker.remote.wire import MessageError


class EvalDispatch:
    """The coordinator's evaluation queue handed out to evaluator workers, one job at a time each."""

    def __init__(self, coordinator: RunCoordinator) -> None:
        self.coordinator = coordinator
        self.running: Dict[int, Tuple[str, EvaluationJob]] = {}  # task id -> (session, job)
        self.opponents: Dict[int, List[str]] = {}  # task id -> the opponent ids it was handed

    def task(self, worker: WorkerRecord) -> Tuple[str, dict]:
        """``(reply kind, body)``: the next due evaluation for ``worker``, a wait, or stop."""
        co = self.coordinator
        self.requeue(worker)
        if co.phase == 'done':
            return 'stop', dict(reason=co.stop_reason)
        if not co.pending:
            return 'wait', dict(seconds=WAIT_SECONDS, reason='no evaluation due')
        job = co.pending.popleft()
        self.running[job['task_id']] = (worker.session, job)
        worker.eval_task_id = job['task_id']
        pid = job['player_id']
        opponents = co.readable_eval_opponents(pid)
        self.opponents[job['task_id']] = [oid for oid, _ in opponents]
        return 'eval_job', dict(task_id=job['task_id'], player_id=pid, version=co.players[pid].version,
                                opponents=[list(o) for o in opponents])

    def requeue(self, worker: WorkerRecord) -> None:
        """The worker's evaluation will not be reported (it left, or asks for another): back to the queue."""
        running = self.running.pop(worker.eval_task_id, None) if worker.eval_task_id is not None else None
        worker.eval_task_id = None
        if running is not None:
            self.coordinator.pending.appendleft(running[1])

    def report(self, worker: WorkerRecord, body: EvalReport, journal: Callable[[LeagueOp], None]) -> bool:
        """Record an evaluation report; False for one that is not (or no longer) the worker's to report."""
        co = self.coordinator
        running = self.running.get(body['task_id'])
        if running is None or running[0] != worker.session:
            co.counters['results_refused'] += 1
            return False
        pid, known = running[1]['player_id'], set(self.opponents.get(body['task_id'], ()))
        evaluation = co.kind.evaluation_class
        results = evaluation.from_report(body)
        if body['player_id'] != pid:
            raise MessageError('schema', f'eval_report: expected results of {pid!r}, got {body["player_id"]!r}\'s')
        problem = evaluation.opponents_problem(results, known)
        if problem is not None:
            raise MessageError('schema', f'eval_report: expected results of {pid!r} {problem}')
        check_eval_report(body, co.cfg.env.n_evaluator_episodes)
        try:
            co.summarise(results, body.get('returns', []))
        except ValueError as err:
            raise MessageError('schema', f'eval_report: {err}') from None
        del self.running[body['task_id']]
        del self.opponents[body['task_id']]
        worker.eval_task_id = None
        # An opponent found damaged while the job ran was played with a stand-in's parameters: not recorded.
        readable = {oid for oid, _ in co.readable_eval_opponents(pid)}
        results = evaluation.readable_only(results, readable)
        co.record_evaluation(pid, results, body.get('returns', []), version=body['version'], journal=journal)
        co.note_evaluation_round([pid], periodic=not running[1]['final'])
        return True

    def finals_pending(self) -> List[EvaluationJob]:
        """Final evaluation jobs nobody took (a run without evaluator workers evaluates them itself)."""
        return [job for job in self.coordinator.pending if job['final']]

    def finish_pending(self, job: EvaluationJob, results: EvalResults, returns: Sequence[float],
                       journal: Callable[[LeagueOp], None],
                       version: Optional[int] = None) -> None:
        self.coordinator.pending.remove(job)
        self.coordinator.record_evaluation(job['player_id'], results, returns, version=version, journal=journal)
        self.coordinator.note_evaluation_round([job['player_id']], periodic=False)
