"""The league table: every player's games, win rate and ratings, as rows (for pages) or as text; with several
categories, each player's category, and the payoff between categories."""
from __future__ import annotations

from typing import List, Sequence

from sparring.league.text_table import format_table

SORT_KEYS = ('elo', 'trueskill', 'games', 'joined')
HEADERS = ('player', 'kind', 'type / parent', 'step', 'games', 'self-play', 'win rate', 'elo', 'trueskill')
CATEGORY_COLUMN = HEADERS.index('kind') + 1  # where the category column goes in a league of several


def table_headers(league) -> List[str]:
    """The league table's headers: :data:`HEADERS`, with a ``category`` column when the league has several."""
    headers = list(HEADERS)
    if len(league.categories) > 1:
        headers.insert(CATEGORY_COLUMN, 'category')
    return headers


def league_rows(league, sort_by: str = 'elo') -> List[dict]:
    """One dict per player (``cells`` in the order of :func:`table_headers`, plus the raw figures), sorted by
    ``sort_by``, one of ``SORT_KEYS`` (``joined``: league order)."""
    if sort_by not in SORT_KEYS:
        raise ValueError(f'league table: sort_by must be one of {", ".join(SORT_KEYS)}, got {sort_by!r}')
    rows = []
    several = len(league.categories) > 1
    for player in league.roster.players:
        totals = league.payoff.totals(player.player_id)
        rating = league.ratings.summary(player.player_id)
        origin = getattr(player, 'player_type', None) or getattr(player, 'parent_id', None)
        trueskill = None if rating['trueskill_mu'] is None else \
            f'{rating["trueskill_mu"]:.2f} ± {rating["trueskill_sigma"]:.2f}'
        cells = [player.player_id, player.kind, origin, player.step, int(totals['games']),
                 getattr(player, 'self_play_games', None),
                 totals.win_rate() if totals['games'] else None, rating['elo'], trueskill]
        if several:
            cells.insert(CATEGORY_COLUMN, player.category)
        rows.append(dict(
            cells=cells, category=player.category, player_id=player.player_id, kind=player.kind, rating=rating,
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
    headers = table_headers(league)
    text = format_table(headers, [r['cells'] for r in shown], right_align_from=headers.index('step'))
    if len(shown) < len(rows):
        text += f'\n... {len(rows) - len(shown)} more players'
    if len(league.categories) > 1:
        text += '\n\nPayoff between categories (row against column)\n' + category_table(league)
    return text


def category_rows(league) -> List[List]:
    """The payoff between categories as rows: the row category, then per column category its win rate and
    games (None where they never met)."""
    categories, rates, games = league.category_payoff()
    return [[row] + [None if games[i, j] <= 0 else f'{rates[i, j]:.3f} ({games[i, j]:.0f})'
                     for j in range(len(categories))]
            for i, row in enumerate(categories)]


def category_table(league) -> str:
    """Category x category: the win rate of the row's players against the column's, with the (decayed) games."""
    return format_table(['category'] + league.categories, category_rows(league), right_align_from=1)
