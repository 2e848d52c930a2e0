"""PNG pictures of a league: the payoff heatmap and the rating curves (needs matplotlib)."""
from __future__ import annotations

import os
from typing import Optional, Sequence

import numpy as np


def _pyplot():
    try:
        import matplotlib
    except ImportError as err:
        raise ImportError('league plots need matplotlib: pip install sparring[league] '
                          '(or pip install matplotlib)') from err
    matplotlib.use('Agg', force=False)  # files only; never open a window
    import matplotlib.pyplot as plt
    return plt


def _save(fig, plt, path: str) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100, bbox_inches='tight')
    plt.close(fig)
    return path


MAX_ANNOTATED = 30  # with more players a side the numbers would not fit in their cells


def plot_payoff(league, path: str, home_ids: Optional[Sequence[str]] = None,
                away_ids: Optional[Sequence[str]] = None) -> str:
    """Win rates of ``home_ids`` against ``away_ids`` (default: every player, historical and reference ones
    too, on both axes), written in the cells when there are few enough; pairs with fewer than
    ``min_win_rate_games`` games are grey."""
    plt = _pyplot()
    everyone = [p.player_id for p in league.roster.players]
    homes = list(home_ids) if home_ids is not None else everyone
    aways = list(away_ids) if away_ids is not None else everyone
    rates, games = league.payoff.matrix(homes, aways)
    shown = np.where((games > 0) & (games >= league.payoff.min_win_rate_games), rates, np.nan)
    fig, ax = plt.subplots(figsize=(min(2.5 + 0.45 * len(aways), 40), min(1.5 + 0.4 * len(homes), 40)))
    cmap = plt.get_cmap('RdBu').with_extremes(bad='lightgrey')  # grey: too few games for a win rate
    image = ax.imshow(shown, cmap=cmap, vmin=0.0, vmax=1.0, aspect='auto', interpolation='nearest')
    if len(homes) <= 80:
        ax.set_yticks(range(len(homes)), homes)
    if len(aways) <= 80:  # beyond that the labels only make a black bar
        ax.set_xticks(range(len(aways)), aways, rotation=90)
    if max(len(homes), len(aways)) <= MAX_ANNOTATED:
        for i, j in zip(*np.nonzero(~np.isnan(shown))):
            rate = shown[i, j]
            ax.text(j, i, f'{rate:.2f}', ha='center', va='center', fontsize=7,
                    color='white' if abs(rate - 0.5) > 0.3 else 'black')
    ax.set_xlabel('opponent')
    ax.set_title('win rate (row player against column player; grey: too few games)')
    fig.colorbar(image, ax=ax, label='win rate')
    return _save(fig, plt, path)


def plot_ratings(league, path: str, system: str = 'elo') -> str:
    """Each active player's rating over its training steps (``system``: 'elo' or 'trueskill');
    snapshots appear as points at their step and current rating, reference players as lines."""
    if system not in ('elo', 'trueskill'):
        raise ValueError(f'plot_ratings: system must be "elo" or "trueskill", got {system!r}')
    if getattr(league.ratings, system) is None:
        raise ValueError(f'plot_ratings: {system} ratings are disabled in this league\'s config (league.rating.{system})')
    plt = _pyplot()
    column = 1 if system == 'elo' else 2
    key = 'elo' if system == 'elo' else 'trueskill_mu'
    fig, ax = plt.subplots(figsize=(8, 5))
    for player in league.roster.active().players:
        points = league.ratings.history.get(player.player_id, [])
        if points:
            line, = ax.plot([p[0] for p in points], [p[column] for p in points], label=player.player_id)
            snapshots = league.roster.snapshots_of(player.player_id).players
            ratings = [league.ratings.summary(s.player_id)[key] for s in snapshots]
            ax.scatter([s.step for s in snapshots], ratings, s=12, color=line.get_color(), alpha=0.6)
            if len(snapshots) <= 40:  # each dot named by its snapshot index
                for snapshot, rating in zip(snapshots, ratings):
                    ax.annotate(str(snapshot.snapshot_index), (snapshot.step, rating), textcoords='offset points',
                                xytext=(0, 4), ha='center', fontsize=6, color=line.get_color())
    for reference in league.roster.reference().players:
        ax.axhline(league.ratings.summary(reference.player_id)[key], linestyle='--', color='grey', linewidth=1)
        ax.annotate(reference.player_id, (0, league.ratings.summary(reference.player_id)[key]),
                    xycoords=('axes fraction', 'data'), fontsize=8, color='grey')
    ax.set_xlabel('training step')
    ax.set_ylabel('Elo' if system == 'elo' else 'TrueSkill mu')
    ax.set_title(f'{system} ratings (numbered points: snapshots at their current rating)')
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc='best', fontsize=8)
    return _save(fig, plt, path)
