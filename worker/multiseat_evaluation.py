"""How a league player of a game of three or more seats is evaluated, the same in every mode (in-process, evaluator
worker, commander): :class:`MultiSeatEvaluation`, the S-seat counterpart of
:class:`~sparring.worker.evaluation.GameEvaluation`.

The player's network plays ``env.n_evaluator_episodes`` games with the evaluation opponents in the other seats (in
turn, seat by seat and game by game, so every evaluation covers them all alike; in a team game team by team, one
opponent in every seat of a team, its teammates' included), its own seat going round; every
evaluation replays the same seeds, so evaluations differ only by the players. Calling it gives ``(rankings,
episode returns)``: one ``[opponent ids, ranks, teams]`` per game, the opponents in the job order of the seats after
the player's, the ranks (0 the best) of the player first and then of each opponent, the teams of a team game in the
same order (None in a free-for-all), plain lists that a journal and the wire carry as they are. ``summarise`` (a
class method, so a commander that never plays can use it) turns that into the report that is logged and kept: the
mean chips (returns) of the player's seat, the games, and by opponent how often the player finished ahead of it (a
tie counts half; in a team game only where they played in different teams, as the league's pairwise games count);
its score, for the stop rule, is the worst of those rates.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from sparring.config.registry import ENV_REGISTRY
from sparring.worker.battle_evaluator import BattleEvalResult
from sparring.worker.multiseat_collector import MultiSeatCollector

EVAL_STEPS = 8  # vector steps per chunk of an evaluation (it collects chunks until it has its games)
HOME = ''  # the evaluated player's id in the jobs its collector plays (the caller names it when it records)

Ranking = list  # [opponent ids, ranks (the player's first), teams or None]


class MultiSeatEvaluation:
    """A league player with the evaluation opponents in the other seats, on envs of its own (see the module
    docstring)."""

    def __init__(self, cfg, seed: int) -> None:
        self.cfg, self.seed = cfg, seed
        self.env_cls = ENV_REGISTRY.get(cfg.env.type)

    def __call__(self, policy, opponents: Sequence[Sequence[str]], pool) -> Tuple[List[Ranking], List[float]]:
        """``opponents``: ``(opponent id, param ref)`` of each evaluation opponent; ``pool`` builds their
        policies. No opponent: no games."""
        if not opponents:
            return [], []
        cfg = self.cfg
        env = self.env_cls(cfg.env, cfg.env.evaluator_env_num, self.seed)
        S = env.num_seats
        playing = [(oid, pool.get(ref)) for oid, ref in opponents]
        turn = [0]

        def sample(slot: int):
            # the seats after the player's in job order, each labelled by what is dealt in turn: itself, or its team
            home = int(collector.home_seat[slot])
            labels = [(home + k) % S if env.teams is None else env.teams[(home + k) % S] for k in range(1, S)]
            dealt = {label: playing[(turn[0] + n) % len(playing)] for n, label in enumerate(dict.fromkeys(labels))}
            turn[0] += len(dealt)
            chosen = [dealt[label] for label in labels]
            return [HOME] + [oid for oid, _ in chosen], [p for _, p in chosen]

        collector = MultiSeatCollector(env, policy, EVAL_STEPS, sample, player_id=HOME, train_own_seats=False)
        rankings: List[Ranking] = []
        returns: List[float] = []
        try:
            while len(rankings) < cfg.env.n_evaluator_episodes:
                chunk = collector.collect()
                rankings += [[list(ids[1:]), list(ranks), None if teams is None else list(teams)]
                             for ids, ranks, teams in chunk.rankings]
                returns += chunk.episode_returns
        finally:
            collector.close()
        return rankings[:cfg.env.n_evaluator_episodes], returns[:cfg.env.n_evaluator_episodes]

    @staticmethod
    def summarise(results: Sequence[Ranking], returns: Sequence[float]) -> Tuple[dict, Optional[float], str]:
        """``(report, score, text)``: ``chips`` (the mean return of the player's seat), ``games``, ``ahead`` (by
        opponent, how often the player finished ahead of it, a tie counting half, a teammate's games left out) and
        ``vs`` (by opponent, the win, draw and loss rates of those pairwise games, and how many: an opponent in two
        seats of a game meets the player twice); the score is the worst ``ahead`` rate (None without games)."""
        outcomes: Dict[str, List[str]] = defaultdict(list)
        for opponent_ids, ranks, teams in results:
            for k, (opponent, rank) in enumerate(zip(opponent_ids, ranks[1:]), start=1):
                if teams is not None and teams[k] == teams[0]:
                    continue  # a teammate shares the player's rank: not a game between them
                outcomes[opponent].append('win' if ranks[0] < rank else 'draw' if ranks[0] == rank else 'loss')
        if not results:
            return {}, None, 'no evaluation opponents'
        vs = {opponent: BattleEvalResult(opponent, games).summary() for opponent, games in outcomes.items()}
        rates = {opponent: s['win'] + 0.5 * s['draw'] for opponent, s in vs.items()}
        chips = float(np.mean(returns)) if len(returns) else 0.0
        report = dict(chips=chips, games=len(results), ahead=rates, vs=vs)
        text = f'chips {chips:.3f}, ahead of ' + ' '.join(f'{o}:{r:.2f}' for o, r in rates.items())
        return report, min(rates.values()), text

    @staticmethod
    def opponent_rates(report: dict) -> Dict[str, dict]:
        """The report's win, draw and loss rates by opponent (of the pairwise games), as the league watch draws
        them."""
        return report.get('vs', {})

    @staticmethod
    def report_fields(results) -> dict:
        """The eval report's fields of ``results``: the rankings (``results``, outcomes by opponent, is empty)."""
        return dict(results={}, rankings=[list(game) for game in results])

    @staticmethod
    def from_report(body) -> List[Ranking]:
        return list(body.get('rankings', []))

    @staticmethod
    def opponents_problem(results, known: Set[str]) -> Optional[str]:
        """What is wrong with the opponents ``results`` were played against (some of ``known``), or None."""
        others = sorted({oid for opponents, _, _ in results for oid in opponents} - known)
        return f'against {sorted(known)}, got games against {others}' if others else None

    @staticmethod
    def readable_only(results, readable: Set[str]) -> List[Ranking]:
        """The games whose opponents are all ``readable`` (one found damaged was played with a stand-in)."""
        return [game for game in results if all(oid in readable for oid in game[0])]

    @staticmethod
    def scalar_groups(pid: str, report: dict) -> List[Tuple[str, dict]]:
        """TensorBoard's ``(prefix, figures)`` of a report: the chips and how often the player finished ahead."""
        if not report:
            return []
        return [(f'eval/{pid}/', dict(chips=report['chips'], **{f'ahead_of/{o}': r for o, r in report['ahead'].items()}))]

    @staticmethod
    def figures(report: dict) -> dict:
        """A log line's figures of a report."""
        return dict(eval_chips=report.get('chips'))

    def close(self) -> None:
        pass  # every evaluation makes and closes its own envs
