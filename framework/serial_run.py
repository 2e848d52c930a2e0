"""A run in one process: every player's policy, learner and collector around one run coordinator.

Each round, every active player in turn collects a chunk (a league player's collector draws each
game's opponent from the coordinator's league; in a game of three or more seats, a tuple of opponents), reports the chunk's games and env steps, learns
from it, and reports its iteration; the coordinator answers with the snapshot / reset verdict, which
is carried out here (a snapshot freezes the parameters in the store, a reset reloads the ones the
league names). Evaluations the coordinator queued are played after the round, or with
``train.eval_in_background`` sent to a child process with a frozen copy of the parameters and
recorded ``eval_every_iters`` rounds later (waiting for them if need be), so that the record falls on
the same round on every machine: a strategy chosen once (:mod:`~sparring.framework.run_evaluation`). A
single-agent run is the one-player case: no opponents, no games, evaluation by episode return; its checkpoint
has a layout of its own, which :func:`in_league_layout` reads as the league's.
"""
from __future__ import annotations

import os
from typing import Callable, Dict, List, Optional, Union

import torch

from sparring.config.compile import CompiledConfig
from sparring.config.registry import POLICY_REGISTRY
from sparring.framework.coordinator import RunCoordinator
from sparring.framework.exploit_schedule import ExploitSchedule
from sparring.framework.run_evaluation import (BackgroundEvaluations, EvaluationRecords, EvaluationStrategy,
                                               InlineEvaluation, Outcome)
from sparring.framework.run_setup import LEAGUE_STATE_FILE, reset_from_verdict
from sparring.league.job_protocol import stored_ref
from sparring.policy.base import Policy
from sparring.policy.replay_opponents import forget_stale_opponents
from sparring.worker.background_evaluation import BackgroundEvaluation
from sparring.worker.battle_collector import BattleCollector
from sparring.worker.collector import SampleCollector
from sparring.worker.learner import Learner
from sparring.worker.logger import RunLogger
from sparring.worker.multiseat_collector import MultiSeatCollector
from sparring.worker.run_kind import SINGLE_AGENT, RunKind, run_kind
from sparring.worker.runtime import capture_rng, restore_rng
from sparring.worker.state_file import StateFileError

Collector = Union[BattleCollector, MultiSeatCollector, SampleCollector]


class SerialRun:
    """The coordinator, its players' learners and collectors, the policy pool and the evaluation strategy: a
    league run or a single-agent one (the one-player case) in one process."""

    def __init__(self, cfg: CompiledConfig, state: Optional[dict] = None, say: Optional[Callable[[str], None]] = None,
                 logger: Optional[RunLogger] = None) -> None:
        self.cfg = cfg
        self.exp_dir: str = cfg.exp_name
        self.kind: RunKind = run_kind(cfg)
        state = in_league_layout(state) if state is not None else None
        self.coordinator = RunCoordinator(cfg, self.kind, say=say, logger=logger)
        self.league = self.coordinator.league
        self.store = self.coordinator.store
        self.player_ids: List[str] = self.coordinator.player_ids
        self.roles = self.kind.roles  # a game whose seats have roles: each player plays its category's
        self.pool = self.kind.policy_pool(self.store, cfg.seed)
        per_player_budget = max(1, cfg.train.max_env_steps // len(self.player_ids))
        # A resumed run's envs start new episodes, seeded by how far the run got: they neither replay
        # the first episodes nor depend on anything but the seed and the checkpoint.
        resumed_steps = sum(c['env_steps'] for c in state['collectors'].values()) if state else 0
        policy_cls = POLICY_REGISTRY.get(cfg.policy.type)
        self.learners: Dict[str, Learner] = {}
        self.collectors: Dict[str, Collector] = {}
        for index, pid in enumerate(self.player_ids):
            # Built on policy.collect.device; its Learner moves it to policy.device. In one process that
            # policy also collects and is evaluated, so it acts where it learns (no copy to keep fresh);
            # the pool's league snapshots act on policy.collect.device.
            role = self.league.get_player(pid).category if self.roles else None
            policy = policy_cls(cfg.policy, *self.kind.spaces(role), seed=cfg.seed + index)
            policy.role = role
            if self.kind.keeps_initial_params:
                # Every player (of a role) starts from the same initial parameters, which resets return to.
                init_ref = self.coordinator.store_initial(policy.get_params(), category=role)
                policy.set_params(self.store.get(init_ref)['params'], 0)
            self.pool.add_live(pid, policy)
            self.learners[pid] = Learner(policy, per_player_budget, battle=self.kind.is_league)
            self.collectors[pid] = self.kind.collector(policy, cfg.policy.collect.n_steps, cfg.seed + resumed_steps,
                                                       pid, index, self._job_sampler(pid))
        self.evaluation = self.kind.evaluation(seed_shift=resumed_steps)
        if cfg.battle.exact_analysis:
            self.coordinator.use_exact_analysis(self.pool.get)
        self.exploits = ExploitSchedule(cfg, self.kind.is_league, self.coordinator.history, say or (lambda line: None),
                                        logger)
        self.records = EvaluationRecords(self.coordinator, self.exploits, self.player_ids)
        self.evaluations: EvaluationStrategy = self._evaluation_strategy(resumed_steps)
        self.rounds = 0
        self.wall_seconds = 0.0
        if state is not None:
            self._load(state)
        self.started_at_steps = self.env_steps  # where this process took the run up (what its course keeps)

    @property
    def env_steps(self) -> int:
        return self.coordinator.env_steps

    @property
    def last_eval(self) -> Dict[str, dict]:
        return self.coordinator.last_eval

    @property
    def history(self) -> List[dict]:
        return self.coordinator.history

    @property
    def last_exact(self) -> dict:
        return self.coordinator.last_exact

    def _job_sampler(self, pid: str):
        """``sample_job(slot)``: the coordinator's next job for ``pid``, its player ids and its opponents'
        policies (see :mod:`~sparring.worker.run_kind`)."""
        def sample(slot: int):
            while True:  # ends: each damaged snapshot is quarantined once, and then drawn no more
                job = self.coordinator.draw_job(pid)
                try:
                    return job['player_ids'], [self._policy_of(away) for away in job['players'][1:]]
                except _Damaged as damaged:
                    self.coordinator.quarantine(damaged.ref, damaged.why)
        return sample

    def _policy_of(self, away) -> Policy:
        """The policy of a job's opponent (raises :class:`_Damaged` when its stored parameters cannot be read)."""
        ref = stored_ref(away['param_ref'], f'opponent {away["player_id"]!r}')
        role = self.league.get_player(away['player_id']).category if self.roles else None
        try:
            return self.pool.get(ref, role)
        except StateFileError as err:
            raise _Damaged(ref, str(err)) from err

    def _evaluation_strategy(self, resumed_steps: int) -> EvaluationStrategy:
        """In line, or in the background (``train.eval_in_background``)."""
        def policy_of(pid: str) -> Policy:
            return self.learners[pid].policy
        if self.cfg.train.eval_in_background:
            roles = {pid: self.league.get_player(pid).category for pid in self.player_ids} if self.roles else None
            background = BackgroundEvaluation(self.cfg, self.player_ids, seed_shift=resumed_steps, roles=roles)
            return BackgroundEvaluations(self.records, background, self.cfg.train.eval_every_iters, policy_of,
                                         lambda pid: self.learners[pid].train_iter)
        return InlineEvaluation(self.records, self._play, policy_of, self._spare_policy)

    def _play(self, policy: Policy) -> Outcome:
        """One evaluation of ``policy`` against the run's evaluation opponents."""
        return self.evaluation(policy, self.coordinator.readable_eval_opponents(), self.pool)

    def _spare_policy(self, pid: str) -> Policy:
        """A policy for player ``pid``'s kept parameters (its role's, in a game whose seats have roles)."""
        role = self.coordinator.role_of(pid)
        policy = POLICY_REGISTRY.get(self.cfg.policy.type)(self.cfg.policy, *self.kind.spaces(role), seed=self.cfg.seed)
        policy.role = role
        return policy

    # -- one round ----------------------------------------------------------------------------
    def train_round(self) -> Dict[str, dict]:
        """Every player collects, learns and hears the league's verdict once; returns their training figures."""
        stats = {}
        for pid in self.player_ids:
            chunk = self.collectors[pid].collect()
            self.coordinator.report_chunk(pid, chunk)
            learner = self.learners[pid]
            trained = learner.train(chunk)
            if trained is None:  # dropped (counted by the learner): the player goes on without this update
                self._log_dropped(learner)
            stats[pid] = dict(trained or {}, games=len(chunk.results) + len(chunk.rankings))
            policy = learner.policy
            verdict = self.coordinator.progress(pid, learner.train_iter, policy.version, params=policy.get_params())
            if verdict['historical_player'] is not None:  # a snapshot
                self.pool.forget(stored_ref(verdict['historical_player']['param_ref'], 'the snapshot'))
                self._forget_stale_opponents()
            reset_from_verdict(self.store, policy, verdict, pid)
        self.rounds += 1
        return stats

    def _log_dropped(self, learner: Learner) -> None:
        """The learners' dropped chunks by reason, as the parallel run's ``run/dropped/learner_dropped_<reason>``."""
        logger = self.coordinator.logger
        if logger is not None:
            totals = {f'learner_dropped_{reason}': float(sum(lr.dropped[reason] for lr in self.learners.values()))
                      for reason in learner.dropped}
            logger.scalars(totals, self.env_steps, prefix='run/dropped/')

    def _forget_stale_opponents(self) -> None:
        """A snapshot ages the others: replays that forget by opponent (SAC's ``replay.max_opponent_age``) drop
        the transitions against opponents now too old."""
        self.coordinator.counters['replay_transitions_forgotten'] += forget_stale_opponents(
            (learner.policy for learner in self.learners.values()), self.coordinator.league.opponent_ages)

    def evaluate_pending(self) -> Dict[str, dict]:
        """Play the evaluations the coordinator queued (in the background: record those due at this round
        and send the new ones); their reports by player (empty if none was recorded)."""
        return self.evaluations.pending(self.rounds)

    def evaluate(self) -> Dict[str, dict]:
        """Every active player now, whether due or not."""
        return self.evaluations.everyone(self.rounds)

    def settle_evaluations(self) -> Dict[str, dict]:
        """Record every evaluation still in the background, waiting for it (before the final evaluation)."""
        return self.evaluations.settle()

    # -- persistence --------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The checkpoint: the learners, collectors, league and the run's course."""
        rng = capture_rng()
        if not self.kind.is_league:
            (pid,) = self.player_ids
            state = dict(learner=self.learners[pid].state_dict(), collector=self.collectors[pid].state_dict(),
                         evaluator_history=self.records.history[pid], rng=rng, wall_seconds=self.wall_seconds)
        else:
            self.league.save(os.path.join(self.exp_dir, LEAGUE_STATE_FILE))
            state = dict(learners={pid: learner.state_dict() for pid, learner in self.learners.items()},
                         collectors={pid: c.state_dict() for pid, c in self.collectors.items()},
                         rounds=self.rounds, wall_seconds=self.wall_seconds, last_eval=self.last_eval,
                         history=self.history, league_state=self.league.state_dict(), rng=rng,
                         branch_games=self.coordinator.watch.branch_state())
        if self.evaluations.in_flight:  # a resumed run sends them again, with the parameters they were sent with
            state['evaluations_in_flight'] = [dict(entry) for entry in self.evaluations.in_flight]
        return state

    def _load(self, state: dict) -> None:
        self.coordinator.league.load_state_dict(state['league_state'])
        for pid in self.player_ids:
            self.learners[pid].load_state_dict(state['learners'][pid])
            self.collectors[pid].load_state_dict(state['collectors'][pid])
        self.coordinator.resume_course(
            {pid: (self.collectors[pid].env_steps, self.learners[pid].train_iter, self.learners[pid].policy.version)
             for pid in self.player_ids},
            state['last_eval'], state['history'], state['branch_games'], state['evaluated_versions'],
            float(state['wall_seconds']))
        self.records.history.update({pid: list(h) for pid, h in state['eval_history'].items()})
        self.rounds = int(state['rounds'])
        self.wall_seconds = float(state['wall_seconds'])
        restore_rng(state['rng'])
        left = [dict(entry) for entry in state.get('evaluations_in_flight', [])]
        for entry in left:
            entry['params'] = {k: torch.as_tensor(v) for k, v in entry['params'].items()}
        self.evaluations.take_over(left)

    def close(self) -> None:
        for collector in self.collectors.values():
            collector.close()
        self.evaluation.close()
        self.evaluations.close()
        self.exploits.close()


class _Damaged(Exception):
    """An opponent's stored parameters that cannot be read: quarantined, and the job drawn again."""

    def __init__(self, ref: str, why: str) -> None:
        super().__init__(why)
        self.ref, self.why = ref, why


def in_league_layout(state: dict) -> dict:
    """A checkpoint of either layout (a league run's, or a single-agent run's: one learner, one collector and its
    evaluator history) as the league layout, with what each layout implies spelled out."""
    if 'learners' in state:
        steps = sum(int(c['env_steps']) for c in state['collectors'].values())
        history = list(state['history'])
        up_to_date = bool(history) and history[-1]['env_steps'] == steps  # the last evaluation was at the end
        evaluated = {pid: learner['policy']['version'] if up_to_date else None
                     for pid, learner in state['learners'].items()}
        return dict(state, evaluated_versions=evaluated, eval_history={}, last_eval=state['last_eval'],
                    history=history)
    learner, history = state['learner'], list(state['evaluator_history'])
    return dict(learners={SINGLE_AGENT: learner}, collectors={SINGLE_AGENT: state['collector']},
                rounds=learner['train_iter'], wall_seconds=state['wall_seconds'], last_eval={}, history=[],
                league_state=None, branch_games={}, rng=state['rng'], eval_history={SINGLE_AGENT: history},
                evaluated_versions={SINGLE_AGENT: history[-1][0] if history else None},
                evaluations_in_flight=state.get('evaluations_in_flight', []))
