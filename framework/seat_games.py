"""How a run's games are recorded, chosen once by the number of seats: a strategy the run coordinator holds.

* :class:`PairGames` — games of two seats: a job's one opponent, results as outcomes from the home player's view
  (``'win' | 'draw' | 'loss'``), grouped per opponent into a :class:`~sparring.framework.league_ops.GamesOp`;
  rated evaluation games per opponent in an :class:`~sparring.framework.league_ops.EvalOp`.
* :class:`RankedGames` — games of three or more seats: a job's tuple of opponents, results as rankings (a rank per
  player id, 0 the best, and the teams of a team game), grouped per tuple of players (and teams) into a
  :class:`~sparring.framework.league_ops.RankedGamesOp`; rated evaluation games in a
  :class:`~sparring.framework.league_ops.RankedEvalOp`. The league records each group with one ``finish_job``
  (:mod:`sparring.league.multiseat`: the payoff and Elo take its pairwise games, TrueSkill rates the ranking).

Both say whether a job plays a quarantined snapshot, which job stands in for it, how a chunk's or an evaluation's
games become an operation, and how an operation is recorded in the league. The groups keep the order in which
their first game finished, so a replay records them exactly as the first time.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Collection, Dict, List, MutableMapping, Optional, Sequence, Set, Tuple, Union, cast

from sparring.framework.league_ops import EvalOp, GamesOp, RankedEvalOp, RankedGamesOp
from sparring.league.errors import LeagueError
from sparring.league.job_protocol import JobInfo
from sparring.league.multiseat import parse_rankings, parse_teams
from sparring.worker.chunk import Chunk
from sparring.worker.evaluation import EvalResults, Outcomes


class PairGames:
    """Games of two seats (see the module docstring)."""

    seats = 2

    @staticmethod
    def plays_any(info: JobInfo, refs: Collection[str]) -> bool:
        """Whether the job's opponent is stored under one of ``refs``."""
        return info['players'][1]['param_ref'] in refs

    @staticmethod
    def stand_in(info: JobInfo) -> JobInfo:
        """A game against itself instead of the job."""
        home = info['players'][0]
        instead = info.copy()
        instead['player_ids'], instead['players'] = [home['player_id']] * 2, [home, home.copy()]
        instead['branch'] = 'instead_of_quarantined'
        return instead

    @staticmethod
    def entry(pid: str, results: Sequence[Tuple[str, str]], env_steps: int, chunk_id: str = '') -> GamesOp:
        """A chunk's finished games ``(opponent id, outcome)``, grouped per opponent."""
        by_opponent: Dict[str, List[str]] = defaultdict(list)
        for opponent_id, outcome in results:
            by_opponent[opponent_id].append(outcome)
        return GamesOp(op='games', chunk=chunk_id, player=pid, steps=int(env_steps),
                       games=[[away, [], outcomes] for away, outcomes in by_opponent.items()])

    @staticmethod
    def result_problem(result: list, pid: str, opponents: Tuple[str, ...]) -> Optional[str]:
        """What is wrong with a collector's result of one job (``[outcome]``), or None."""
        if len(result) != 1 or result[0] not in ('win', 'draw', 'loss'):
            return f'expected [job_id, "win" | "draw" | "loss"] in a game of two seats, got {[*result]}'
        return None

    @staticmethod
    def reported(pid: str, chunk_id: str, steps: int, games: Sequence[Tuple[int, Tuple[str, ...], list]]) -> GamesOp:
        """A collector's accepted games ``(job id, opponents, [outcome])``, grouped per opponent."""
        groups: Dict[str, Tuple[List[int], List[str]]] = {}
        for job_id, opponents, (outcome,) in games:
            ids, outcomes = groups.setdefault(opponents[0], ([], []))
            ids.append(job_id)
            outcomes.append(outcome)
        return GamesOp(op='games', chunk=chunk_id, player=pid, steps=steps,
                       games=[[away, ids, outcomes] for away, (ids, outcomes) in groups.items()])

    @classmethod
    def chunk_entry(cls, pid: str, chunk: Chunk) -> GamesOp:
        """A chunk's games (its ``results``) and env steps, in one process."""
        return cls.entry(pid, chunk.results, int(chunk.env_steps or 0))

    @staticmethod
    def record(league, entry: GamesOp, dropped: Set[str], counters: MutableMapping[str, int]) -> None:
        for away, _, outcomes in entry['games']:
            if dropped and league.get_player(away).param_ref in dropped:
                # Played against a stand-in for a quarantined snapshot (jobs drawn before it was): not its games.
                counters['results_quarantined'] += len(outcomes)
                continue
            league.finish_job(dict(player_ids=[entry['player'], away], result=outcomes))
            counters['games'] += len(outcomes)

    @staticmethod
    def eval_entry(pid: str, results: EvalResults, rated: Collection[str]) -> Optional[EvalOp]:
        """The rated games of an evaluation (outcomes by opponent id), or None."""
        games = {oid: outcomes for oid, outcomes in cast(Outcomes, results).items() if oid in rated}
        return EvalOp(op='eval', player=pid, results=games) if games else None

    @staticmethod
    def record_eval(league, entry: EvalOp, counters: MutableMapping[str, int]) -> None:
        for opponent_id, outcomes in entry['results'].items():
            league.record_eval_result(entry['player'], opponent_id, outcomes)
        counters['eval_games'] += sum(len(o) for o in entry['results'].values())


Ranking = Tuple[Sequence[str], Sequence[int], Optional[Sequence[int]]]  # player ids, ranks, teams (None: none)


def ranked_groups(rankings: Sequence[Ranking], job_ids: Optional[Sequence[int]] = None) -> List[list]:
    """Finished games ``(player ids, ranks, teams)`` (and their job ids) as ``[player ids, job ids, rankings,
    teams]`` per tuple of players and teams, in the order their first game finished."""
    groups: Dict[Tuple[Tuple[str, ...], Optional[Tuple[int, ...]]], list] = {}
    for k, (player_ids, ranks, teams) in enumerate(rankings):
        key = tuple(player_ids), None if teams is None else tuple(int(t) for t in teams)
        group = groups.setdefault(key, [list(key[0]), [], [], None if key[1] is None else list(key[1])])
        if job_ids is not None:
            group[1].append(int(job_ids[k]))
        group[2].append([int(r) for r in ranks])
    return list(groups.values())


class RankedGames:
    """Games of three or more seats (see the module docstring)."""

    def __init__(self, seats: int) -> None:
        self.seats = seats

    @staticmethod
    def plays_any(info: JobInfo, refs: Collection[str]) -> bool:
        """Whether one of the job's opponents is stored under one of ``refs``."""
        return any(player['param_ref'] in refs for player in info['players'][1:])

    def stand_in(self, info: JobInfo) -> JobInfo:
        """The home player in every seat instead of the job."""
        home = info['players'][0]
        instead = info.copy()
        instead['player_ids'] = [home['player_id']] * self.seats
        instead['players'] = [home] + [home.copy() for _ in range(self.seats - 1)]
        instead['branch'] = 'instead_of_quarantined'
        return instead

    @staticmethod
    def entry(pid: str, rankings: Sequence[Ranking], env_steps: int, chunk_id: str = '',
              job_ids: Optional[Sequence[int]] = None) -> RankedGamesOp:
        """A chunk's finished games ``(player ids, ranks, teams)`` (and their job ids), grouped per tuple."""
        return RankedGamesOp(op='ranked_games', chunk=chunk_id, player=pid, steps=int(env_steps),
                             games=ranked_groups(rankings, job_ids))

    def result_problem(self, result: list, pid: str, opponents: Tuple[str, ...]) -> Optional[str]:
        """What is wrong with a collector's result of one job (``[ranks]`` or ``[ranks, teams]``), or None."""
        if len(result) not in (1, 2) or not isinstance(result[0], list):
            return f'expected [job_id, ranks] or [job_id, ranks, teams] in a game of {self.seats} seats, got {result}'
        try:
            parse_rankings([result[0]], self.seats, parse_teams(result[1] if len(result) == 2 else None, self.seats),
                           where='ranks')
        except LeagueError as err:
            return str(err)
        return None

    @classmethod
    def reported(cls, pid: str, chunk_id: str, steps: int,
                 games: Sequence[Tuple[int, Tuple[str, ...], list]]) -> RankedGamesOp:
        """A collector's accepted games ``(job id, opponents, [ranks(, teams)])``, grouped per tuple of players."""
        rankings = [([pid, *opponents], result[0], result[1] if len(result) == 2 else None)
                    for _, opponents, result in games]
        return cls.entry(pid, rankings, steps, chunk_id, [job_id for job_id, _, _ in games])

    @classmethod
    def chunk_entry(cls, pid: str, chunk: Chunk) -> RankedGamesOp:
        """A chunk's games (its ``rankings``) and env steps, in one process."""
        return cls.entry(pid, chunk.rankings, int(chunk.env_steps or 0))

    @staticmethod
    def record(league, entry: RankedGamesOp, dropped: Set[str], counters: MutableMapping[str, int]) -> None:
        for player_ids, _, rankings, teams in entry['games']:
            if dropped and any(league.get_player(oid).param_ref in dropped for oid in player_ids[1:]):
                counters['results_quarantined'] += len(rankings)  # played against a stand-in: not their games
                continue
            league.finish_job(_job(player_ids, rankings, teams))
            counters['games'] += len(rankings)

    @staticmethod
    def eval_entry(pid: str, results: EvalResults, rated: Collection[str]) -> Optional[RankedEvalOp]:
        """The rated games of an evaluation (``[opponent ids, ranks, teams]`` each): those whose opponents are all
        rated, or None."""
        games = [([pid, *opponents], ranks, teams) for opponents, ranks, teams in cast(List[list], results)
                 if all(oid in rated for oid in opponents)]
        return RankedEvalOp(op='ranked_eval', player=pid, games=ranked_groups(games)) if games else None

    @staticmethod
    def record_eval(league, entry: RankedEvalOp, counters: MutableMapping[str, int]) -> None:
        for player_ids, _, rankings, teams in entry['games']:
            league.finish_job(_job(player_ids, rankings, teams))
            counters['eval_games'] += len(rankings)


def _job(player_ids: List[str], rankings: List[List[int]], teams: Optional[List[int]]) -> dict:
    job = dict(player_ids=list(player_ids), result=rankings)
    if teams is not None:
        job['teams'] = list(teams)
    return job


SeatGames = Union[PairGames, RankedGames]


def seat_games(seats: int) -> SeatGames:
    """The strategy of a game of ``seats`` seats."""
    return PairGames() if seats <= 2 else RankedGames(seats)
