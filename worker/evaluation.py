"""How a run evaluates a player, the same in every mode (in-process, evaluator worker, commander).

* :class:`GameEvaluation`: a league player plays each evaluation opponent (bots, snapshots) a
  fixed number of games; the result is the outcomes per opponent, its score the worst of
  "wins plus half the draws" over the opponents.
* :class:`ReturnEvaluation`: a single agent plays greedy episodes; the result is the episode
  returns, its score their mean.

Calling one gives ``(outcomes per opponent id, episode returns)``; ``summarise`` (a class method,
so a commander that never plays can use it) turns that into the report that is logged and kept.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from sparring.worker.battle_evaluator import BattleEvalResult, BattleEvaluator
from sparring.worker.env.battle import make_battle_env
from sparring.worker.env.gym_env import evaluator_env_config
from sparring.worker.env.manager import make_env_manager
from sparring.worker.evaluator import Evaluator
from sparring.worker.logger import format_outcome_rates

Outcomes = Dict[str, List[str]]


def min_score(per_opponent: Dict[str, dict]) -> float:
    """The worst score (wins plus half the draws) over an evaluation's opponents."""
    return min(s['win'] + 0.5 * s['draw'] for s in per_opponent.values())


class GameEvaluation:
    """A league player against the evaluation opponents, on envs of its own."""

    def __init__(self, cfg, seed: int) -> None:
        self.battle = BattleEvaluator(lambda: make_battle_env(cfg.env, cfg.env.evaluator_env_num, seed),
                                      cfg.env.n_evaluator_episodes, deterministic=cfg.battle.eval_deterministic)

    def __call__(self, policy, opponents: Sequence[Sequence[str]], pool) -> Tuple[Outcomes, List[float]]:
        results = self.battle.evaluate(policy, [(oid, pool.get(ref)) for oid, ref in opponents])
        return {r.opponent_id: list(r.outcomes) for r in results}, []

    @staticmethod
    def summarise(results: Outcomes, returns: Sequence[float]) -> Tuple[dict, Optional[float], str]:
        """``(report, score, text)``: win/draw/loss rates per opponent and the worst score."""
        report = {oid: BattleEvalResult(oid, outcomes).summary() for oid, outcomes in results.items()}
        text = format_outcome_rates(report)
        return report, (min_score(report) if report else None), text

    def close(self) -> None:
        pass  # every evaluation makes and closes its own envs


class ReturnEvaluation:
    """A single agent's greedy episodes on evaluation envs (raw returns of whole episodes)."""

    def __init__(self, cfg, seed: int) -> None:
        self.n_episodes = cfg.env.n_evaluator_episodes
        self.env = make_env_manager(evaluator_env_config(cfg.env, cfg.import_names), cfg.env.evaluator_env_num,
                                    seed, cfg.import_names)

    def __call__(self, policy, opponents: Sequence[Sequence[str]], pool) -> Tuple[Outcomes, List[float]]:
        return {}, Evaluator(self.env, policy, self.n_episodes).evaluate().returns

    @staticmethod
    def summarise(results: Outcomes, returns: Sequence[float]) -> Tuple[dict, Optional[float], str]:
        """``(report, score, text)``: the mean and spread of the returns; the score is the mean."""
        if not returns:
            raise ValueError('a single-agent evaluation reports its episode returns; got none')
        values = np.asarray(returns, dtype=np.float64)
        report = dict(return_mean=float(values.mean()), return_std=float(values.std()), episodes=len(values))
        return report, report['return_mean'], f'return {report["return_mean"]:.2f} +- {report["return_std"]:.2f}'

    def close(self) -> None:
        self.env.close()
