"""Games of three or more seats in a league: the tuple of opponents a job draws, results as rankings, and their
pairwise decomposition into the payoff and the ratings.

A league with ``seats=S`` (S > 2) gives each job ``S`` player ids: the launching active player first, then one
opponent per other seat, each drawn by the player's branches independently (:func:`draw_opponents`: self-play,
PFSP, historical, reference ... each choose one of the S-1 opponents), so a job may mix its branches.

A finished S-seat job reports each episode as a **ranking**: ``result[e][k]`` is the rank of ``player_ids[k]`` in
episode ``e``, 0 the best, equal ranks a tie (a free-for-all: each seat for itself). A team game adds ``teams``, one
label per player id (``[0, 1, 0, 1]``: two teams of two); teammates must share their rank in every episode, and
the ranks order the teams.

**Pairwise decomposition.** Every two seats of different teams make one two-player game of the episode: the better
ranked wins, equal ranks draw. These games feed the shared payoff (so PFSP, the snapshot rule and the ``nash``
branch read an S-seat league as they read a two-seat one) and Elo. A player's payoff against another is then "how
often it finished ahead of that player when they met", whatever the other seats did; a player seated twice in one
game (self-play) does not play itself, as in a two-seat league. Elo rates those pairwise games one by one, so
each S-seat game moves a player's Elo S-1 times: the Elo column reads as the rating of "finishing ahead of"
games. TrueSkill rates the ranking itself (one update per episode, every team at its rank), which is the model
it was made for; a player seated several times in an episode enters it once, by its first seat.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Dict, List, Optional, Tuple

import numpy as np

from sparring.league.errors import LeagueError
from sparring.league.outcome import DRAW, LOSS, WIN

RANK_EXAMPLE = '[[0, 1, 2], [2, 0, 0]]'  # for the messages: two episodes of three seats


def draw_opponents(player, count: int) -> Tuple[list, List[str]]:
    """``count`` opponents of an active ``player`` for the other seats, each drawn by its branches on its own,
    and the branch that chose each."""
    drawn = [player.get_opponent() for _ in range(count)]
    return [opponent for opponent, _ in drawn], [branch for _, branch in drawn]


def parse_teams(teams, seats: int, where: str = 'finish_job') -> Optional[np.ndarray]:
    """``teams`` (one hashable label per seat, or None for a free-for-all) as team indices ``[S]``."""
    if teams is None:
        return None
    if isinstance(teams, (str, bytes)) or not isinstance(teams, Sequence) or len(teams) != seats:
        raise LeagueError(f'{where}: "teams" must be one team label per player id ({seats}), e.g. [0, 1, 0, 1], '
                          f'got {teams!r}')
    try:
        labels: Dict[object, int] = {}
        index = np.array([labels.setdefault(label, len(labels)) for label in teams], np.int64)
    except TypeError:
        raise LeagueError(f'{where}: "teams" labels must be ints or strings, got {teams!r}') from None
    if len(labels) < 2:
        raise LeagueError(f'{where}: "teams" {list(teams)} puts every seat in one team; expected at least two teams')
    return index


def parse_rankings(result, seats: int, teams: Optional[np.ndarray], where: str = 'finish_job result') -> np.ndarray:
    """``result`` (one ranking per episode, a rank per player id) as an int array ``[E, S]``, or a LeagueError
    naming the first thing wrong with it."""
    if isinstance(result, np.ndarray):
        result = result.tolist()
    if isinstance(result, (str, bytes)) or not isinstance(result, Sequence) or not result:
        raise LeagueError(f'{where}: expected a non-empty list of rankings, one per episode with a rank per player '
                          f'id (0 the best, equal ranks a tie), e.g. {RANK_EXAMPLE}; got {result!r}')
    ranks = np.empty((len(result), seats), np.int64)
    for e, ranking in enumerate(result):
        if isinstance(ranking, np.ndarray):
            ranking = ranking.tolist()
        if isinstance(ranking, (str, bytes)) or not isinstance(ranking, Sequence) or len(ranking) != seats or \
                not all(isinstance(r, (int, np.integer)) and not isinstance(r, bool) and 0 <= r < seats
                        for r in ranking):
            raise LeagueError(f'{where}[{e}]: expected {seats} ranks in 0..{seats - 1} (one per player id, 0 the '
                              f'best, equal ranks a tie), got {ranking!r}')
        ranks[e] = ranking
    if teams is not None:
        for e, ranking in enumerate(ranks):
            for team in range(int(teams.max()) + 1):
                if len(set(ranking[teams == team].tolist())) > 1:
                    raise LeagueError(f'{where}[{e}]: teammates (seats {np.flatnonzero(teams == team).tolist()}) have '
                                      f'ranks {ranking[teams == team].tolist()}; expected one rank per team')
    return ranks


def pairwise_games(player_indices: Sequence[int], ranks: np.ndarray,
                   teams: Optional[np.ndarray]) -> Dict[Tuple[int, int], List[int]]:
    """The two-player games inside the rankings ``ranks`` ``[E, S]``: ``{(home, away): outcome codes}`` by player
    index (home the lower seat of the pair), in episode order, for every pair of seats of different teams held by
    different players."""
    seats = len(player_indices)
    games: Dict[Tuple[int, int], List[int]] = {}
    for i in range(seats):
        for j in range(i + 1, seats):
            if player_indices[i] == player_indices[j] or (teams is not None and teams[i] == teams[j]):
                continue
            codes = np.where(ranks[:, i] < ranks[:, j], WIN, np.where(ranks[:, i] == ranks[:, j], DRAW, LOSS))
            games.setdefault((player_indices[i], player_indices[j]), []).extend(codes.tolist())
    return games


def first_seats(player_ids: Sequence[str]) -> List[int]:
    """The seat by which each distinct player enters a ranking's rating: its first."""
    seen: Dict[str, int] = {}
    for k, pid in enumerate(player_ids):
        seen.setdefault(pid, k)
    return sorted(seen.values())
