"""An evaluator process of the parallel mode: plays the evaluation jobs the commander hands out, the
way every mode evaluates (:mod:`sparring.worker.evaluation`), and reports the results: the outcomes per
opponent and, beside them, how many distinct games they were (``distinct_games``); in a game of three or more
seats, the games' rankings (``rankings``)."""
from __future__ import annotations

from typing import Any, Dict

from sparring.worker.remote.base import PlayerPolicies, Worker
from sparring.worker.remote.protocol import EvalReportBody
from sparring.worker.remote.security import Security
from sparring.worker.run_kind import run_kind
from sparring.worker.seeds import LEAGUE_EVAL_SEED_OFFSET


class EvaluatorWorker(Worker):
    role = 'evaluator'

    def __init__(self, commander: str, security: Security, **options: Any) -> None:
        super().__init__(commander, security, **options)
        with self.joining():
            self.players = PlayerPolicies(self, self.cfg.seed + LEAGUE_EVAL_SEED_OFFSET)
            self.evaluation = run_kind(self.cfg).evaluation()
            self.evaluated = 0

    def run(self) -> None:
        try:
            self.work_on('eval_task', self._evaluate)
        finally:
            self.evaluation.close()
        self.goodbye()

    def _evaluate(self, job: dict) -> None:
        policy = self.players.get(job['player_id'], refresh=True)
        results, returns = self.evaluation(policy, job['opponents'], self.players.pool)
        body = EvalReportBody(task_id=job['task_id'], player_id=job['player_id'], version=policy.version,
                              **self.evaluation.report_fields(results))  # type: ignore[typeddict-item]
        if returns:
            body['returns'] = returns
        self.request('eval_report', body)
        self.evaluated += 1

    def stats(self) -> Dict[str, float]:
        return dict(evaluated=float(self.evaluated))
