"""``sparring eval``: a trained player against chosen opponents, with error bars.

An opponent is named as

* a bot reference, ``bot:random`` or ``bot:connect_four_mcts?num_simulations=1000``;
* a player of another run, ``RUN2:player_id`` (any player of that run's league, snapshots too);
* a player or snapshot of the same run, by its id.

The games are played as the league's own evaluation plays them (:class:`BattleEvaluator`: the home
seat alternates game by game in every env slot), on the same seeds by default: with the run's seed,
the league's evaluation env seed and bot seeds, ``eval`` of a run's final player reproduces the run's
final evaluation. Greedy play unless ``sampled``.

Each opponent's result carries win / draw / loss rates with their standard errors, the score (wins
plus half the draws) and the Elo difference it implies, with a 95 % interval from the score's
standard error (infinite where the score's interval reaches 0 or 1), and how many distinct games were
played: greedy players on a game without chance repeat the same few games, and a standard error over
100 copies of one game measures nothing (the report says so).

A single-agent run is evaluated by its episode returns (:func:`evaluate_returns`): greedy and sampled
play, each over the same episodes' seeds, with the mean's standard error.
"""
from __future__ import annotations

import math
import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from sparring.config.registry import BOT_REGISTRY
from sparring.config.schema import ConfigError
from sparring.framework.player_loader import TrainedRun, is_bot
from sparring.policy.base import Policy
from sparring.policy.bot import parse_bot_ref
from sparring.worker.battle_evaluator import BattleEvaluator
from sparring.worker.policy_pool import BOT_PREFIX
from sparring.worker.env.battle import make_battle_env
from sparring.worker.env.gym_env import evaluator_env_config
from sparring.worker.env.manager import make_env_manager
from sparring.worker.evaluator import Evaluator
from sparring.worker.seeds import LEAGUE_EVAL_SEED_OFFSET, SINGLE_AGENT_EVAL_SEED_OFFSET

Z_95 = 1.959963984540054  # two-sided 95 % quantile of the normal distribution


def outcome_statistics(outcomes: Sequence[str]) -> dict:
    """Rates, standard errors, score and Elo difference (with a 95 % interval) of a list of outcomes."""
    n = len(outcomes)
    if n == 0:
        raise ValueError('outcome_statistics: no games')
    stats: Dict[str, float] = dict(games=n)
    for name in ('win', 'draw', 'loss'):
        p = outcomes.count(name) / n
        stats[name] = p
        stats[f'{name}_se'] = math.sqrt(p * (1.0 - p) / n)
    score = stats['win'] + 0.5 * stats['draw']
    # The score of one game is 1, 1/2 or 0: its variance from the three rates.
    variance = stats['win'] * (1 - score) ** 2 + stats['draw'] * (0.5 - score) ** 2 + stats['loss'] * score ** 2
    score_se = math.sqrt(variance / n)
    stats.update(score=score, score_se=score_se, elo=elo_difference(score),
                 elo_low=elo_difference(score - Z_95 * score_se), elo_high=elo_difference(score + Z_95 * score_se))
    return stats


def elo_difference(score: float) -> float:
    """The Elo difference at which the expected score is ``score`` (+-inf at 1 and 0)."""
    if score >= 1.0:
        return math.inf
    if score <= 0.0:
        return -math.inf
    return 400.0 * math.log10(score / (1.0 - score))


class Opponents:
    """Opponent names resolved to ``(label, policy)`` against one run's player; in a game whose seats have roles,
    against a player of ``role``: a bot plays its own role (a bot of any role, the other one), and every opponent
    must play another role than the player's."""

    def __init__(self, run: TrainedRun, seed: int, role: Optional[str] = None) -> None:
        self.run = run
        self.seed = seed
        self.role = role
        self._others: Dict[str, TrainedRun] = {}

    def resolve(self, name: str):
        label, policy = self._resolve(name)
        if self.role is not None and policy.role == self.role:
            raise ConfigError(f'eval: opponent {name!r} plays the role {self.role!r}, as the player does; expected an '
                              f'opponent of another role ({", ".join(r for r in self.run.roles or [] if r != self.role)})')
        return label, policy

    def _resolve(self, name: str):
        if is_bot(name):
            return name, self.run.pool(self.seed, self._bot_role(name)).get(name)
        run_dir, sep, pid = name.rpartition(':')
        if sep and os.path.isdir(run_dir):
            other = self._others.get(run_dir) or self._others.setdefault(
                run_dir, TrainedRun(run_dir, self.run.trust_code))
            self._check_compatible(other, name, other.role_of(other.resolve(pid)) if other.league else None)
            return name, other.policy(pid, seed=self.seed)
        if self.run.league is None or name not in self.run.player_ids:
            raise ConfigError(f'eval: opponent {name!r} is neither a bot reference (bot:<name>), a run\'s player '
                              f'(RUN_DIR:player_id, with RUN_DIR an experiment directory) nor a player or snapshot '
                              f'of {self.run.run_dir}')
        return name, self.run.policy(name, seed=self.seed)

    def _bot_role(self, ref: str) -> Optional[str]:
        """The role a bot plays here: its own, or (a bot of any role) the one role other than the player's."""
        if self.role is None:
            return None
        plays = getattr(BOT_REGISTRY.get(parse_bot_ref(ref[len(BOT_PREFIX):])[0]), 'roles', None)
        others = [r for r in (self.run.roles or []) if r != self.role]
        return plays[0] if plays and len(plays) == 1 else others[0]

    def _check_compatible(self, other: TrainedRun, name: str, role: Optional[str] = None) -> None:
        mine, theirs = self.run.spaces(role), other.spaces(role)
        if self.run.cfg.env.type != other.cfg.env.type or mine != theirs:
            raise ConfigError(f'eval: opponent {name!r} was trained on env {other.cfg.env.type!r} with spaces '
                              f'{theirs}; this run\'s player plays {self.run.cfg.env.type!r} with {mine}')


def evaluate_player(run_dir: str, against: Sequence[str], player: Optional[str] = None,
                    snapshot: Optional[str] = None, games: Optional[int] = None, sampled: bool = False,
                    seed: Optional[int] = None, search: Optional[int] = None, trust_code: bool = False) -> dict:
    """Play a run's player against each opponent in ``against``; returns the report (JSON-ready but for
    infinite Elo bounds). ``games`` defaults to the run's ``env.n_evaluator_episodes``, ``seed`` to the run's.
    ``search``: the player chooses its moves by a tree search of that many simulations guided by its
    policy and value (line games; :mod:`sparring.dizoo.board_games.guided_search`), not by the network alone."""
    run = TrainedRun(run_dir, trust_code)
    if not run.kind.is_league:
        if against:
            raise ConfigError(f'eval: {run_dir} trained a single agent on {run.cfg.env.type!r}, which has no '
                              f'opponents; expected no --against (its episode returns are reported)')
        if search is not None:
            raise ConfigError('eval: --search chooses moves in two-player line games; expected no --search for a '
                              'single-agent run')
        return evaluate_returns(run, games=games, sampled_only=sampled, seed=seed)
    if not against:
        raise ConfigError('eval: name at least one opponent with --against')
    cfg = run.cfg
    seed, games = _seed_and_games(cfg, seed, games)
    pid = run.resolve(player, snapshot)
    role = run.role_of(pid)
    policy = _searching(cfg, run.policy(pid, seed=seed), search, seed)
    opponents = Opponents(run, seed, role)
    resolved: List[Tuple[str, Policy]] = [opponents.resolve(name) for name in against]
    env_seed = seed + LEAGUE_EVAL_SEED_OFFSET  # the league's evaluation games are played on these
    evaluator = BattleEvaluator(lambda: make_battle_env(cfg.env, cfg.env.evaluator_env_num, env_seed), games,
                                deterministic=not sampled)
    results = evaluator.evaluate(policy, resolved, role=role)  # each result counts its distinct games
    return dict(run=run_dir, player=pid, games=games, sampled=bool(sampled), seed=seed, search=search,
                opponents={r.opponent_id: dict(outcome_statistics(r.outcomes), by_seat=_by_seat(r),
                                               distinct_games=r.distinct_games)
                           for r in results})


def _searching(cfg, policy, search: Optional[int], seed: int):
    """``policy`` itself, or choosing its moves by a guided search of ``search`` simulations."""
    if search is None:
        return policy
    if isinstance(search, bool) or not isinstance(search, int) or search < 1:
        raise ConfigError(f'eval: --search must be a number of simulations >= 1, got {search!r}')
    from sparring.dizoo.board_games.guided_search import guided_search_player
    return guided_search_player(cfg.env, policy, search, seed=seed)


def perfect_play(run_dir: str, positions: Optional[str] = None, player: Optional[str] = None,
                 snapshot: Optional[str] = None, search: Optional[int] = None, seed: Optional[int] = None,
                 trust_code: bool = False) -> dict:
    """A connect-four player's error rate against perfect play, per group of labelled positions (``positions``:
    a file of ``benchmarks/perfect_play.py generate``; default the reported set), alone or with ``search``.
    A move is an error when its outcome (win, draw or loss) is worse than the best move's."""
    run = TrainedRun(run_dir, trust_code)
    if run.cfg.env.type != 'connect_four':
        raise ConfigError(f'eval --perfect: the labelled positions are of connect four (env type \'connect_four\'); '
                          f'{run_dir} plays {run.cfg.env.type!r}')
    from sparring.dizoo.board_games.solver.testset import perfect_play_report
    seed = run.cfg.seed if seed is None else int(seed)
    pid = run.resolve(player, snapshot)
    policy = _searching(run.cfg, run.policy(pid, seed=seed), search, seed)
    if positions is not None and not os.path.isfile(positions):
        raise FileNotFoundError(f'eval --perfect: no positions file {positions!r}; expected a file written by '
                                f'benchmarks/perfect_play.py generate')
    return dict(run=run_dir, player=pid, search=search, **perfect_play_report(policy, positions))


def format_perfect_play(report: dict) -> str:
    """The perfect-play report as lines: one per group of positions."""
    how = f'with a search of {report["search"]} simulations' if report['search'] else 'the network alone'
    head = (f'{report["player"]} of {report["run"]} against perfect play ({how}), positions of '
            f'{os.path.basename(report["positions_file"])} (seed {report["seed"]}):')
    lines = [head]
    for group, g in report['groups'].items():
        tactics = f'; {g["missed_wins"]} missed a win in one, {g["missed_blocks"]} a block' if g['errors'] else ''
        lines.append(f'  {group:>14}: {100 * g["error_rate"]:5.1f} % errors ({g["errors"]} of {g["positions"]}{tactics})')
    return '\n'.join(lines)


def _seed_and_games(cfg, seed: Optional[int], games: Optional[int]) -> Tuple[int, int]:
    """The evaluation's seed and games: the run's own unless given; at least one game."""
    games = cfg.env.n_evaluator_episodes if games is None else int(games)
    if games < 1:
        raise ConfigError(f'eval: --games must be at least 1, got {games}')
    return (cfg.seed if seed is None else int(seed)), games

def evaluate_returns(run: TrainedRun, games: Optional[int] = None, sampled_only: bool = False,
                     seed: Optional[int] = None) -> dict:
    """A single-agent run's player on ``games`` episodes (default ``env.n_evaluator_episodes``) of its
    evaluation envs, greedy and sampled (``sampled_only``: sampled alone); each mode's mean return with
    its standard error. The default seed replays the run's own first evaluation episodes."""
    cfg = run.cfg
    seed, games = _seed_and_games(cfg, seed, games)
    pid = run.resolve(None, None)
    policy = run.policy(pid, seed=seed)
    modes = {}
    for mode in ('sampled',) if sampled_only else ('greedy', 'sampled'):
        env = make_env_manager(evaluator_env_config(cfg.env, cfg.import_names), cfg.env.evaluator_env_num,
                               seed + SINGLE_AGENT_EVAL_SEED_OFFSET, cfg.import_names)
        try:
            evaluator = Evaluator(env, policy, games, deterministic=mode == 'greedy')
            modes[mode] = return_statistics(evaluator.evaluate().returns)
        finally:
            env.close()
    return dict(run=run.run_dir, player=pid, games=games, seed=seed, returns=modes)


def return_statistics(returns: Sequence[float]) -> dict:
    """Mean, standard error of the mean (sample deviation / sqrt n; 0 for one episode), spread and range."""
    values = np.asarray(returns, dtype=np.float64)
    n = len(values)
    std = float(values.std(ddof=1)) if n > 1 else 0.0
    return dict(episodes=n, mean=float(values.mean()), se=std / math.sqrt(n), std=std, min=float(values.min()),
                max=float(values.max()), distinct_returns=len(set(values.tolist())))


def _by_seat(result) -> Dict[int, dict]:
    """Win, draw and loss rates (and errors) of the games the player played from each seat."""
    return {seat: outcome_statistics([o for o, s in zip(result.outcomes, result.seats) if s == seat])
            for seat in sorted(set(result.seats))}


def format_report(report: dict) -> str:
    """The report as lines of text: one per opponent (per play mode for a single agent)."""
    if 'returns' in report:
        lines = [f'{report["player"]} of {report["run"]}: {report["games"]} episodes per mode, seed {report["seed"]}']
        for mode, r in report['returns'].items():
            lines.append(f'  {mode}: return {r["mean"]:.2f} ± {r["se"]:.2f} (standard error; std {r["std"]:.2f}, '
                         f'min {r["min"]:.2f}, max {r["max"]:.2f}, {r["distinct_returns"]} distinct returns)')
        return '\n'.join(lines)
    lines = [f'{report["player"]} of {report["run"]}: {report["games"]} games per opponent, '
             f'{"sampled" if report["sampled"] else "greedy"} play, seed {report["seed"]}'
             + (f', moves by a guided search of {report["search"]} simulations' if report.get('search') else '')]
    for name, s in report['opponents'].items():
        lines.append(f'  vs {name}: win {s["win"]:.1%} ± {s["win_se"]:.1%}  draw {s["draw"]:.1%} ± {s["draw_se"]:.1%}  '
                     f'loss {s["loss"]:.1%} ± {s["loss_se"]:.1%}  score {s["score"]:.3f}  '
                     f'Elo {_elo(s["elo"])} [{_elo(s["elo_low"])}, {_elo(s["elo_high"])}]')
        distinct = s.get('distinct_games')
        if distinct is not None and distinct < s['games']:
            lines.append(f'    {distinct} distinct games among {s["games"]}' + (
                ': the games repeat, so the errors above overstate what was measured (try --sampled)'
                if distinct * 2 <= s['games'] else ''))
        lines.append('    ' + '  '.join(f'as seat {seat}: win {b["win"]:.1%} draw {b["draw"]:.1%} loss {b["loss"]:.1%} '
                                        f'({b["games"]} games)' for seat, b in s.get('by_seat', {}).items()))
    return '\n'.join(lines)


def json_ready(report: dict) -> dict:
    """The report with infinite Elo bounds written as the strings '+inf' / '-inf' (JSON has no infinity)."""
    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, float) and math.isinf(value):
            return '+inf' if value > 0 else '-inf'
        return value
    return clean(report)


def _elo(value: float) -> str:
    return ('+inf' if value > 0 else '-inf') if math.isinf(value) else f'{value:+.0f}'
