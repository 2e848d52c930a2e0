"""The run coordinator: the one place a run's league is driven, in every mode.

It owns the league (a :class:`~sparring.league.SingleAgentLeague` for a single-agent run: its one
player), the parameter store, and the run's course:

* **jobs out, results in** — :meth:`apply` performs each league operation (``jobs``: draw opponents;
  ``games``: record finished games; ``progress``: a learner's iteration, then the snapshot / reset
  verdict; ``eval``: rated evaluation games; ``abandon``: jobs whose games will never end). Each is a
  plain dict typed in :mod:`~sparring.framework.league_ops`, so the commander can journal it and replay it
  after a crash; the serial loop calls the same operations through :meth:`report_games` and :meth:`progress`.
* **evaluation** — when a player is due (:meth:`progress` queues it in :attr:`pending`), what the
  result means (:meth:`record_evaluation`: ratings, report, the stop rule) and the final evaluation.
* **the stop rule and the budget phases** — ``collect`` until the env-step or wall-time budget is
  spent or the first player's evaluation score reaches ``env.stop_value``; then ``drain`` (learners
  finish what they were sent), ``evaluate`` (a final evaluation of every player whose last one is
  out of date) and ``done``.

The serial loop calls it in-process; the commander wraps it and adds only what a network needs.
"""
from __future__ import annotations

import dataclasses
import os
import time
from collections import defaultdict, deque
from typing import Callable, Collection, Deque, Dict, List, Optional, Sequence, Set, Tuple, TypedDict, Union, overload

from sparring.config.compile import CompiledConfig
from sparring.config.registry import ENV_REGISTRY, LEAGUE_REGISTRY, MODEL_REGISTRY
from sparring.config.schema import ConfigError
from sparring.framework.league_ops import (AbandonOp, EvalOp, GamesOp, JobsOp, LeagueOp, ProgressOp, RankedEvalOp,
                                           RankedGamesOp)
from sparring.framework.league_watch import watch_for
from sparring.framework.run_setup import evaluation_opponents
from sparring.framework.seat_games import PairGames, SeatGames, seat_games
from sparring.league.exact_analysis import ExploitabilityFigures, LeagueExactAnalysis, exact_analysis_of
from sparring.league.job_protocol import JobInfo, PlayerProgress, SnapshotVerdict, stored_ref
from sparring.league.role_exact_analysis import LeagueRoleAnalysis, RoleNashConvFigures
from sparring.league.multiseat_exact import MultiSeatLeagueExact, NashConvFigures
from sparring.worker.chunk import Chunk
from sparring.worker.evaluation import EvalResults, opponent_role
from sparring.worker.logger import RunLogger
from sparring.worker.policy_pool import ParamStore
from sparring.worker.run_kind import RunKind
from sparring.worker.state_file import StateFileError

INIT_REF = 'init'  # the parameters every player starts from, and resets return to
PHASES = ('collect', 'drain', 'evaluate', 'done')
REDRAWS = 16  # draws of a job whose opponent is quarantined before it becomes a game against itself


# A player's course as a state file holds it: one dict per field, by player id (the names files have had).
COURSE_FIELDS = dict(player_env_steps='env_steps', player_chunks='chunks', train_iterations='train_iteration',
                     versions='version', next_eval='next_eval')


class EvaluationJob(TypedDict):
    """An evaluation due: queued by the coordinator, played by an evaluator (or the serial run) and recorded."""
    task_id: int
    player_id: str
    final: bool  # of the final evaluation (the run ends once these are in), not a periodic one


@dataclasses.dataclass
class PlayerCourse:
    """How far one active player has got in the run."""
    env_steps: int = 0  # of the games it collected
    chunks: int = 0  # reported
    train_iteration: int = 0  # its learner's, as last reported
    version: int = 0  # of its parameters: the newest reported
    next_eval: int = 0  # the iteration at which its next periodic evaluation is due
    evaluated_version: Optional[int] = None  # the version its last evaluation played (None: none yet)


class RunCoordinator:
    """League, parameter store, jobs and results, verdicts, evaluation, the stop rule and the phases."""

    def __init__(self, cfg: CompiledConfig, kind: RunKind, clock: Callable[[], float] = time.perf_counter,
                 say: Optional[Callable[[str], None]] = None, logger: Optional[RunLogger] = None) -> None:
        self.cfg = cfg
        self.kind = kind
        self.clock = clock
        self.say: Callable[[str], None] = say if say is not None else (lambda text: None)
        self.logger = logger
        self.league = LEAGUE_REGISTRY.get(kind.league_type())(cfg.league)
        seats = cfg.league.get('seats', 2) if kind.is_league else 2
        kind.check_seats(seats)
        self.seat_games: SeatGames = seat_games(seats)  # how games are recorded: pairs, or rankings of S seats
        self.player_ids: List[str] = [p.player_id for p in self.league.active_players]
        self.first = self.player_ids[0]
        self.rated = {p.player_id for p in self.league.reference_players}
        self.eval_opponents: List[Tuple[str, str]] = evaluation_opponents(self.league, cfg)
        self.store = ParamStore(os.path.join(cfg.exp_name, 'params'))
        self.summarise: Callable[[EvalResults, Sequence[float]], Tuple[dict, Optional[float], str]] = \
            kind.evaluation_class.summarise  # type: ignore[assignment]
        every = cfg.train.eval_every_iters
        # -- the course of the run (saved with it) --
        self.env_steps = 0
        self.players: Dict[str, PlayerCourse] = {pid: PlayerCourse(next_eval=every) for pid in self.player_ids}
        self.counters: Dict[str, int] = defaultdict(int)
        self.dropped: Dict[str, str] = {}  # quarantined snapshots (their files are damaged): param ref -> why
        self.last_eval: Dict[str, dict] = {}
        self.history: List[dict] = []  # one entry per evaluation round: when, and what it found
        self.reached: Optional[Tuple[int, float]] = None  # (env steps, seconds) when the stop value was reached
        self.recent_returns: Deque[float] = deque(maxlen=100)
        self.pending: Deque[EvaluationJob] = deque()  # evaluations due, in the order they fell due
        self.phase = 'collect'
        self.stop_reason = ''
        self.wall_seconds_before = 0.0
        self.started = clock()
        self._next_task_id = 0
        self.exact: Optional[Union[LeagueExactAnalysis, LeagueRoleAnalysis, MultiSeatLeagueExact]] = None
        # how its reports are logged and drawn
        self.exact_figures: Union[ExploitabilityFigures, NashConvFigures, RoleNashConvFigures] = ExploitabilityFigures()
        self.last_exact: dict = {}
        self.watch = watch_for(self)  # league metrics for TensorBoard and <exp>/report.html

    @property
    def wall_seconds(self) -> float:
        return self.wall_seconds_before + self.clock() - self.started

    def resume_clock(self, wall_seconds_before: float) -> None:
        """Count the run's wall time on from ``wall_seconds_before`` (a resumed run)."""
        self.wall_seconds_before = float(wall_seconds_before)
        self.started = self.clock()

    def role_of(self, pid: str) -> Optional[str]:
        """The role player ``pid`` plays (its category) in a league of roles, else None."""
        roles = self.cfg.league is not None and self.cfg.league.get('roles')
        return self.league.get_player(pid).category if roles else None

    def initial_ref(self, pid: str) -> str:
        """Where the parameters active player ``pid`` starts from (and resets to) are kept."""
        role = self.role_of(pid)
        return INIT_REF if role is None else self.league.init_param_ref(role)

    def store_initial(self, params, version: int = 0, category: Optional[str] = None) -> str:
        """Keep the parameters every player starts from (and a reset returns to), once per run; in a league of
        roles, once per role (``category``). Returns where they are kept."""
        ref = self.league.init_param_ref(category) if category is not None else INIT_REF
        if ref not in self.store:
            self.store.put(ref, params, dict(self.cfg.policy), version)
        return ref

    # ------------------------------------------------------------------------------ league operations
    @overload
    def apply(self, entry: JobsOp) -> List[JobInfo]: ...

    @overload
    def apply(self, entry: ProgressOp) -> SnapshotVerdict: ...

    @overload
    def apply(self, entry: Union[GamesOp, RankedGamesOp, AbandonOp, EvalOp, RankedEvalOp]) -> None: ...

    @overload
    def apply(self, entry: LeagueOp) -> Union[List[JobInfo], SnapshotVerdict, None]: ...

    def apply(self, entry: LeagueOp) -> Union[List[JobInfo], SnapshotVerdict, None]:
        """Perform one league operation (see :mod:`~sparring.framework.league_ops`); the same on a replay as the
        first time."""
        if entry['op'] == 'jobs':
            return self._draw_jobs(entry)
        if entry['op'] in ('games', 'ranked_games'):
            self._record_games(entry)
            return None
        if entry['op'] == 'abandon':
            self.counters['jobs_abandoned'] += len(entry['jobs'])
            return None
        if entry['op'] == 'progress':
            return self._judge(entry)
        if entry['op'] in ('eval', 'ranked_eval'):
            self.seat_games.record_eval(self.league, entry, self.counters)  # type: ignore[arg-type]
            return None
        raise RuntimeError(f'journal: unknown operation {entry["op"]!r}')

    def _draw_jobs(self, entry: JobsOp) -> List[JobInfo]:
        dropped = self._dropped_for(entry)
        infos = [self.draw_job(entry['player'], dropped) for _ in range(entry['n'])]
        if infos and infos[0]['job_id'] != entry.setdefault('first', infos[0]['job_id']):
            raise RuntimeError(f'journal replay diverged: job ids start at {infos[0]["job_id"]}, the journal '
                               f'says {entry["first"]}')
        return infos

    def _record_games(self, entry: Union[GamesOp, RankedGamesOp]) -> None:
        self.seat_games.record(self.league, entry, self._dropped_for(entry), self.counters)  # type: ignore[arg-type]
        self.env_steps += entry['steps']
        course = self.players[entry['player']]
        course.env_steps += entry['steps']
        course.chunks += 1
        self.counters['chunks'] += 1

    def _judge(self, entry: ProgressOp) -> SnapshotVerdict:
        pid = entry['player']
        course = self.players[pid]
        course.train_iteration = entry['iteration']
        course.version = max(course.version, entry['version'])
        # Agent steps (ML-Agents' unit for save and swap steps): the env steps of the player's games so far.
        agent_steps = entry.setdefault('agent_steps', course.env_steps)
        self.league.update_active_player(PlayerProgress(player_id=pid, train_iteration=entry['iteration'],
                                                        agent_steps=agent_steps))
        verdict = self.league.judge_snapshot(pid)
        summary = [verdict['snapshot'], verdict['reset']]
        if entry.setdefault('verdict', summary) != summary:
            raise RuntimeError(f'journal replay diverged: judge_snapshot({pid!r}) gave {summary}, the journal '
                               f'says {entry["verdict"]}')
        return verdict

    # ------------------------------------------------------------------------------ quarantined snapshots
    def draw_job(self, pid: str, dropped: Optional[Collection[str]] = None) -> JobInfo:
        """The league's next job for ``pid``, drawn again while an opponent is a quarantined snapshot; after
        :data:`REDRAWS` draws of those (a branch that only picks them), a game against itself instead."""
        avoid = self.dropped.keys() if dropped is None else dropped
        for _ in range(REDRAWS if avoid else 1):
            info = self.league.get_job_info(pid)
            if not self.seat_games.plays_any(info, avoid):
                return info
        return self.seat_games.stand_in(info)

    def quarantine(self, ref: str, why: str) -> None:
        """Stop drawing the snapshot stored under ``ref`` (its file is damaged): said in the log, counted as
        ``snapshots_quarantined`` (the ``run/dropped/snapshots_quarantined`` scalar, at once)."""
        if ref in self.dropped:
            return
        self.dropped[ref] = why
        self.counters['snapshots_quarantined'] += 1
        self.say(f'snapshot {ref!r} quarantined, the league draws it no more: {why}')
        if self.logger is not None:
            self.logger.scalars(dict(snapshots_quarantined=len(self.dropped)), self.env_steps, prefix='run/dropped/')

    def readable_eval_opponents(self, pid: Optional[str] = None) -> List[Tuple[str, str]]:
        """The evaluation opponents whose parameters can be read: a snapshot whose file is damaged is quarantined
        and left out, so no evaluation is recorded against the stand-in a worker would be served instead. In a league
        of roles, those of player ``pid``: the opponents that play another role than its own."""
        for _, ref in self.eval_opponents:
            if ref not in self.dropped and ref in self.store:  # stored parameters (a bot is not): read once
                try:
                    self.store.get(ref)
                except StateFileError:
                    pass  # noted in store.damaged
        for ref, why in list(self.store.damaged.items()):
            self.quarantine(ref, why)
        role = None if pid is None else self.role_of(pid)
        return [(oid, ref) for oid, ref in self.eval_opponents if ref not in self.dropped
                and (role is None or opponent_role(self.cfg, oid, ref) not in (None, role))]

    def _dropped_for(self, entry: Union[JobsOp, GamesOp, RankedGamesOp]) -> Set[str]:
        """The quarantined snapshots an operation sees. Recorded in the entry when it is first applied (so the
        journal holds them, and a replay draws and records exactly as the first time); damage the parameter store
        met since (a collector asked for a damaged snapshot) is quarantined first."""
        if 'dropped' in entry:
            for ref in entry['dropped']:
                self.quarantine(ref, 'quarantined before the restart (its file is damaged)')
            return set(entry['dropped'])
        for ref, why in list(self.store.damaged.items()):
            self.quarantine(ref, why)
        if self.dropped:
            entry['dropped'] = sorted(self.dropped)
        return set(self.dropped)

    def report_games(self, pid: str, results: Sequence[Tuple[str, str]], env_steps: int,
                     returns: Sequence[float] = (), chunk_id: str = '') -> GamesOp:
        """A chunk's finished games of two seats ``(opponent id, outcome)``, grouped per opponent, and its env
        steps."""
        entry = PairGames.entry(pid, results, env_steps, chunk_id)
        self.apply(entry)
        self.recent_returns.extend(returns)
        return entry

    def report_chunk(self, pid: str, chunk: Chunk) -> Union[GamesOp, RankedGamesOp]:
        """A chunk's finished games (outcomes of two seats, or rankings of three or more) and its env steps."""
        entry = self.seat_games.chunk_entry(pid, chunk)
        self.apply(entry)
        self.recent_returns.extend(chunk.episode_returns)
        return entry

    def progress(self, pid: str, iteration: int, version: int, params=None) -> SnapshotVerdict:
        """A learner's iteration: the league's snapshot / reset verdict (a snapshot's parameters are stored
        from ``params``), and its next evaluation queued when it is due."""
        verdict = self.apply(ProgressOp(op='progress', player=pid, iteration=int(iteration), version=int(version)))
        if verdict['snapshot'] and params is not None:
            self.store_snapshot(verdict, params, version)
        self.schedule_evaluation(pid)
        return verdict

    def store_snapshot(self, verdict: SnapshotVerdict, params, version: int) -> str:
        """Keep the parameters of the snapshot ``verdict`` took; returns the reference they are stored under."""
        historical = verdict['historical_player']
        if historical is None:
            raise RuntimeError(f'store_snapshot: the verdict on {verdict["player_id"]!r} took no snapshot')
        ref = stored_ref(historical['param_ref'], f'snapshot {historical["player_id"]!r}')
        self.store.put(ref, params, dict(self.cfg.policy), version)
        if self.exact is not None:
            self.exact.forget(ref)
        self.say(f'snapshot {historical["player_id"]} of {verdict["player_id"]} at iteration '
                 f'{self.players[verdict["player_id"]].train_iteration}')
        self.watch.snapshot(verdict)
        return ref

    # ------------------------------------------------------------------------------ evaluation
    def schedule_evaluation(self, pid: str) -> None:
        """Queue ``pid``'s periodic evaluation once its iteration reaches the next multiple of ``eval_every_iters``."""
        every, course = self.cfg.train.eval_every_iters, self.players[pid]
        iteration = course.train_iteration
        if every and iteration >= course.next_eval and self.phase == 'collect':
            course.next_eval = (iteration // every + 1) * every
            if not any(job['player_id'] == pid for job in self.pending):  # one pending evaluation per player
                self._queue_evaluation(pid, final=False)

    def _queue_evaluation(self, pid: str, final: bool) -> None:
        self._next_task_id += 1
        self.pending.append(EvaluationJob(task_id=self._next_task_id, player_id=pid, final=final))

    def take_pending(self) -> List[EvaluationJob]:
        """Every evaluation due now, in the order they fell due (for a caller that plays them itself)."""
        jobs, self.pending = list(self.pending), deque()
        return jobs

    def record_evaluation(self, pid: str, results: EvalResults, returns: Sequence[float] = (),
                          version: Optional[int] = None, journal: Optional[Callable[[LeagueOp], None]] = None,
                          at_env_steps: Optional[int] = None, at_iteration: Optional[int] = None) -> dict:
        """One player's evaluation: rated games to the league, the report kept and logged (at ``at_env_steps``
        and ``at_iteration``, the run's env steps and the player's iteration when the evaluated parameters
        were taken, if not now), the stop rule."""
        entry = self.seat_games.eval_entry(pid, results, self.rated)
        if entry is not None:
            self.apply(entry)
            if journal is not None:
                journal(entry)
        report, score, text = self.summarise(results, returns)
        self.last_eval[pid] = report
        self.players[pid].evaluated_version = self.players[pid].version if version is None else int(version)
        if self.logger is not None:
            for prefix, figures in self.kind.evaluation_class.scalar_groups(pid, report):
                self.logger.scalars(figures, self.env_steps if at_env_steps is None else at_env_steps, prefix=prefix)
        iteration = self.players[pid].train_iteration if at_iteration is None else at_iteration
        self.say(f'eval {pid} (iteration {iteration}): {text}')
        self.watch.evaluated(pid, report, at_env_steps)
        stop_value = self.cfg.env.stop_value
        if (stop_value is not None and pid == self.first and self.reached is None and score is not None
                and score >= stop_value):
            self.reached = (self.env_steps, self.wall_seconds)
            self.say(f'stop value {stop_value} reached by {pid} after {self.env_steps} env steps, '
                     f'{self.reached[1]:.1f} s')
            self.begin_drain('stop value reached')
        return report

    def note_evaluation_round(self, player_ids: Sequence[str], periodic: bool = True,
                              at: Optional[Tuple[int, float]] = None) -> Optional[dict]:
        """After the players in ``player_ids`` were evaluated together: the exact analysis, and for a
        periodic evaluation an entry in the run's history (the final one is the summary's), dated ``at``
        (env steps, seconds) when the evaluated parameters were taken, if not now."""
        if self.exact is not None:
            self.exact_report()
        if not periodic:
            return None
        env_steps, seconds = at if at is not None else (self.env_steps, round(self.wall_seconds, 2))
        entry = dict(env_steps=env_steps, seconds=seconds,
                     eval={pid: self.last_eval[pid] for pid in player_ids},
                     exact={k: v for k, v in self.last_exact.items() if k != 'meta_strategy'})
        self.history.append(entry)
        return entry

    # ------------------------------------------------------------------------------ the run's course
    def check_budget(self) -> None:
        if self.phase == 'collect' and self.env_steps >= self.cfg.train.max_env_steps:
            self.begin_drain(f'env-step budget of {self.cfg.train.max_env_steps} spent')

    def check_limits(self) -> None:
        """The env-step and wall-time budgets, on every tick: a resumed run may have spent its budget already,
        and then no chunk report comes to check it."""
        self.check_budget()
        self.check_time()

    def check_time(self) -> None:
        budget = self.cfg.train.max_wall_seconds
        if budget and self.phase == 'collect' and self.wall_seconds >= budget:
            self.begin_drain(f'time budget of {budget:.0f} s spent after {self.env_steps} env steps')

    def begin_drain(self, reason: str) -> None:
        """Stop collecting; learners train on what was sent to them; periodic evaluations are dropped."""
        if self.phase != 'collect':
            return
        self.phase = 'drain'
        self.stop_reason = reason
        self.pending = deque(job for job in self.pending if job['final'])
        self.say(f'{reason}: collection stops')

    def begin_final_evaluation(self) -> None:
        """Every learner is done: evaluate each player whose last evaluation is not of its final parameters."""
        if self.phase != 'drain':
            return
        self.phase = 'evaluate'
        for pid in self.player_ids:
            course = self.players[pid]
            if pid not in self.last_eval or course.evaluated_version != course.version:
                self._queue_evaluation(pid, final=True)

    def check_evaluated(self, running: int = 0) -> None:
        """The run is done once the final evaluation has nothing pending or ``running``."""
        if self.phase == 'evaluate' and not self.pending and not running:
            self.phase = 'done'

    # ------------------------------------------------------------------------------ exact analysis
    def use_exact_analysis(self, policy_of: Callable[[str], object]) -> None:
        """Exact exploitability (small zero-sum games) and the exact meta-game for the ``nash`` branch, in a game
        with roles the NashConv of the role pair, in a game of three or more seats the NashConv of the players, their
        meta-strategy and recent average (the ``nash`` branch then draws from the exact S-player meta-strategy);
        ``policy_of(ref)`` (with roles ``policy_of(ref, role)``) gives a
        player's or a snapshot's policy."""
        model_type = str((self.cfg.policy.get('model') or {}).get('type', ''))
        if model_type in MODEL_REGISTRY and getattr(MODEL_REGISTRY.get(model_type), 'recurrent', False):
            raise ConfigError(f'config key "battle.exact_analysis": "policy.model.type" {model_type!r} is recurrent, and '
                              f'the exact analysis reads a policy\'s move probabilities at each information state '
                              f'with no memory of the game before it; expected a feed-forward model (e.g. \'mlp\') '
                              f'or battle.exact_analysis=False')
        analysis = exact_analysis_of(ENV_REGISTRY.get(self.cfg.env.type), self.cfg.env)
        if analysis is None:
            expected = ('a small two-player zero-sum game (a matrix game or an OpenSpiel game such as kuhn_poker)'
                        if self.seat_games.seats == 2 else 'a game that does (OpenSpiel\'s poker games)')
            raise ConfigError(f'config key "battle.exact_analysis": env {self.cfg.env.type!r} offers no exact analysis; '
                              f'expected {expected}')
        if self.seat_games.seats > 2:  # NashConv of S-player profiles; the nash branch draws from their meta-strategy
            initial = [self.initial_ref(pid) for pid in self.player_ids]
            self.exact = MultiSeatLeagueExact(analysis, self.league, policy_of, initial_refs=initial,
                                              damaged=self.quarantine, dropped=self.dropped)
            self.exact_figures = NashConvFigures()
            self.league.set_meta_strategy_source(self.exact.meta_strategy)
            return
        if self.cfg.league.get('roles'):  # a pair of role policies (league/role_exact_analysis)
            self.exact = LeagueRoleAnalysis(analysis, self.league, policy_of, damaged=self.quarantine,
                                            dropped=self.dropped)
            self.exact_figures = RoleNashConvFigures()
            return
        self.exact = LeagueExactAnalysis(analysis, self.league, policy_of, damaged=self.quarantine, dropped=self.dropped)
        self.league.set_meta_game_source(self.exact.meta_game)

    def exact_report(self) -> dict:
        """Exploitability of each active player and of the Nash meta-strategy over every learnt player (in a game of
        three or more seats, NashConv: :mod:`~sparring.league.multiseat_exact`)."""
        if self.exact is None:
            raise RuntimeError('exact_report: no exact analysis in this run (battle.exact_analysis is off)')
        self.last_exact = self.exact.report(self.player_ids)
        if self.logger is not None:
            self.logger.scalars(self.exact_figures.scalars(self.last_exact), self.env_steps, prefix='exact/')
        self.watch.exact(self.last_exact)
        return self.last_exact

    # ------------------------------------------------------------------------------ persistence
    def course_state(self) -> dict:
        """The run's course, for a commander's state file (the league is saved beside it)."""
        by_field = {name: {pid: getattr(course, field) for pid, course in self.players.items()}
                    for name, field in COURSE_FIELDS.items()}
        return dict(env_steps=self.env_steps, **by_field, counters=dict(self.counters),
                    last_eval=self.last_eval, wall_seconds=self.wall_seconds, branch_games=self.watch.branch_state(),
                    dropped=self.dropped)

    def resume_course(self, players: Dict[str, Tuple[int, int, int]], last_eval: Dict[str, dict],
                      history: List[dict], branch_games: dict, evaluated_versions: Dict[str, Optional[int]],
                      wall_seconds: float) -> None:
        """Take a run up from a serial checkpoint: each player's ``(env steps, train iteration, version)`` (its
        next periodic evaluation follows from its iteration), the evaluations so far and the wall time spent."""
        every = self.cfg.train.eval_every_iters
        for pid, (env_steps, iteration, version) in players.items():
            course = self.players[pid]
            course.env_steps, course.train_iteration, course.version = env_steps, iteration, version
            if every:
                course.next_eval = (iteration // every + 1) * every
        self.env_steps = sum(course.env_steps for course in self.players.values())
        self.last_eval.update(last_eval)
        self.history.extend(history)
        self.watch.load_branch_state(branch_games)
        for pid, evaluated in evaluated_versions.items():
            self.players[pid].evaluated_version = evaluated
        self.resume_clock(wall_seconds)

    def load_course_state(self, state: dict) -> None:
        self.env_steps = int(state['env_steps'])
        for name, field in COURSE_FIELDS.items():
            for pid, value in state[name].items():
                if pid in self.players:
                    setattr(self.players[pid], field, value)
        self.counters.update(state['counters'])
        self.last_eval = state['last_eval']
        self.dropped.update(state['dropped'])
        self.watch.load_branch_state(state['branch_games'])
        self.resume_clock(state['wall_seconds'])
