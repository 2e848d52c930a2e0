"""A league run of a game of three or more seats in one process (serial mode), scored exactly where the game allows.

The serial pipeline hands a compiled config whose env is a game of S seats
(:mod:`sparring.worker.env.multiseat_api`) to :func:`run_multiseat`. Each round, every active player in turn
collects a chunk with a :class:`~sparring.worker.multiseat_collector.MultiSeatCollector` (each game's tuple of
opponents drawn by ``league.get_job_info``), the chunk's rankings go to ``league.finish_job``, its learner trains on
it and reports its iteration, and the league's snapshot / reset verdict is carried out (a snapshot freezes the
parameters in the run's parameter store, from which the policy pool plays it later).

With ``battle.exact_analysis`` (and an env that offers one, as OpenSpiel's games do), every
``train.eval_every_iters`` rounds the run measures the NashConv of each active player's network, of the
population's **meta-strategy** (a mixture of the newest :data:`META_WINDOW` snapshots and the live players, found
by multiplicative weights on their exact S-player meta-game: the counterpart of the two-seat leagues' Nash
meta-strategy, as S-player games have no cheap exact Nash solver) and of the **recent average** (the newest
:data:`AVERAGE_WINDOW` snapshots with equal weight: the average of the last iterates, which smooths the oscillation
a last iterate keeps in a game of three or more players).

The run stops at ``train.max_env_steps`` or ``train.max_wall_seconds``. Every ``train.checkpoint_every_iters``
rounds, at the end and on an interrupt it saves a checkpoint (the league, the learners, the counters, the NashConv
history, the RNGs); ``resume=True`` continues from the newest, its envs starting new games seeded by how far the
run got. Every ``train.eval_every_iters`` rounds the first player also plays ``env.n_evaluator_episodes`` games with
the league's reference players in the other seats (rated, as a two-seat run's evaluation games are). What it does
not do yet, unlike a two-seat league run: parallel mode.
"""
from __future__ import annotations

import os
import time
from collections import defaultdict
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from sparring.config.registry import ENV_REGISTRY, POLICY_REGISTRY
from sparring.config.schema import ConfigError
from sparring.framework.interrupts import raise_if_stopped, shielded, terminate_as_interrupt
from sparring.framework.run_setup import closing_report, reset_from_verdict
from sparring.framework.run_summary import RunSummary
from sparring.league.base_league import BaseLeague, build_league
from sparring.league.job_protocol import stored_ref
from sparring.worker.checkpoint import CheckpointManager
from sparring.worker.env.multiseat_api import is_multiseat_env, seat_layout
from sparring.worker.learner import Learner
from sparring.worker.logger import RunLogger, format_stats
from sparring.worker.multiseat_collector import MultiSeatCollector
from sparring.worker.policy_pool import ParamStore, PolicyPool
from sparring.worker.runtime import capture_rng, restore_rng, seed_everything, set_torch_threads
from sparring.worker.seeds import LEAGUE_EVAL_SEED_OFFSET, player_seed

INIT_REF = 'init'  # the parameters every player starts from (as the two-seat run's)
META_WINDOW = 32  # the newest snapshots the meta-strategy mixes (with the live players): its meta-game has K^S entries
AVERAGE_WINDOW = 8  # the newest snapshots the recent average mixes with equal weight
EVAL_STEPS = 8  # vector steps per chunk of an evaluation (it collects chunks until it has its games)


def check_seats(cfg, seats: int) -> None:
    """The league must seat as many players as the game has seats: a ConfigError naming both otherwise."""
    if cfg.league.seats != seats:
        raise ConfigError(f'config key "league.seats": {cfg.league.seats}, but env {cfg.env.type!r} '
                          f'({cfg.env.get("game", "")} {dict(cfg.env.get("game_params") or {})}) has {seats} seats; '
                          f'expected league.seats={seats}')


Ranking = Tuple[Sequence[str], Sequence[int], Optional[Sequence[int]]]  # player ids, ranks, teams (None: none)


def finish_jobs(league: BaseLeague, results: Sequence[Ranking]) -> int:
    """Finished games ``(player_ids, ranks, teams)`` into ``league``, one ``finish_job`` per tuple of players (and
    teams); returns how many games."""
    by_job: Dict[Tuple[Tuple[str, ...], Optional[Tuple[int, ...]]], List[List[int]]] = defaultdict(list)
    for player_ids, ranks, teams in results:
        by_job[tuple(player_ids), None if teams is None else tuple(teams)].append(list(ranks))
    for (player_ids, teams), rankings in by_job.items():
        job = dict(player_ids=list(player_ids), result=rankings)
        if teams is not None:
            job['teams'] = list(teams)
        league.finish_job(job)
    return len(results)


class MultiSeatRun:
    """The league, its players' learners and collectors, the policy pool and the exact analysis of one run."""

    def __init__(self, cfg, say: Callable[[str], None] = print, logger: Optional[RunLogger] = None,
                 clock: Callable[[], float] = time.perf_counter, state: Optional[dict] = None) -> None:
        self.cfg, self.say, self.logger, self.clock = cfg, say, logger, clock
        env_cls = ENV_REGISTRY.get(cfg.env.type)
        obs_space, act_space, seats = seat_layout(env_cls, cfg.env, cfg.seed)
        check_seats(cfg, seats)
        self.league: BaseLeague = build_league(cfg.league)
        self.player_ids = [p.player_id for p in self.league.active_players]
        self.store = ParamStore(os.path.join(cfg.exp_name, 'params'))
        self.pool = PolicyPool(self.store, obs_space, act_space, seed=cfg.seed, env_cfg=cfg.env)
        policy_cls = POLICY_REGISTRY.get(cfg.policy.type)
        budget = max(1, cfg.train.max_env_steps // len(self.player_ids))
        # A resumed run's envs start new games, seeded by how far the run got.
        seed = cfg.seed + (int(state['env_steps']) if state is not None else 0)
        self.learners: Dict[str, Learner] = {}
        self.collectors: Dict[str, MultiSeatCollector] = {}
        for index, pid in enumerate(self.player_ids):
            policy = policy_cls(cfg.policy, obs_space, act_space, seed=cfg.seed + index)
            if INIT_REF not in self.store:
                self.store.put(INIT_REF, policy.get_params(), dict(cfg.policy), 0)
            policy.set_params(self.store.get(INIT_REF)['params'], 0)
            self.pool.add_live(pid, policy)
            self.learners[pid] = Learner(policy, budget, battle=True)
            env = env_cls(cfg.env, cfg.env.collector_env_num, player_seed(seed, index))
            self.collectors[pid] = MultiSeatCollector(env, policy, cfg.policy.collect.n_steps, self._sampler(pid),
                                                      player_id=pid, train_own_seats=cfg.battle.train_both_sides)
        self.env_cls = env_cls
        self.last_eval: Dict[str, dict] = {}
        self.analysis = None
        if cfg.battle.exact_analysis:
            make = getattr(env_cls, 'exact_analysis', None)
            if make is None:
                raise ConfigError(f'config key "battle.exact_analysis": env {cfg.env.type!r} offers no exact '
                                  f'analysis; expected a game that does (OpenSpiel\'s poker games)')
            self.analysis = make(cfg.env)
        self._profiles: Dict[str, np.ndarray] = {}  # frozen snapshots' profiles, by parameter ref
        self.env_steps = 0
        self.rounds = 0
        self.games = 0
        self.history: List[dict] = []
        self.started = clock()
        if state is not None:
            self.load_state_dict(state)

    @property
    def wall_seconds(self) -> float:
        return self.clock() - self.started

    def _sampler(self, pid: str, eval_flag: bool = False):
        def sample(slot: int) -> Tuple[List[str], list]:
            job = self.league.get_job_info(pid, eval_flag=eval_flag)
            refs = [stored_ref(p['param_ref'], f'opponent {p["player_id"]!r}') for p in job['players'][1:]]
            return job['player_ids'], [self.pool.get(ref) for ref in refs]
        return sample

    # -- one round ----------------------------------------------------------------------------
    def train_round(self) -> Dict[str, dict]:
        """Every player collects, its games are recorded, it learns and hears the league's verdict once."""
        stats = {}
        for pid in self.player_ids:
            chunk = self.collectors[pid].collect()
            self.record_games(chunk.rankings)
            self.env_steps += int(chunk.env_steps or 0)
            learner = self.learners[pid]
            trained = learner.train(chunk)
            stats[pid] = dict(trained or {}, games=len(chunk.rankings))
            self.league.update_active_player(dict(player_id=pid, train_iteration=learner.train_iter))
            verdict = self.league.judge_snapshot(pid)
            policy = learner.policy
            if verdict['snapshot'] and verdict['historical_player'] is not None:
                ref = stored_ref(verdict['historical_player']['param_ref'], 'the snapshot')
                self.store.put(ref, policy.get_params(), dict(self.cfg.policy), policy.version)
            reset_from_verdict(self.store, policy, verdict, pid)
        self.rounds += 1
        return stats

    def record_games(self, results: Sequence[Ranking]) -> None:
        """A chunk's finished games (see :func:`finish_jobs`)."""
        self.games += finish_jobs(self.league, results)

    # -- evaluation ---------------------------------------------------------------------------
    def evaluate(self, pid: str) -> dict:
        """``env.n_evaluator_episodes`` games of ``pid``'s network with the league's reference players in the other
        seats (in turn, its own seat going round; the same seeds at every evaluation), recorded in the league as
        rated games. Its report: the mean chips (returns) of its seat, and by reference player how often it finished
        ahead of it (a tie counts half). Empty when the league has no reference players."""
        if not self.league.reference_players:
            return {}
        cfg = self.cfg
        env = self.env_cls(cfg.env, cfg.env.evaluator_env_num, cfg.seed + LEAGUE_EVAL_SEED_OFFSET)
        collector = MultiSeatCollector(env, self.learners[pid].policy, EVAL_STEPS, self._sampler(pid, eval_flag=True),
                                       player_id=pid, train_own_seats=False)
        games: List[Ranking] = []
        returns: List[float] = []
        try:
            while len(games) < cfg.env.n_evaluator_episodes:
                chunk = collector.collect()
                games += chunk.rankings
                returns += chunk.episode_returns
        finally:
            collector.close()
        games, returns = games[:cfg.env.n_evaluator_episodes], returns[:cfg.env.n_evaluator_episodes]
        finish_jobs(self.league, games)
        ahead: Dict[str, List[float]] = defaultdict(list)
        for player_ids, ranks, _ in games:
            for opponent, rank in zip(player_ids[1:], ranks[1:]):
                ahead[opponent].append(1.0 if ranks[0] < rank else 0.5 if ranks[0] == rank else 0.0)
        chips = float(np.mean(returns))
        rates = {opponent: float(np.mean(scores)) for opponent, scores in ahead.items()}
        self.last_eval[pid] = report = dict(chips=chips, games=len(games), ahead=rates)
        if self.logger is not None:
            self.logger.scalars(dict(chips=chips, **{f'ahead_of/{o}': r for o, r in rates.items()}), self.env_steps,
                                prefix=f'eval/{pid}/')
        return report

    # -- exact analysis -----------------------------------------------------------------------
    def exact_report(self) -> dict:
        """NashConv of each active player's network, of the population's meta-strategy and of its recent average
        (see the module docstring)."""
        if self.analysis is None:
            raise RuntimeError('exact_report: battle.exact_analysis is off in this run')
        live = {pid: self.analysis.profile(self.learners[pid].policy) for pid in self.player_ids}
        nash_conv = {pid: self.analysis.nash_conv(profile) for pid, profile in live.items()}
        snapshots = [stored_ref(p.param_ref, p.player_id) for p in self.league.historical_players
                     if p.param_ref != INIT_REF]
        for ref in snapshots:
            if ref not in self._profiles:
                self._profiles[ref] = self.analysis.profile(self.pool.get(ref))
        recent = [self._profiles[ref] for ref in snapshots[-AVERAGE_WINDOW:]]
        average = self.analysis.population_nash_conv(recent, [1.0] * len(recent)) if recent \
            else nash_conv[self.player_ids[0]]
        window = max(0, min(META_WINDOW, self.analysis.meta_capacity() - len(live)))  # Leduc's meta-game is huge
        candidates = [self._profiles[ref] for ref in snapshots[len(snapshots) - window:]] + list(live.values())
        candidates = candidates[max(0, len(candidates) - self.analysis.meta_capacity()):]
        weights = self.analysis.meta_strategy(candidates)
        meta = self.analysis.population_nash_conv(candidates, weights)
        report = dict(env_steps=self.env_steps, seconds=self.wall_seconds, rounds=self.rounds, nash_conv=nash_conv,
                      meta_nash_conv=meta, average_nash_conv=average, snapshots=len(snapshots),
                      meta_support=int((weights > 1e-3).sum()))
        self.history.append(report)
        if self.logger is not None:
            self.logger.scalars(dict(meta_nash_conv=meta, average_nash_conv=average,
                                     **{f'nash_conv/{pid}': v for pid, v in nash_conv.items()}),
                                self.env_steps, prefix='exact/')
        return report

    # -- checkpoints --------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The checkpoint: the league, the learners, the collectors' counters, the course and the RNGs."""
        return dict(league_state=self.league.state_dict(),
                    learners={pid: learner.state_dict() for pid, learner in self.learners.items()},
                    collectors={pid: collector.state_dict() for pid, collector in self.collectors.items()},
                    env_steps=self.env_steps, rounds=self.rounds, games=self.games, history=self.history,
                    wall_seconds=self.wall_seconds, rng=capture_rng())

    def load_state_dict(self, state: dict) -> None:
        self.league.load_state_dict(state['league_state'])
        for pid in self.player_ids:
            self.learners[pid].load_state_dict(state['learners'][pid])
            self.collectors[pid].load_state_dict(state['collectors'][pid])
        self.env_steps, self.rounds, self.games = int(state['env_steps']), int(state['rounds']), int(state['games'])
        self.history = list(state['history'])
        self.started = self.clock() - float(state['wall_seconds'])
        restore_rng(state['rng'])

    def done(self) -> bool:
        train = self.cfg.train
        return self.env_steps >= train.max_env_steps or bool(train.max_wall_seconds and
                                                             self.wall_seconds >= train.max_wall_seconds)

    def close(self) -> None:
        for collector in self.collectors.values():
            collector.close()


def is_multiseat_run(cfg) -> bool:
    """Whether a compiled config's env is a game of S seats (:mod:`sparring.worker.env.multiseat_api`)."""
    return cfg.env.type in ENV_REGISTRY and is_multiseat_env(ENV_REGISTRY.get(cfg.env.type))


def multiseat_pipeline(cfg, resume: bool = False) -> RunSummary:
    """The serial pipeline of a compiled config whose env has S seats: :func:`run_multiseat` with the run's log
    (lines, progress and TensorBoard under the experiment directory)."""
    set_torch_threads(cfg.torch_threads)
    seed_everything(cfg.seed)
    with RunLogger(cfg.exp_name, cfg.train.max_env_steps, cfg.train.tensorboard, cfg.train.progress_bar) as log:
        with terminate_as_interrupt():
            return run_multiseat(cfg, logger=log, say=log.line, resume=resume)


def run_multiseat(cfg, logger: Optional[RunLogger] = None, say: Callable[[str], None] = print,
                  resume: bool = False) -> RunSummary:
    """Train the league of a compiled config whose env has three or more seats (``resume``: from the newest
    checkpoint); a summary (env steps, seconds, rounds, games, the NashConv history, the league table and the last
    checkpoint)."""
    ckpt = CheckpointManager(cfg.exp_name)
    state = ckpt.load_latest() if resume else None
    run = MultiSeatRun(cfg, say=say, logger=logger, state=state)
    if state is not None:
        say(f'resumed from {ckpt.resumed_from} at {run.env_steps} env steps, round {run.rounds}')
    every, save_every = cfg.train.eval_every_iters, cfg.train.checkpoint_every_iters
    try:
        try:
            _rounds(run, every, save_every, ckpt, say, logger)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: keep what was done, then stop
            with shielded():
                path = ckpt.save(run.state_dict(), run.rounds)
            say(f'interrupted after {run.env_steps} env steps: saved {path}; resume=True (--resume) continues')
            raise
        if run.analysis is not None and (not run.history or run.history[-1]['env_steps'] != run.env_steps):
            run.exact_report()
        path = ckpt.save(run.state_dict(), run.rounds)
        pictures = closing_report(run.league, {}, cfg.exp_name, say)  # league state, report page, pictures, table
        table = run.league.table()
        return RunSummary(exp_dir=cfg.exp_name, env_steps=run.env_steps, wall_seconds=run.wall_seconds,
                          reached_stop_value=False, stop_env_steps=None, stop_seconds=None, checkpoint=path,
                          rounds=run.rounds, games=run.games, history=run.history,
                          exact=run.history[-1] if run.history else {}, league_table=table, pictures=pictures,
                          eval=run.last_eval)
    finally:
        run.close()


def _rounds(run: MultiSeatRun, every: int, save_every: int, ckpt: CheckpointManager, say: Callable[[str], None],
            logger: Optional[RunLogger]) -> None:
    """Rounds until the budget is spent: the log line, the periodic NashConv and checkpoints."""
    while not run.done():
        raise_if_stopped()
        stats = run.train_round()
        first = stats[run.player_ids[0]]
        if logger is not None:
            for pid, figures in stats.items():
                logger.scalars(figures, run.env_steps, prefix=f'train/{pid}/')
            logger.progress(run.env_steps)
        line = dict(round=run.rounds, steps=run.env_steps, games=run.games,
                    historical=len(run.league.historical_players), kl=first.get('approx_kl'))
        if every and run.rounds % every == 0 and run.league.reference_players:
            line.update(eval_chips=run.evaluate(run.player_ids[0]).get('chips'))
        if run.analysis is not None and every and run.rounds % every == 0:
            report = run.exact_report()
            line.update(nash_conv=report['nash_conv'][run.player_ids[0]], meta_nash_conv=report['meta_nash_conv'])
        say(format_stats(line))
        if save_every and run.rounds % save_every == 0:
            ckpt.save(run.state_dict(), run.rounds)
