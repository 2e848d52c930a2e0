"""A run in one process: every player's policy, learner and collector around one run coordinator.

Each round, every active player in turn collects a chunk (a league player's collector draws each
game's opponent from the coordinator's league), reports the chunk's games and env steps, learns
from it, and reports its iteration; the coordinator answers with the snapshot / reset verdict, which
is carried out here (a snapshot freezes the parameters in the store, a reset reloads the ones the
league names). Evaluations the coordinator queued are played after the round, or with
``train.eval_in_background`` sent to a child process with a frozen copy of the parameters and
recorded ``eval_every_iters`` rounds later (waiting for them if need be), so that the record falls on
the same round on every machine. A single-agent run is the one-player case: no opponents, no games,
evaluation by episode return.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional

import torch

from sparring.config.registry import POLICY_REGISTRY
from sparring.framework.coordinator import INIT_REF, RunCoordinator
from sparring.framework.exploit_schedule import ExploitSchedule
from sparring.framework.run_setup import LEAGUE_STATE_FILE
from sparring.worker.background_evaluation import BackgroundEvaluation
from sparring.worker.learner import Learner
from sparring.worker.policy_pool import PolicyPool
from sparring.worker.run_kind import SINGLE_AGENT, run_kind
from sparring.worker.runtime import capture_rng, restore_rng
from sparring.worker.state_file import StateFileError


class LeagueRun:
    """The coordinator, its players' learners and collectors, the policy pool and the evaluation."""

    def __init__(self, cfg, state: Optional[dict] = None, say=None, logger=None) -> None:
        self.cfg = cfg
        self.exp_dir = cfg.exp_name
        self.kind = run_kind(cfg)
        state = _unified(state, self.kind) if state is not None else None
        self.coordinator = RunCoordinator(cfg, self.kind, say=say, logger=logger)
        self.league = self.coordinator.league
        self.store = self.coordinator.store
        self.player_ids: List[str] = self.coordinator.player_ids
        obs_space, act_space = self.kind.spaces()
        self.pool = PolicyPool(self.store, obs_space, act_space, seed=cfg.seed)
        per_player_budget = max(1, cfg.train.max_env_steps // len(self.player_ids))
        # A resumed run's envs start new episodes, seeded by how far the run got: they neither replay
        # the first episodes nor depend on anything but the seed and the checkpoint.
        resumed_steps = sum(c['env_steps'] for c in state['collectors'].values()) if state else 0
        policy_cls = POLICY_REGISTRY.get(cfg.policy.type)
        self.learners: Dict[str, Learner] = {}
        self.collectors: Dict[str, object] = {}
        for index, pid in enumerate(self.player_ids):
            # Built on policy.collect.device; its Learner moves it to policy.device. In one process that
            # policy also collects and is evaluated, so it acts where it learns (no copy to keep fresh);
            # the pool's league snapshots act on policy.collect.device.
            policy = policy_cls(cfg.policy, obs_space, act_space, seed=cfg.seed + index)
            if self.kind.keeps_initial_params:
                # Every player starts from the same initial parameters, which resets return to.
                self.coordinator.store_initial(policy.get_params())
                policy.set_params(self.store.get(INIT_REF)['params'], 0)
            self.pool.add_live(pid, policy)
            self.learners[pid] = Learner(policy, per_player_budget)
            self.collectors[pid] = self.kind.collector(policy, cfg.policy.collect.n_steps, cfg.seed + resumed_steps,
                                                       pid, index, self._opponent_sampler(pid))
        self.evaluation = self.kind.evaluation(seed_shift=resumed_steps)
        self.background = (BackgroundEvaluation(cfg, self.player_ids, seed_shift=resumed_steps)
                           if cfg.train.eval_in_background else None)
        # Background evaluations sent and not recorded yet, in the order sent: the job, the parameters'
        # version, the round it is recorded at and the run's env steps and seconds when it was sent.
        self.in_flight: List[dict] = []
        self.tasks_sent = 0
        self.eval_history: Dict[str, list] = {pid: [] for pid in self.player_ids}  # (version, score) per evaluation
        if cfg.battle.exact_analysis:
            self.coordinator.use_exact_analysis(self.pool.get)
        self.exploits = ExploitSchedule(cfg, self.kind.is_league, self.coordinator.history, say or (lambda line: None),
                                        logger)
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

    def _opponent_sampler(self, pid: str):
        def sample(slot: int):
            while True:  # ends: each damaged snapshot is quarantined once, and then drawn no more
                away = self.coordinator.draw_job(pid)['players'][1]
                try:
                    return away['player_id'], self.pool.get(away['param_ref'])
                except StateFileError as err:
                    self.coordinator.quarantine(away['param_ref'], str(err))
        return sample

    # -- one round ----------------------------------------------------------------------------
    def train_round(self) -> Dict[str, dict]:
        """Every player collects, learns and hears the league's verdict once; returns their training figures."""
        stats = {}
        for pid in self.player_ids:
            chunk = self.collectors[pid].collect()
            self.coordinator.report_games(pid, chunk.results, chunk.env_steps, chunk.episode_returns)
            learner = self.learners[pid]
            stats[pid] = learner.train(chunk)
            stats[pid]['games'] = len(chunk.results)
            policy = learner.policy
            verdict = self.coordinator.progress(pid, learner.train_iter, policy.version, params=policy.get_params())
            if verdict['snapshot']:
                self.pool.forget(verdict['historical_player']['param_ref'])
                self._forget_stale_opponents()
            if verdict['reset']:
                # Keep counting versions upward: staleness must stay meaningful across a reset.
                policy.set_params(self.store.get(verdict['reset_param_ref'])['params'], policy.version)
                policy.reset_optimizer()
        self.rounds += 1
        return stats

    def _forget_stale_opponents(self) -> None:
        """A snapshot ages the others: replays that forget by opponent (SAC's ``replay.max_opponent_age``) drop
        the transitions against opponents now too old."""
        ages = None
        for learner in self.learners.values():
            forget = getattr(learner.policy, 'forget_opponents', None)
            if forget is not None:
                ages = self.coordinator.league.opponent_ages() if ages is None else ages
                self.coordinator.counters['replay_transitions_forgotten'] += forget(ages)

    def evaluate_pending(self) -> Dict[str, dict]:
        """Play the evaluations the coordinator queued (in the background: record those due at this round
        and send the new ones); their reports by player (empty if none was recorded)."""
        if self.background is None:
            jobs = self.coordinator.take_pending()
            for job in jobs:
                self._evaluate(job['player_id'])
            if jobs:
                periodic = not any(job['final'] for job in jobs)
                self.coordinator.note_evaluation_round([job['player_id'] for job in jobs], periodic=periodic)
                if periodic:
                    policy = self.learners[jobs[0]['player_id']].policy
                    self.exploits.after_evaluation(jobs[0]['player_id'], policy.get_params(), policy.version)
            return {job['player_id']: self.coordinator.last_eval[job['player_id']] for job in jobs}
        reports = self._record_due(self.rounds)
        jobs = self.coordinator.take_pending()
        if jobs:
            final = any(job['final'] for job in jobs)
            self._send(jobs, self.rounds + self.cfg.train.eval_every_iters)
            if final:  # nothing trains on while a final evaluation is played: wait for it
                reports.update(self._record_due(None))
        return reports

    def evaluate(self) -> Dict[str, dict]:
        """Every active player now, whether due or not."""
        if self.background is not None:
            self.settle_evaluations()
            self._send([dict(player_id=pid, final=False) for pid in self.player_ids], self.rounds)
            return self._record_due(None)
        for pid in self.player_ids:
            self._evaluate(pid)
        self.coordinator.note_evaluation_round(self.player_ids)
        return {pid: self.coordinator.last_eval[pid] for pid in self.player_ids}

    def settle_evaluations(self) -> Dict[str, dict]:
        """Record every evaluation still in the background, waiting for it (before the final evaluation)."""
        return self._record_due(None) if self.in_flight else {}

    def _evaluate(self, pid: str) -> dict:
        policy = self.learners[pid].policy
        results, returns = self.evaluation(policy, self.coordinator.readable_eval_opponents(), self.pool)
        report = self.coordinator.record_evaluation(pid, results, returns, version=policy.version)
        self.eval_history[pid].append((policy.version, self.coordinator.summarise(results, returns)[1]))
        return report

    def _send(self, jobs: List[dict], due_round: int) -> None:
        """Send ``jobs`` (evaluated together) to the background with the players' parameters as they are now."""
        group = dict(due_round=int(due_round), env_steps=self.env_steps, seconds=round(self.coordinator.wall_seconds, 2),
                     group=self.tasks_sent + 1)
        for job in jobs:
            policy = self.learners[job['player_id']].policy
            self._submit(dict(group, player_id=job['player_id'], version=policy.version, final=bool(job['final']),
                              iteration=self.learners[job['player_id']].train_iter), policy.get_params())

    def _submit(self, entry: dict, params) -> None:
        """Send one evaluation; its entry keeps the parameters (for a checkpoint, and an exploiter)."""
        self.tasks_sent += 1
        entry = dict(entry, task_id=self.tasks_sent, params={k: v.detach().cpu() for k, v in params.items()})
        self.background.submit(entry['task_id'], entry['player_id'], entry['version'], entry['params'],
                               self.coordinator.readable_eval_opponents())
        self.in_flight.append(entry)

    def _record_due(self, round_: Optional[int]) -> Dict[str, dict]:
        """Record the background evaluations due by ``round_`` (all of them for None), group by group."""
        reports: Dict[str, dict] = {}
        while self.in_flight and (round_ is None or self.in_flight[0]['due_round'] <= round_):
            group = [e for e in self.in_flight if e['group'] == self.in_flight[0]['group']]
            reports.update(self._record_group(group, lambda entry: self.background.result(entry['task_id'])))
            self.in_flight = self.in_flight[len(group):]
        return reports

    def _record_group(self, group: List[dict], outcome_of) -> Dict[str, dict]:
        """Record evaluations sent together, dated when they were sent; ``outcome_of(entry)`` plays or fetches
        one: ``(outcomes per opponent, returns)``."""
        reports = {}
        for entry in group:
            results, returns = outcome_of(entry)
            pid = entry['player_id']
            reports[pid] = self.coordinator.record_evaluation(pid, results, returns, version=entry['version'],
                                                              at_env_steps=entry['env_steps'],
                                                              at_iteration=entry['iteration'])
            self.eval_history[pid].append((entry['version'], self.coordinator.summarise(results, returns)[1]))
        periodic = not any(e['final'] for e in group)
        self.coordinator.note_evaluation_round([e['player_id'] for e in group], periodic=periodic,
                                               at=(group[0]['env_steps'], group[0]['seconds']))
        if periodic:
            self.exploits.after_evaluation(group[0]['player_id'], group[0]['params'], group[0]['version'])
        return reports

    # -- persistence --------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The checkpoint: the learners, collectors, league and the run's course."""
        rng = capture_rng()
        if not self.kind.is_league:
            (pid,) = self.player_ids
            state = dict(learner=self.learners[pid].state_dict(), collector=self.collectors[pid].state_dict(),
                         evaluator_history=self.eval_history[pid], rng=rng, wall_seconds=self.wall_seconds)
        else:
            self.league.save(os.path.join(self.exp_dir, LEAGUE_STATE_FILE))
            state = dict(learners={pid: learner.state_dict() for pid, learner in self.learners.items()},
                         collectors={pid: c.state_dict() for pid, c in self.collectors.items()},
                         rounds=self.rounds, wall_seconds=self.wall_seconds, last_eval=self.last_eval,
                         history=self.history, league_state=self.league.state_dict(), rng=rng,
                         branch_games=self.coordinator.watch.branch_state())
        if self.in_flight:  # a resumed run sends them again, with the parameters they were sent with
            state['evaluations_in_flight'] = [dict(entry) for entry in self.in_flight]
        return state

    def _load(self, state: dict) -> None:
        coordinator = self.coordinator
        coordinator.league.load_state_dict(state['league_state'])
        every = self.cfg.train.eval_every_iters
        for pid in self.player_ids:
            learner, collector = self.learners[pid], self.collectors[pid]
            learner.load_state_dict(state['learners'][pid])
            collector.load_state_dict(state['collectors'][pid])
            course = coordinator.players[pid]
            course.env_steps = collector.env_steps
            course.train_iteration = learner.train_iter
            course.version = learner.policy.version
            if every:
                course.next_eval = (learner.train_iter // every + 1) * every
        coordinator.env_steps = sum(course.env_steps for course in coordinator.players.values())
        coordinator.last_eval.update(state['last_eval'])
        coordinator.history.extend(state['history'])
        coordinator.watch.load_branch_state(state['branch_games'])
        for pid, version in state['evaluated_versions'].items():
            coordinator.players[pid].evaluated_version = version
        self.eval_history.update({pid: list(h) for pid, h in state['eval_history'].items()})
        self.rounds = int(state['rounds'])
        self.wall_seconds = float(state['wall_seconds'])
        coordinator.resume_clock(self.wall_seconds)
        restore_rng(state['rng'])
        left = [dict(entry) for entry in state.get('evaluations_in_flight', [])]
        for entry in left:
            entry['params'] = {k: torch.as_tensor(v) for k, v in entry['params'].items()}
        if self.background is not None:
            for entry in left:
                self._submit({k: v for k, v in entry.items() if k != 'params'}, entry['params'])
        else:  # the resumed run evaluates in-process: play them now, each on a copy of its player
            for group in sorted({e['group'] for e in left}):
                self._record_frozen([e for e in left if e['group'] == group])

    def _record_frozen(self, group: List[dict]) -> None:
        """Evaluate parameters that are not the live players' (background evaluations a checkpoint kept)."""
        obs_space, act_space = self.kind.spaces()
        policy = POLICY_REGISTRY.get(self.cfg.policy.type)(self.cfg.policy, obs_space, act_space, seed=self.cfg.seed)

        def play(entry):
            policy.set_params(entry['params'], entry['version'])
            return self.evaluation(policy, self.coordinator.readable_eval_opponents(), self.pool)
        self._record_group(group, play)

    def close(self) -> None:
        for collector in self.collectors.values():
            collector.close()
        self.evaluation.close()
        if self.background is not None:
            self.background.close()
        self.exploits.close()


def _unified(state: dict, kind) -> dict:
    """A checkpoint of either layout as the league layout, with what each layout implies spelled out."""
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
