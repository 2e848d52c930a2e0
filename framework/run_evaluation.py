"""How a run in one process evaluates its players: a strategy chosen once (``train.eval_in_background``).

* :class:`InlineEvaluation` plays each evaluation at once, after the round, on the live player's policy.
* :class:`BackgroundEvaluations` sends it to a child process with a frozen copy of the parameters and records
  it ``eval_every_iters`` rounds later (waiting for it if need be), so that the record falls on the same round
  on every machine.

Both record through one :class:`EvaluationRecords`: the coordinator's record (ratings, report, stop rule), each
player's (version, score) history, and the exploiter schedule after a periodic round.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from sparring.framework.coordinator import RunCoordinator
from sparring.framework.exploit_schedule import ExploitSchedule
from sparring.policy.base import Policy
from sparring.worker.background_evaluation import BackgroundEvaluation
from sparring.worker.evaluation import EvalResults

Outcome = Tuple[EvalResults, List[float]]  # (outcomes by opponent or rankings, episode returns)
Reports = Dict[str, dict]  # evaluation reports by player


class EvaluationRecords:
    """Where a run's evaluations are recorded."""

    def __init__(self, coordinator: RunCoordinator, exploits: ExploitSchedule, player_ids: Sequence[str]) -> None:
        self.coordinator, self.exploits = coordinator, exploits
        self.history: Dict[str, list] = {pid: [] for pid in player_ids}  # (version, score) per evaluation

    def record(self, pid: str, outcome: Outcome, version: int, at_env_steps: Optional[int] = None,
               at_iteration: Optional[int] = None) -> dict:
        results, returns = outcome
        report = self.coordinator.record_evaluation(pid, results, returns, version=version, at_env_steps=at_env_steps,
                                                    at_iteration=at_iteration)
        self.history[pid].append((version, self.coordinator.summarise(results, returns)[1]))
        return report

    def record_group(self, group: List[dict], outcome_of: Callable[[dict], Outcome]) -> Reports:
        """Record evaluations sent together, dated when they were sent; ``outcome_of(entry)`` plays or fetches
        one."""
        reports = {entry['player_id']: self.record(entry['player_id'], outcome_of(entry), entry['version'],
                                                   at_env_steps=entry['env_steps'], at_iteration=entry['iteration'])
                   for entry in group}
        periodic = not any(e['final'] for e in group)
        self.coordinator.note_evaluation_round([e['player_id'] for e in group], periodic=periodic,
                                               at=(group[0]['env_steps'], group[0]['seconds']))
        if periodic:
            self.exploits.after_evaluation(group[0]['player_id'], group[0]['params'], group[0]['version'])
        return reports


class InlineEvaluation:
    """Evaluations played at once, in this process. ``play(policy)`` plays one; ``policy_of(pid)`` is a player's
    live policy; ``frozen_policy(pid)`` a spare one for player ``pid``'s parameters a checkpoint kept (in a game
    whose seats have roles, built for that player's role)."""

    def __init__(self, records: EvaluationRecords, play: Callable[[Policy], Outcome],
                 policy_of: Callable[[str], Policy], frozen_policy: Callable[[str], Policy]) -> None:
        self.records, self.coordinator = records, records.coordinator
        self.play, self.policy_of, self.frozen_policy = play, policy_of, frozen_policy
        self.in_flight: List[dict] = []  # nothing is ever left in flight

    def pending(self, rounds: int) -> Reports:
        """Play the evaluations the coordinator queued; their reports by player."""
        jobs = self.coordinator.take_pending()
        for job in jobs:
            self._evaluate(job['player_id'])
        if jobs:
            periodic = not any(job['final'] for job in jobs)
            self.coordinator.note_evaluation_round([job['player_id'] for job in jobs], periodic=periodic)
            if periodic:
                policy = self.policy_of(jobs[0]['player_id'])
                self.records.exploits.after_evaluation(jobs[0]['player_id'], policy.get_params(), policy.version)
        return {job['player_id']: self.coordinator.last_eval[job['player_id']] for job in jobs}

    def everyone(self, rounds: int) -> Reports:
        for pid in self.coordinator.player_ids:
            self._evaluate(pid)
        self.coordinator.note_evaluation_round(self.coordinator.player_ids)
        return {pid: self.coordinator.last_eval[pid] for pid in self.coordinator.player_ids}

    def settle(self) -> Reports:
        return {}

    def take_over(self, left: List[dict]) -> None:
        """Background evaluations a checkpoint kept: played now, group by group, each group on a spare policy
        given each entry's parameters."""
        for group in sorted({e['group'] for e in left}):
            spares: Dict[Optional[str], Policy] = {}  # one per role (a symmetric game's: one)

            def play(entry: dict, spares: Dict[Optional[str], Policy] = spares) -> Outcome:
                role = self.coordinator.role_of(entry['player_id'])
                if role not in spares:
                    spares[role] = self.frozen_policy(entry['player_id'])
                policy = spares[role]
                policy.set_params(entry['params'], entry['version'])
                return self.play(policy)
            self.records.record_group([e for e in left if e['group'] == group], play)

    def _evaluate(self, pid: str) -> dict:
        policy = self.policy_of(pid)
        return self.records.record(pid, self.play(policy), policy.version)

    def close(self) -> None:
        pass


class BackgroundEvaluations:
    """Evaluations played in a child process (:class:`~sparring.worker.background_evaluation.BackgroundEvaluation`)
    and recorded ``every`` rounds after they were sent. ``policy_of(pid)`` is a player's live policy,
    ``iteration_of(pid)`` its learner's iteration."""

    def __init__(self, records: EvaluationRecords, background: BackgroundEvaluation, every: int,
                 policy_of: Callable[[str], Policy], iteration_of: Callable[[str], int]) -> None:
        self.records, self.coordinator, self.background, self.every = records, records.coordinator, background, every
        self.policy_of, self.iteration_of = policy_of, iteration_of
        # Sent and not recorded yet, in the order sent: the job, the parameters' version, the round it is recorded
        # at and the run's env steps and seconds when it was sent (kept in a checkpoint, parameters included).
        self.in_flight: List[dict] = []
        self.tasks_sent = 0

    def pending(self, rounds: int) -> Reports:
        """Record those due at this round and send the new ones; their reports by player (empty if none)."""
        reports = self._record_due(rounds)
        jobs = self.coordinator.take_pending()
        if jobs:
            final = any(job['final'] for job in jobs)
            self._send([(job['player_id'], job['final']) for job in jobs], rounds + self.every)
            if final:  # nothing trains on while a final evaluation is played: wait for it
                reports.update(self._record_due(None))
        return reports

    def everyone(self, rounds: int) -> Reports:
        self.settle()
        self._send([(pid, False) for pid in self.coordinator.player_ids], rounds)
        return self._record_due(None)

    def settle(self) -> Reports:
        """Record every evaluation still in the background, waiting for it (before the final evaluation)."""
        return self._record_due(None) if self.in_flight else {}

    def take_over(self, left: List[dict]) -> None:
        """Background evaluations a checkpoint kept: sent again, with the parameters they were sent with."""
        for entry in left:
            self._submit({k: v for k, v in entry.items() if k != 'params'}, entry['params'])

    def _send(self, jobs: List[Tuple[str, bool]], due_round: int) -> None:
        """Send ``jobs`` (``(player, final)``, evaluated together) with the players' parameters as they are now."""
        group = dict(due_round=int(due_round), env_steps=self.coordinator.env_steps,
                     seconds=round(self.coordinator.wall_seconds, 2), group=self.tasks_sent + 1)
        for pid, final in jobs:
            policy = self.policy_of(pid)
            self._submit(dict(group, player_id=pid, version=policy.version, final=bool(final),
                              iteration=self.iteration_of(pid)), policy.get_params())

    def _submit(self, entry: dict, params) -> None:
        """Send one evaluation; its entry keeps the parameters (for a checkpoint, and an exploiter)."""
        self.tasks_sent += 1
        entry = dict(entry, task_id=self.tasks_sent, params={k: v.detach().cpu() for k, v in params.items()})
        self.background.submit(entry['task_id'], entry['player_id'], entry['version'], entry['params'],
                               self.coordinator.readable_eval_opponents(entry['player_id']))
        self.in_flight.append(entry)

    def _record_due(self, round_: Optional[int]) -> Reports:
        """Record the evaluations due by ``round_`` (all of them for None), group by group."""
        reports: Reports = {}
        while self.in_flight and (round_ is None or self.in_flight[0]['due_round'] <= round_):
            group = [e for e in self.in_flight if e['group'] == self.in_flight[0]['group']]
            reports.update(self.records.record_group(group, lambda entry: self.background.result(entry['task_id'])))
            self.in_flight = self.in_flight[len(group):]
        return reports

    def close(self) -> None:
        self.background.close()


EvaluationStrategy = Union[InlineEvaluation, BackgroundEvaluations]
