"""The league operations of a run: one ``TypedDict`` per ``op``, applied by the run coordinator, journaled by a commander.

Each operation is a plain dict because the commander writes it to its journal as one JSON line and replays it
after a crash (:mod:`~sparring.framework.commander_state`); the first application records in it what a replay
must see again (``first``, ``dropped``, ``agent_steps``, ``verdict``), and the journal adds its ``seq`` and
``crc``. :meth:`~sparring.framework.coordinator.RunCoordinator.apply` performs them.
"""
from __future__ import annotations

from typing import Dict, List, Literal, NotRequired, TypedDict, Union


class _Journaled(TypedDict, total=False):
    """What the journal adds to an entry it writes, and what a first application records for a replay."""
    seq: int  # the entry's place in the journal
    crc: int  # the checksum of its line
    dropped: List[str]  # the quarantined snapshots it saw (jobs and games)


class JobsOp(_Journaled):
    """``n`` jobs drawn for ``player``, held by the worker of ``session`` until their games are reported."""
    op: Literal['jobs']
    player: str
    n: int
    session: str
    first: NotRequired[int]  # the first job id drawn: a replay that draws another one diverged


class GamesOp(_Journaled):
    """A chunk's finished games and env steps."""
    op: Literal['games']
    chunk: str  # the chunk's id ('' in one process)
    player: str
    steps: int
    games: List[list]  # one [away id, job ids, outcomes from the home player's view] per opponent


class RankedGamesOp(_Journaled):
    """A chunk's finished games of three or more seats, as rankings, and its env steps."""
    op: Literal['ranked_games']
    chunk: str  # the chunk's id ('' in one process)
    player: str  # the home player
    steps: int
    # One [player ids, job ids, rankings, teams] per tuple of players (and teams) that played: the job's S player
    # ids (the home player first), a ranking (one rank per player id, 0 the best) per game, and the team of each
    # player id in a team game (None in a free-for-all).
    games: List[list]


class AbandonOp(_Journaled):
    """Jobs whose games will never end (their worker left)."""
    op: Literal['abandon']
    jobs: List[int]


class ProgressOp(_Journaled):
    """A learner's iteration and parameter version; the league's snapshot / reset verdict follows."""
    op: Literal['progress']
    player: str
    iteration: int
    version: int
    agent_steps: NotRequired[int]  # the player's env steps when first applied
    verdict: NotRequired[List[bool]]  # [snapshot, reset] when first applied: a replay must judge the same


class EvalOp(_Journaled):
    """Rated evaluation games against reference players."""
    op: Literal['eval']
    player: str
    results: Dict[str, List[str]]  # outcomes by opponent id


class RankedEvalOp(_Journaled):
    """Rated evaluation games of three or more seats (the player with reference players in the other seats), as
    rankings: the same groups as :class:`RankedGamesOp`'s, without job ids."""
    op: Literal['ranked_eval']
    player: str
    games: List[list]  # one [player ids, [], rankings, teams] per tuple of players (and teams)


LeagueOp = Union[JobsOp, GamesOp, RankedGamesOp, AbandonOp, ProgressOp, EvalOp, RankedEvalOp]
