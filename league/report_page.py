"""The league report page: one self-contained HTML file (inline CSS and SVG, no script, nothing fetched).

:func:`render_report` turns a league and the run's recorded course into the page:

* the league table (every player: kind, origin, step, games, win rate, Elo, TrueSkill);
* the payoff heatmap over all players, historical and reference ones too, the win rate written in
  each cell (grey where too few games were played for a rate);
* rating curves against env steps: Elo, and TrueSkill mu with its sigma band when it is on;
* the snapshot lineage: each active player's snapshots and resets along the env steps;
* exploitability curves where the run computes them exactly;
* results against each evaluation opponent (bots): the curves of win rates and the last evaluation.

``course`` is a dict of lists recorded as the run goes (see :class:`sparring.framework.league_watch.LeagueWatch`):
``evaluations`` (env_steps, player, results per opponent, ratings per player), ``snapshots``
(env_steps, player, snapshot, iteration, reset) and ``exact`` (env_steps, meta_exploitability,
exploitability per player).
"""
from __future__ import annotations

import html
from typing import Any, Dict, List, Optional

from sparring.league.report import HEADERS, league_rows
from sparring.league.svg_chart import line_chart, timeline, win_rate_colour
from sparring.league.text_table import _cell

MAX_HEATMAP_PLAYERS = 120  # beyond: the active and reference players and the newest snapshots

STYLE = """
body { font-family: sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
table.payoff td { width: 38px; text-align: center; font-size: 11px; }
table.payoff th.col { writing-mode: vertical-rl; transform: rotate(180deg); font-weight: normal; font-size: 11px; }
.facts td { border: none; padding: 1px 12px 1px 0; }
.note { color: #666; font-size: 13px; }
svg { margin: 8px 16px 8px 0; } svg .title { font-size: 13px; font-weight: bold; }
svg .tick { font-size: 10px; fill: #444; } svg .label { font-size: 11px; fill: #222; }
svg .axis { stroke: #444; } svg .grid { stroke: #eee; }
"""


def render_report(league, course: Dict[str, list], facts: Dict[str, object]) -> str:
    """The page as a string (see the module docstring)."""
    title = f'League report: {facts.get("run", "")}'
    sections = [f'<h1>{html.escape(title)}</h1>', _facts(facts),
                '<h2>League table</h2>', _league_table(league),
                '<h2>Payoff</h2>', _payoff(league),
                '<h2>Ratings</h2>', _ratings(league, course),
                '<h2>Snapshot lineage</h2>', _lineage(league, course, facts),
                '<h2>Against the evaluation opponents</h2>', _opponents(course)]
    if course.get('exact'):
        sections[-2:-2] = ['<h2>Exploitability</h2>', _exploitability(course)]
    return ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>' + html.escape(title) + '</title><style>'
            + STYLE + '</style></head><body>' + '\n'.join(sections) + '</body></html>\n')


def _facts(facts: Dict[str, object]) -> str:
    rows = ''.join(f'<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>'
                   for k, v in facts.items() if v is not None)
    return f'<table class="facts">{rows}</table>'


def _league_table(league) -> str:
    head = ''.join(f'<th>{html.escape(h)}</th>' for h in HEADERS)
    body = ''.join('<tr>' + ''.join(f'<td>{html.escape(_cell(c))}</td>' for c in row['cells']) + '</tr>'
                   for row in league_rows(league))
    return f'<table class="league"><tr>{head}</tr>{body}</table>'


def heatmap_players(league) -> List[str]:
    """The players of the heatmap, in league order: all of them, or in a big league the active and
    reference players and the newest snapshots."""
    ids = [p.player_id for p in league.roster.players]
    if len(ids) <= MAX_HEATMAP_PLAYERS:
        return ids
    keep = {p.player_id for p in league.active_players + league.reference_players}
    room = MAX_HEATMAP_PLAYERS - len(keep)
    newest = [p.player_id for p in league.historical_players][-max(room, 0):] if room > 0 else []
    keep.update(newest)
    return [pid for pid in ids if pid in keep]


def _payoff(league) -> str:
    ids = heatmap_players(league)
    rates, games = league.payoff.matrix(ids, ids)
    known = league.payoff.min_win_rate_games
    cols = ''.join(f'<th class="col">{html.escape(pid)}</th>' for pid in ids)
    rows = []
    for i, home in enumerate(ids):
        cells = []
        for j in range(len(ids)):
            n = float(games[i, j])
            rate: Optional[float] = float(rates[i, j]) if n > 0 and n >= known else None
            text = '' if rate is None else f'{rate:.2f}'
            tip = f'{home} vs {ids[j]}: {n:.0f} games' + ('' if rate is None else f', win rate {rate:.3f}')
            cells.append(f'<td style="background:{win_rate_colour(rate)}" title="{html.escape(tip)}">{text}</td>')
        rows.append(f'<tr><th>{html.escape(home)}</th>{"".join(cells)}</tr>')
    shown = len(ids)
    total = len(league.roster)
    note = (f'<p class="note">Win rate of the row player against the column player (wins plus half the draws '
            f'count as in the league\'s payoff); grey: fewer than {known:g} games.'
            + (f' Showing {shown} of {total} players: the active and reference ones and the newest snapshots.'
               if shown < total else '') + '</p>')
    return note + f'<table class="payoff"><tr><th></th>{cols}</tr>{"".join(rows)}</table>'


def _rating_points(course: Dict[str, list], key: str):
    """Per player ``[(env_steps, value)]`` of rating ``key`` from the recorded evaluations."""
    series: Dict[str, list] = {}
    for entry in course.get('evaluations', []):
        for pid, rating in entry.get('ratings', {}).items():
            if rating.get(key) is not None:
                series.setdefault(pid, []).append((entry['env_steps'], rating[key]))
    return series


def _ratings(league, course: Dict[str, list]) -> str:
    parts = []
    if league.ratings.elo is not None:
        parts.append(line_chart(_rating_points(course, 'elo'), 'Elo', 'env steps', 'Elo'))
    if league.ratings.trueskill is not None:
        mus = _rating_points(course, 'trueskill_mu')
        sigmas = _rating_points(course, 'trueskill_sigma')
        bands = {pid: [(mu - s, mu + s) for (_, mu), (_, s) in zip(points, sigmas.get(pid, []))]
                 for pid, points in mus.items()}
        parts.append(line_chart(mus, 'TrueSkill mu (band: ± sigma)', 'env steps', 'mu', bands=bands))
    if not parts:
        return '<p class="note">This league keeps no rating.</p>'
    return ''.join(parts)


def _lineage(league, course: Dict[str, list], facts: Dict[str, Any]) -> str:
    rows: Dict[str, List[dict]] = {p.player_id: [] for p in league.active_players}
    for event in course.get('snapshots', []):
        events = rows.setdefault(event['player'], [])
        index = len([e for e in events if e['kind'] == 'snapshot']) + 1
        events.append(dict(x=event['env_steps'], kind='snapshot', short=index, label=event['snapshot'],
                           detail=f'iteration {event["iteration"]}, {event["env_steps"]} env steps'))
        if event.get('reset'):
            events.append(dict(x=event['env_steps'], kind='reset', label=f'{event["player"]} reset',
                               detail=f'after snapshot {event["snapshot"]}'))
    end = float(facts.get('env steps') or 0)
    picture = timeline(rows, end, 'Snapshots (numbered dots) and resets (red bars)', 'env steps')
    listed = []
    for player in league.active_players:
        snapshots = league.roster.snapshots_of(player.player_id).players
        names = ', '.join(f'{s.player_id} (step {s.step})' for s in snapshots) or 'none yet'
        resets = getattr(player, 'reset_count', 0)
        listed.append(f'<li><b>{html.escape(player.player_id)}</b>: {len(snapshots)} snapshots, {resets} resets: '
                      f'{html.escape(names)}</li>')
    return picture + f'<ul class="lineage">{"".join(listed)}</ul>'


def _exploitability(course: Dict[str, list]) -> str:
    series: Dict[str, list] = {}
    for entry in course['exact']:
        series.setdefault('meta-strategy', []).append((entry['env_steps'], entry['meta_exploitability']))
        for pid, value in entry.get('exploitability', {}).items():
            series.setdefault(pid, []).append((entry['env_steps'], value))
    return line_chart(series, 'Exact exploitability (0: a Nash equilibrium)', 'env steps', 'exploitability')


def _opponents(course: Dict[str, list]) -> str:
    evaluations = course.get('evaluations', [])
    if not evaluations:
        return '<p class="note">No evaluation yet.</p>'
    series: Dict[str, list] = {}
    last: Dict[str, dict] = {}
    for entry in evaluations:
        last[entry['player']] = entry
        for oid, s in entry['results'].items():
            series.setdefault(f'{entry["player"]} vs {oid}', []).append((entry['env_steps'], s['win']))
    chart = line_chart(series, 'Win rate against each evaluation opponent', 'env steps', 'win rate',
                       y_range=(0.0, 1.0), width=760)
    head = '<tr><th>player</th><th>opponent</th><th>win</th><th>draw</th><th>loss</th><th>games</th><th>env steps</th></tr>'
    body = ''.join(f'<tr><td>{html.escape(pid)}</td><td>{html.escape(oid)}</td><td>{s["win"]:.1%}</td>'
                   f'<td>{s["draw"]:.1%}</td><td>{s["loss"]:.1%}</td><td>{int(s["games"])}</td>'
                   f'<td>{entry["env_steps"]}</td></tr>'
                   for pid, entry in last.items() for oid, s in entry['results'].items())
    return chart + '<p class="note">The last evaluation of each player:</p>' + f'<table>{head}{body}</table>'
