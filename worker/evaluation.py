"""How a run evaluates a player, the same in every mode (in-process, evaluator worker, commander).

* :class:`GameEvaluation`: a league player plays each evaluation opponent (bots, snapshots) a
  fixed number of games; the result is the outcomes per opponent, its score the worst of
  "wins plus half the draws" over the opponents.
* :class:`ReturnEvaluation`: a single agent plays greedy episodes; the result is the episode
  returns, its score their mean.

Calling one gives ``(outcomes per opponent id, episode returns)``; ``summarise`` (a class method,
so a commander that never plays can use it) turns that into the report that is logged and kept. A
league evaluation's outcomes come as :class:`GameOutcomes`, which also carry how many distinct games
were played against each opponent: the report keeps the count (``distinct_games``) and the log line
says where the games repeated.
"""
from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union, cast

import numpy as np

from sparring.config.registry import BOT_REGISTRY
from sparring.policy.bot import parse_bot_ref
from sparring.worker.battle_evaluator import BattleEvalResult, BattleEvaluator
from sparring.worker.env.battle import make_battle_env
from sparring.worker.env.gym_env import evaluator_env_config
from sparring.worker.env.manager import make_env_manager
from sparring.worker.evaluator import Evaluator
from sparring.worker.logger import format_outcome_rates
from sparring.worker.policy_pool import BOT_PREFIX

Outcomes = Dict[str, List[str]]
# What an evaluation gives a league player: outcomes by opponent id (two seats), or rankings of games of three or more
# seats (:mod:`sparring.worker.multiseat_evaluation`).
EvalResults = Union[Outcomes, List[list]]


class GameOutcomes(dict):
    """The outcomes of an evaluation's games, per opponent id (the dict itself: ``'win' | 'draw' | 'loss'``
    game by game), with :attr:`distinct_games`: how many distinct games they were, per opponent counted.

    A dict, so that everything that records outcomes (the league, the journal, the wire's ``results``)
    reads them as before; the counts ride beside them, from the evaluation that played the games to the
    report that keeps them, in-process, from the background child and across the wire (``distinct_games``).
    """

    def __init__(self, outcomes: Optional[Mapping[str, List[str]]] = None,
                 distinct_games: Optional[Mapping[str, int]] = None) -> None:
        super().__init__(outcomes or {})
        self.distinct_games: Dict[str, int] = dict(distinct_games or {})


def distinct_games_of(results: Mapping[str, List[str]]) -> Dict[str, int]:
    """The distinct games per opponent that ``results`` carry (none for a plain dict of outcomes)."""
    return results.distinct_games if isinstance(results, GameOutcomes) else {}


# A chance opponent repeats a short game now and then; the note is for evaluations that measure a few games many
# times over (a greedy player against a bot without chance), where the rate stands on far fewer games than it says.
REPEATED_NOTE_SHARE = 0.5


def repeated_games_note(report: Dict[str, dict]) -> str:
    """``'games repeated: X 2 distinct of 8'`` for the opponents against whom at most
    :data:`REPEATED_NOTE_SHARE` of the games were distinct; '' if none. The report keeps every count."""
    repeated = [f'{oid} {s["distinct_games"]} distinct of {s["games"]}' for oid, s in report.items()
                if s.get('distinct_games') is not None and s['distinct_games'] <= REPEATED_NOTE_SHARE * s['games']]
    return 'games repeated: ' + ', '.join(repeated) if repeated else ''


def min_score(per_opponent: Dict[str, dict]) -> float:
    """The worst score (wins plus half the draws) over an evaluation's opponents."""
    return min(s['win'] + 0.5 * s['draw'] for s in per_opponent.values())


class OutcomesByOpponent:
    """What the evaluations whose results are outcomes by opponent id (a league player's in a game of two seats, and
    a single agent's: none) send over the wire and how a commander reads them back."""

    @staticmethod
    def report_fields(results: EvalResults) -> dict:
        """The eval report's fields of ``results``: the outcomes and, where counted, the distinct games."""
        fields: dict = dict(results=dict(cast(Outcomes, results)))
        distinct = distinct_games_of(cast(Outcomes, results))
        if distinct:  # optional on the wire: a commander reads a report without it as before
            fields['distinct_games'] = distinct
        return fields

    @staticmethod
    def from_report(body: Mapping) -> GameOutcomes:
        return GameOutcomes(body['results'], body.get('distinct_games'))

    @staticmethod
    def opponents_problem(results: EvalResults, known: Set[str]) -> Optional[str]:
        """What is wrong with the opponents ``results`` were played against (every one of ``known``), or None."""
        if set(cast(Outcomes, results)) != known:
            return f'against {sorted(known)}, got results against {sorted(cast(Outcomes, results))}'
        return None

    @staticmethod
    def readable_only(results: EvalResults, readable: Set[str]) -> GameOutcomes:
        """The results against the ``readable`` opponents (one found damaged was played with a stand-in)."""
        kept = cast(GameOutcomes, results)
        return GameOutcomes({oid: outcomes for oid, outcomes in kept.items() if oid in readable},
                            {oid: n for oid, n in kept.distinct_games.items() if oid in readable})


class GameEvaluation(OutcomesByOpponent):
    """A league player against the evaluation opponents, on envs of its own. In a game whose seats have roles a
    player of one role (its policy's ``role``) is evaluated against the opponents of the other roles only."""

    def __init__(self, cfg, seed: int) -> None:
        self.cfg = cfg
        self.battle = BattleEvaluator(lambda: make_battle_env(cfg.env, cfg.env.evaluator_env_num, seed),
                                      cfg.env.n_evaluator_episodes, deterministic=cfg.battle.eval_deterministic)

    def __call__(self, policy, opponents: Sequence[Sequence[str]], pool) -> Tuple[GameOutcomes, List[float]]:
        role = policy.role
        if role is None:
            playing = [(oid, pool.get(ref)) for oid, ref in opponents]
        else:
            roles = {oid: opponent_role(self.cfg, oid, ref) for oid, ref in opponents}
            playing = [(oid, pool.get(ref, roles[oid])) for oid, ref in opponents if roles[oid] not in (None, role)]
        results = self.battle.evaluate(policy, playing, role=role)
        return GameOutcomes({r.opponent_id: list(r.outcomes) for r in results},
                            {r.opponent_id: r.distinct_games for r in results if r.distinct_games is not None}), []

    @staticmethod
    def summarise(results: Outcomes, returns: Sequence[float]) -> Tuple[dict, Optional[float], str]:
        """``(report, score, text)``: win/draw/loss rates per opponent (and the distinct games, where counted),
        the worst score, and the log line's text, which names the opponents whose games repeated. Counts that
        do not fit the outcomes (an opponent without games, more distinct games than games) raise ValueError."""
        distinct = distinct_games_of(results)
        unknown = sorted(set(distinct) - set(results))
        if unknown:
            raise ValueError(f'distinct games counted against {unknown[:5]}, which played no games here')
        report = {}
        for oid, outcomes in results.items():
            report[oid] = BattleEvalResult(oid, outcomes).summary()
            if oid in distinct:
                count = distinct[oid]
                if not min(1, len(outcomes)) <= count <= len(outcomes):
                    raise ValueError(f'{count} distinct games against {oid!r}; expected 1 to {len(outcomes)}, the '
                                     f'games played')
                report[oid]['distinct_games'] = count
        note = repeated_games_note(report)
        text = format_outcome_rates(report) + (f' ({note})' if note else '')
        return report, (min_score(report) if report else None), text

    @staticmethod
    def opponent_rates(report: dict) -> Dict[str, dict]:
        """The report's win, draw and loss rates by opponent, as the league watch draws them: the report itself."""
        return report

    @staticmethod
    def scalar_groups(pid: str, report: dict) -> List[Tuple[str, dict]]:
        """TensorBoard's ``(prefix, figures)`` of a report: the rates against each opponent."""
        return [(f'eval/{pid}/vs_{oid}/', s) for oid, s in report.items()] or [('eval/', report)]

    @staticmethod
    def figures(report: dict) -> dict:
        """A log line's figures of a report."""
        return dict(eval=format_outcome_rates(report))

    def close(self) -> None:
        pass  # every evaluation makes and closes its own envs


def opponent_role(cfg, opponent_id: str, param_ref: Optional[str]) -> Optional[str]:
    """The role an evaluation opponent plays in a game with roles: a reference player's category, else the role of
    the bot its reference names (None: a bot of no single role)."""
    for ref in cfg.league.reference_players:
        if ref['player_id'] == opponent_id:
            return ref.get('category')
    if param_ref and param_ref.startswith(BOT_PREFIX):
        plays = getattr(BOT_REGISTRY.get(parse_bot_ref(param_ref[len(BOT_PREFIX):])[0]), 'roles', None)
        if plays is not None and len(plays) == 1:
            return plays[0]
    return None


class ReturnEvaluation(OutcomesByOpponent):
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

    @staticmethod
    def opponent_rates(report: dict) -> Optional[Dict[str, dict]]:
        """None: a single agent's returns, no opponents to draw."""
        return None

    @staticmethod
    def scalar_groups(pid: str, report: dict) -> List[Tuple[str, dict]]:
        """TensorBoard's ``(prefix, figures)`` of a report: the returns' mean and spread."""
        return [('eval/', report)]

    @staticmethod
    def figures(report: dict) -> dict:
        """A log line's figures of a report."""
        return dict(eval=report['return_mean'], eval_std=report['return_std'])

    def close(self) -> None:
        self.env.close()
