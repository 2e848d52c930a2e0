"""The league table: every player's games, win rate and ratings, as rows (for pages) or as text."""
from __future__ import annotations

from typing import List, Sequence

from sparring.league.text_table import format_table

SORT_KEYS = ('elo', 'trueskill', 'games', 'joined')
HEADERS = ('player', 'kind', 'type / parent', 'step', 'games', 'self-play', 'win rate', 'elo', 'trueskill')


def league_rows(league, sort_by: str = 'elo') -> List[dict]:
    """One dict per player (``cells`` in the order of ``HEADERS``, plus the raw figures), sorted by
    ``sort_by``, one of ``SORT_KEYS`` (``joined``: league order)."""
    if sort_by not in SORT_KEYS:
        raise ValueError(f'league table: sort_by must be one of {", ".join(SORT_KEYS)}, got {sort_by!r}')
    rows = []
    for player in league.roster.players:
        totals = league.payoff.totals(player.player_id)
        rating = league.ratings.summary(player.player_id)
        origin = getattr(player, 'player_type', None) or getattr(player, 'parent_id', None)
        trueskill = None if rating['trueskill_mu'] is None else \
            f'{rating["trueskill_mu"]:.2f} ± {rating["trueskill_sigma"]:.2f}'
        rows.append(dict(
            cells=[player.player_id, player.kind, origin, player.step, int(totals['games']),
                   getattr(player, 'self_play_games', None),
                   totals.win_rate() if totals['games'] else None, rating['elo'], trueskill],
            player_id=player.player_id, kind=player.kind, rating=rating,
            elo=rating['elo'] if rating['elo'] is not None else float('-inf'),
            trueskill=rating['trueskill_exposure'] if rating['trueskill_exposure'] is not None else float('-inf'),
            games=totals['games']))
    if sort_by != 'joined':
        rows.sort(key=lambda r: r[sort_by], reverse=True)
    return rows


def filled_columns(rows: Sequence[Sequence]) -> List[int]:
    """The indices of the columns with a value in some row: a column of dashes only (TrueSkill when it is
    off, self-play in a league without it) says nothing, and the report page leaves it out."""
    width = max((len(row) for row in rows), default=0)
    return [i for i in range(width) if i == 0 or any(row[i] is not None for row in rows)]


def league_table(league, sort_by: str = 'elo', max_rows: int = 0) -> str:
    """One line per player; ``sort_by`` one of ``SORT_KEYS`` (``joined``: league order)."""
    rows = league_rows(league, sort_by)
    shown = rows[:max_rows] if max_rows > 0 else rows
    # Every column, empty ones too: the text is part of a run's summary, which the golden runs record.
    text = format_table(HEADERS, [r['cells'] for r in shown], right_align_from=3)
    if len(shown) < len(rows):
        text += f'\n... {len(rows) - len(shown)} more players'
    return text
