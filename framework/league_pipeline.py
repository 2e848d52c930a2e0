"""The serial league pipeline: a population of players learning by playing each other.

One process runs the whole loop (the parallel mode wires the same pieces over ZeroMQ). Each
round, every active player in turn:

1. collects a chunk with its :class:`BattleCollector`; each env slot's opponent comes from
   ``league.get_job_info`` and is drawn anew for every game;
2. reports the finished games (``finish_job``), once per game;
3. learns from the chunk with its own :class:`Learner` and reports its iteration
   (``update_active_player``);
4. asks ``judge_snapshot``: a snapshot freezes a copy of its parameters in the parameter store;
   a reset reloads the parameters the league names (e.g. the initial ones).

Every ``train.eval_every_iters`` rounds each active player plays the reference players (bots)
and the results update the ratings. The league table, ratings and payoff heatmap are logged,
checkpoints cover learners *and* league state, and ``resume=True`` continues from them.
"""
from __future__ import annotations

import os
import time
from collections import defaultdict
from typing import Callable, Dict, List, Optional, Tuple

from sparring.config import save_config
from sparring.config.schema import ConfigError
from sparring.framework.checkpoint import CheckpointManager
from sparring.framework.horizon import log_horizon
from sparring.framework.logger import RunLogger, format_stats
from sparring.config.registry import ENV_REGISTRY, LEAGUE_REGISTRY, POLICY_REGISTRY
from sparring.framework.runtime import capture_rng, restore_rng
from sparring.framework.serial import out_of_time
from sparring.worker.battle_collector import BattleCollector
from sparring.worker.battle_evaluator import BattleEvaluator
from sparring.worker.env.battle import make_battle_env
from sparring.league.exact_analysis import ProfileCache, exact_analysis_of
from sparring.worker.learner import Learner
from sparring.worker.policy_pool import BOT_PREFIX, ParamStore, PolicyPool

INIT_REF = 'init'
LEAGUE_STATE_FILE = 'league_state.npz'


def complete_league_config(cfg) -> bool:
    """Fill in what a battle config may leave out; True if anything changed.

    No league section: one naive self-play player. No reference players: the env's random bot,
    which anchors the ratings. No evaluation opponents: the env's other reference bots.
    """
    changed = False
    if cfg.league is None:
        from sparring.config import compile_section
        cfg.league = compile_section('league', dict(type='one_vs_one'))
        changed = True
    bots = list(getattr(ENV_REGISTRY.get(cfg.env.type), 'reference_bots', ('random',)))
    if not cfg.league.reference_players:
        # The random bot anchors the rating scale: a fixed point every run shares.
        anchor = 'random' if 'random' in bots else bots[0]
        cfg.league.reference_players = [dict(player_id=anchor, param_ref=BOT_PREFIX + anchor, model={}, elo=None,
                                             trueskill=None, anchor=True)]
        changed = True
    if not cfg.battle.eval_opponents:
        # The game's other bots are evaluation opponents too (reported, not rated).
        anchors = {r['player_id'] for r in cfg.league.reference_players}
        cfg.battle.eval_opponents = [BOT_PREFIX + b for b in bots if b not in anchors]
        changed = changed or bool(cfg.battle.eval_opponents)
    return changed


class LeagueRun:
    """The league, its players' learners and collectors, the parameter store and the evaluator."""

    def __init__(self, cfg, state: Optional[dict] = None) -> None:
        self.cfg = cfg
        self.exp_dir = cfg.exp_name
        self.league = LEAGUE_REGISTRY.get(cfg.league.type)(cfg.league)
        probe = make_battle_env(cfg.env, 1, cfg.seed)
        obs_space, act_space = probe.observation_space, probe.action_space
        probe.close()
        self.store = ParamStore(os.path.join(self.exp_dir, 'params'))
        self.pool = PolicyPool(self.store, obs_space, act_space, seed=cfg.seed)
        self.player_ids = [p.player_id for p in self.league.active_players]
        per_player_budget = max(1, cfg.train.max_env_steps // max(len(self.player_ids), 1))
        policy_cls = POLICY_REGISTRY.get(cfg.policy.type)
        self.learners: Dict[str, Learner] = {}
        self.collectors: Dict[str, BattleCollector] = {}
        for index, pid in enumerate(self.player_ids):
            policy = policy_cls(cfg.policy, obs_space, act_space, seed=cfg.seed + index)
            if index == 0 and INIT_REF not in self.store:
                self.store.put(INIT_REF, policy.get_params(), dict(cfg.policy), policy.version)
            # Every player starts from the same initial parameters, which resets return to.
            policy.set_params(self.store.get(INIT_REF)['params'], 0)
            self.pool.add_live(pid, policy)
            self.learners[pid] = Learner(policy, per_player_budget)
            env = make_battle_env(cfg.env, cfg.env.collector_env_num, cfg.seed + 7919 * (index + 1))
            self.collectors[pid] = BattleCollector(env, policy, cfg.policy.collect.n_steps,
                                                   self._opponent_sampler(pid), player_id=pid,
                                                   train_both_sides=cfg.battle.train_both_sides)
        self.evaluator = BattleEvaluator(
            lambda: make_battle_env(cfg.env, cfg.env.evaluator_env_num, cfg.seed + 104_729),
            cfg.env.n_evaluator_episodes, deterministic=cfg.battle.eval_deterministic)
        self.analysis = None
        self.last_exact: dict = {}
        if cfg.battle.exact_analysis:
            self._use_exact_analysis()
        self.rounds = 0
        self.wall_seconds = 0.0
        self.last_eval: Dict[str, Dict[str, dict]] = {}
        self.history: List[dict] = []  # one entry per periodic evaluation: when, and what it found
        if state is not None:
            self._load(state)

    def _use_exact_analysis(self) -> None:
        analysis = exact_analysis_of(ENV_REGISTRY.get(self.cfg.env.type), self.cfg.env)
        if analysis is None:
            raise ConfigError(f'config key "battle.exact_analysis": env {self.cfg.env.type!r} offers no exact analysis; '
                              f'expected a small two-player zero-sum game (a matrix game or an OpenSpiel game such '
                              f'as kuhn_poker)')
        self.analysis = analysis
        self.profiles = ProfileCache(analysis)
        self._frozen_meta_game = None  # (ids, matrix) of the last all-frozen group asked for
        self.league.set_meta_game_source(self._exact_meta_game)

    def _exact_meta_game(self, player_ids: List[str]):
        # The nash branch asks once per game; a group of snapshots only changes when one is added,
        # so its matrix is kept rather than recomputed on every job.
        ids = tuple(player_ids)
        frozen = all(self.league.get_player(pid).kind != 'active' for pid in ids)
        if frozen and self._frozen_meta_game is not None and self._frozen_meta_game[0] == ids:
            return self._frozen_meta_game[1]
        matrix = self.analysis.meta_game(self._profiles_of(ids))
        if frozen:
            self._frozen_meta_game = (ids, matrix)
        return matrix

    def _profiles_of(self, player_ids) -> list:
        profiles = []
        for pid in player_ids:
            player = self.league.get_player(pid)
            frozen = player.kind != 'active'
            ref = player.param_ref if frozen else pid
            profiles.append(self.profiles.profile(ref, self.pool.get, frozen))
        return profiles

    def exact_report(self) -> dict:
        """Exploitability of each active player and of the Nash meta-strategy over every learnt player."""
        ids = [p.player_id for p in self.league.active_players + self.league.historical_players]
        report = self.analysis.report(dict(zip(ids, self._profiles_of(ids))), self.player_ids)
        self.last_exact = report
        return report

    # -- the loop -----------------------------------------------------------------------------
    def _opponent_sampler(self, pid: str):
        def sample(slot: int):
            job = self.league.get_job_info(pid)
            away = job['players'][1]
            return away['player_id'], self.pool.get(away['param_ref'])
        return sample

    @property
    def env_steps(self) -> int:
        return sum(c.env_steps for c in self.collectors.values())

    def train_round(self) -> Dict[str, dict]:
        stats = {}
        for pid in self.player_ids:
            chunk = self.collectors[pid].collect()
            self._report_games(pid, chunk.results)
            learner = self.learners[pid]
            stats[pid] = learner.train(chunk)
            stats[pid]['games'] = len(chunk.results)
            self.league.update_active_player(dict(player_id=pid, train_iteration=learner.train_iter))
            self._judge(pid)
        self.rounds += 1
        return stats

    def _report_games(self, pid: str, results: List[tuple]) -> None:
        by_opponent = defaultdict(list)
        for opponent_id, outcome in results:
            by_opponent[opponent_id].append(outcome)
        for opponent_id, outcomes in by_opponent.items():
            self.league.finish_job(dict(player_ids=[pid, opponent_id], result=outcomes))

    def _judge(self, pid: str) -> None:
        verdict = self.league.judge_snapshot(pid)
        policy = self.learners[pid].policy
        if verdict['snapshot']:
            ref = verdict['historical_player']['param_ref']
            self.store.put(ref, policy.get_params(), dict(self.cfg.policy), policy.version)
            self.pool.forget(ref)
            if self.analysis is not None:
                self.profiles.forget(ref)
                self._frozen_meta_game = None
        if verdict['reset']:
            # Keep counting versions upward: staleness must stay meaningful across a reset.
            policy.set_params(self.store.get(verdict['reset_param_ref'])['params'], policy.version)
            policy.reset_optimizer()

    def evaluate(self) -> Dict[str, Dict[str, dict]]:
        """Every active player against every reference player (and extra evaluation opponents)."""
        opponents = evaluation_opponents(self.league, self.cfg)
        rated = {p.player_id for p in self.league.reference_players}
        report = {}
        for pid in self.player_ids:
            policy = self.learners[pid].policy
            results = self.evaluator.evaluate(policy, [(oid, self.pool.get(ref)) for oid, ref in opponents])
            report[pid] = {}
            for r in results:
                if r.opponent_id in rated:
                    self.league.record_eval_result(pid, r.opponent_id, r.outcomes)
                report[pid][r.opponent_id] = r.summary()
        self.last_eval = report
        if self.analysis is not None:
            self.exact_report()
        return report

    # -- persistence --------------------------------------------------------------------------
    def state_dict(self) -> dict:
        league_path = os.path.join(self.exp_dir, LEAGUE_STATE_FILE)
        self.league.save(league_path)
        return dict(learners={pid: l.state_dict() for pid, l in self.learners.items()},
                    collectors={pid: c.state_dict() for pid, c in self.collectors.items()},
                    rounds=self.rounds, wall_seconds=self.wall_seconds, last_eval=self.last_eval, history=self.history,
                    league_state=self.league.state_dict(), rng=capture_rng())

    def _load(self, state: dict) -> None:
        self.league.load_state_dict(state['league_state'])
        for pid in self.player_ids:
            self.learners[pid].load_state_dict(state['learners'][pid])
            self.collectors[pid].load_state_dict(state['collectors'][pid])
        self.rounds = int(state['rounds'])
        self.wall_seconds = float(state['wall_seconds'])
        self.last_eval = state.get('last_eval', {})
        self.history = list(state.get('history', []))
        restore_rng(state['rng'])

    def close(self) -> None:
        for collector in self.collectors.values():
            collector.arena.env.close()


def league_pipeline(cfg, resume: bool = False) -> dict:
    """Run a compiled battle config (see :func:`sparring.framework.serial_pipeline`)."""
    if complete_league_config(cfg) and not resume:
        save_config(cfg, cfg.exp_name)
    ckpt = CheckpointManager(cfg.exp_name)
    state = ckpt.load_latest() if resume else None
    run = LeagueRun(cfg, state)
    try:
        with RunLogger(cfg.exp_name, cfg.train.max_env_steps, cfg.train.tensorboard, cfg.train.progress_bar,
                       initial_env_steps=run.env_steps) as log:
            log_horizon(log, cfg)
            return _loop(cfg, run, ckpt, log)
    finally:
        run.close()


def _loop(cfg, run: LeagueRun, ckpt: CheckpointManager, log: RunLogger) -> dict:
    train = cfg.train
    started = time.perf_counter() - run.wall_seconds
    first = run.player_ids[0]
    reached = None

    def save() -> str:
        run.wall_seconds = time.perf_counter() - started
        return ckpt.save(run.state_dict(), run.rounds)

    while run.env_steps < train.max_env_steps:
        stats = run.train_round()
        steps = run.env_steps
        elapsed = time.perf_counter() - started
        for pid, s in stats.items():
            log.scalars(s, steps, prefix=f'train/{pid}/')
        log.progress(steps)
        line = dict(round=run.rounds, steps=steps, sps=int(steps / max(elapsed, 1e-9)),
                    historical=len(run.league.historical_players),
                    games=sum(s['games'] for s in stats.values()),
                    kl=_mean_stat(stats, 'approx_kl'), eps=_mean_stat(stats, 'epsilon'))
        if train.eval_every_iters and run.rounds % train.eval_every_iters == 0:
            report = run.evaluate()
            for pid, per_opponent in report.items():
                for oid, summary in per_opponent.items():
                    log.scalars(summary, steps, prefix=f'eval/{pid}/vs_{oid}/')
            line['eval'] = ' '.join(f'{oid}:{s["win"]:.2f}/{s["draw"]:.2f}' for oid, s in report[first].items())
            run.history.append(dict(env_steps=steps, seconds=round(elapsed, 2), eval=report,
                                    exact={k: v for k, v in run.last_exact.items() if k != 'meta_strategy'}))
            if run.last_exact:
                exact = run.last_exact
                line.update(expl=exact['exploitability'][first], meta_expl=exact['meta_exploitability'])
                log.scalars(dict(meta_exploitability=exact['meta_exploitability'],
                                 **{f'exploitability/{pid}': e for pid, e in exact['exploitability'].items()}),
                            steps, prefix='exact/')
            if cfg.env.stop_value is not None and min_score(report[first]) >= cfg.env.stop_value:
                reached = (steps, time.perf_counter() - started)
        log.line(format_stats(line))
        if train.checkpoint_every_iters and run.rounds % train.checkpoint_every_iters == 0:
            save()
        if reached:
            log.line(f'stop value {cfg.env.stop_value} reached by {first} after {steps} env steps')
            break
        if out_of_time(train, started):
            log.line(f'time budget of {train.max_wall_seconds:.0f} s spent after {steps} env steps')
            break
    if not run.last_eval or train.eval_every_iters == 0 or run.rounds % train.eval_every_iters:
        run.evaluate()
    path = save()
    pictures = closing_report(run.league, run.last_eval, cfg.exp_name, log.line)
    log.line(f'checkpoint: {path}')
    if run.last_exact:
        log.line(f'exact: exploitability {run.last_exact["exploitability"]}, population meta-strategy '
                 f'{run.last_exact["meta_exploitability"]:.4f}')
    return dict(exp_dir=cfg.exp_name, env_steps=run.env_steps, rounds=run.rounds, exact=run.last_exact,
                history=run.history,
                wall_seconds=time.perf_counter() - started, eval=run.last_eval,
                reached_stop_value=reached is not None, stop_env_steps=reached[0] if reached else None,
                stop_seconds=reached[1] if reached else None, pictures=pictures, checkpoint=path,
                league_table=run.league.table())


def _mean_stat(stats: Dict[str, dict], key: str) -> Optional[float]:
    """The players' mean of one training figure, None when the policy does not report it."""
    values = [s[key] for s in stats.values() if key in s]
    return sum(values) / len(values) if values else None


def min_score(per_opponent: Dict[str, dict]) -> float:
    """The worst score (wins plus half the draws) over an evaluation's opponents."""
    return min(s['win'] + 0.5 * s['draw'] for s in per_opponent.values())



def evaluation_opponents(league, cfg) -> List[Tuple[str, str]]:
    """``(opponent_id, param_ref)`` of every evaluation opponent: the league's reference players,
    then the config's extra ``battle.eval_opponents`` (shared by the serial and parallel modes)."""
    opponents = [(p['player_id'], p['param_ref']) for p in league.eval_opponents()]
    opponents += [(ref[len(BOT_PREFIX):] if ref.startswith(BOT_PREFIX) else ref, ref)
                  for ref in cfg.battle.eval_opponents]
    return opponents


def closing_report(league, last_eval: Dict[str, Dict[str, dict]], exp_dir: str, line: Callable[[str], None]) -> List[str]:
    """Draw the payoff and rating pictures, then print the league table, the last evaluation and
    the pictures' paths; returns the pictures (none without matplotlib)."""
    try:
        pictures = [league.plot_payoff(os.path.join(exp_dir, 'payoff.png')),
                    league.plot_ratings(os.path.join(exp_dir, 'ratings.png'))]
    except ImportError as err:  # matplotlib is an optional extra
        line(f'no pictures: {err}')
        pictures = []
    line('league table:\n' + league.table())
    for pid, per_opponent in last_eval.items():
        line(f'{pid} vs ' + ', '.join(f'{oid}: win {s["win"]:.1%} draw {s["draw"]:.1%} loss {s["loss"]:.1%}'
                                      for oid, s in per_opponent.items()))
    for picture in pictures:
        line(f'picture: {picture}')
    return pictures
