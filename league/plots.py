"""Pictures of a league as SVG files: the payoff heatmap and the rating curves over training steps.

Drawn by :mod:`sparring.league.svg_chart`, the module that draws the report page's charts too, so they need no
plotting library. A file always gets the ``.svg`` suffix (``payoff.png`` is written as ``payoff.svg``)."""
from __future__ import annotations

import os
from typing import Optional, Sequence

from sparring.league.report_page import heatmap_players
from sparring.league.svg_chart import heatmap, line_chart, svg_file
from sparring.worker.run_files import write_atomically

MAX_LABELLED_SNAPSHOTS = 40  # per player; beyond, the numbers above the dots would overlap


def _save(svg: str, path: str) -> str:
    path = os.path.splitext(path)[0] + '.svg'
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_atomically(path, svg_file(svg))
    return path


def plot_payoff(league, path: str, home_ids: Optional[Sequence[str]] = None,
                away_ids: Optional[Sequence[str]] = None) -> str:
    """Win rates of ``home_ids`` against ``away_ids`` (default on both axes: the report page's players, every
    player or in a big league the active and reference ones and the newest snapshots), written in the cells when
    there are few enough; pairs with fewer than ``min_win_rate_games`` games are grey. Returns the path written."""
    shown = heatmap_players(league)
    homes = list(home_ids) if home_ids is not None else shown
    aways = list(away_ids) if away_ids is not None else shown
    rates, games = league.payoff.matrix(homes, aways)
    title = 'Win rate of the row player against the column player'
    return _save(heatmap(homes, aways, rates, games, league.payoff.min_win_rate_games, title), path)


def plot_ratings(league, path: str, system: str = 'elo') -> str:
    """Each active player's rating over its training steps (``system``: 'elo' or 'trueskill');
    snapshots appear as numbered dots at their step and current rating, reference players as flat dashed
    lines. Returns the path written."""
    if system not in ('elo', 'trueskill'):
        raise ValueError(f'plot_ratings: system must be "elo" or "trueskill", got {system!r}')
    if getattr(league.ratings, system) is None:
        raise ValueError(f'plot_ratings: {system} ratings are disabled in this league\'s config (league.rating.{system})')
    column = 1 if system == 'elo' else 2  # of a history point [step, elo, trueskill_mu, trueskill_sigma]
    key = 'elo' if system == 'elo' else 'trueskill_mu'
    series, marks = {}, {}
    for player in league.roster.active().players:
        series[player.player_id] = [(p[0], p[column]) for p in league.ratings.history.get(player.player_id, [])]
        snapshots = league.roster.snapshots_of(player.player_id).players
        labelled = len(snapshots) <= MAX_LABELLED_SNAPSHOTS
        marks[player.player_id] = [(s.step, league.ratings.summary(s.player_id)[key],
                                    str(s.snapshot_index) if labelled else '', s.player_id) for s in snapshots]
    levels = {p.player_id: league.ratings.summary(p.player_id)[key] for p in league.roster.reference().players}
    name = 'Elo' if system == 'elo' else 'TrueSkill mu'
    chart = line_chart(series, f'{name} ratings (numbered dots: snapshots at their current rating; dashed: '
                       f'reference players)', 'training step', name, width=760, height=420, marks=marks,
                       levels=levels)
    return _save(chart, path)
