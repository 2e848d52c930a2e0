"""The league report page: one self-contained HTML file (inline CSS and SVG, no script, nothing fetched).

:func:`render_report` turns a league and the run's recorded course into the page:

* the league table (every player: kind, origin, training iteration, the run's env steps when it was
  taken or now, games, win rate, Elo, TrueSkill; columns with nothing in them left out), with what its
  game counts count and how they relate to TensorBoard's;
* the payoff heatmap over all players, historical and reference ones too, the win rate written in
  each cell (grey where too few games were played for a rate); with several player categories, the payoff
  between categories (category x category win rates) and a category column in the league table;
* rating curves against env steps: Elo, and TrueSkill mu with its sigma band when it is on;
* the snapshot lineage: each active player's snapshots and resets along the env steps;
* exploitability curves where the run computes them exactly;
* results against each evaluation opponent (bots): the curves of win rates with their 95 % intervals and
  the last evaluation, with how many distinct games it played (a note names the pairs whose games repeated).

``course`` is a dict of lists recorded as the run goes (see :class:`sparring.framework.league_watch.LeagueWatch`):
``evaluations`` (env_steps, player, results per opponent, ratings per player), ``snapshots``
(env_steps, player, snapshot, iteration, reset) and ``exact`` (env_steps, meta_exploitability,
exploitability per player).

:func:`render_return_report` is the page of a single-agent run: its evaluation returns against env steps.
"""
from __future__ import annotations

import html
import math
from typing import Any, Dict, List, Tuple

from sparring.league.report import category_rows, filled_columns, league_rows, table_headers
from sparring.league.svg_chart import CHART_CSS, heatmap, line_chart, timeline
from sparring.league.text_table import _cell

MAX_HEATMAP_PLAYERS = 120  # beyond: the active and reference players and the newest snapshots

STYLE = """
body { font-family: sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.facts td { border: none; padding: 1px 12px 1px 0; }
.note { color: #666; font-size: 13px; }
""" + CHART_CSS


def render_report(league, course: Dict[str, list], facts: Dict[str, object]) -> str:
    """The page as a string (see the module docstring)."""
    title = f'League report: {facts.get("run", "")}'
    sections = [f'<h1>{html.escape(title)}</h1>', _facts(facts),
                '<h2>League table</h2>', _league_table(league, course, facts),
                '<h2>Payoff</h2>', _payoff(league),
                *(['<h2>Payoff between categories</h2>', _category_payoff(league)] if len(league.categories) > 1
                  else []),
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


GAMES_NOTE = ('<p class="note"><b>iteration</b>: the training iteration a player had reached (a snapshot: when it '
              'was taken); <b>env steps</b>: the run\'s env steps at that moment (an active player: now), the unit of '
              'the charts below. <b>games</b> and <b>win rate</b>: every game a player played against the other '
              'players, counted whole (training games against snapshots and other active players, and the rated '
              'evaluation games against the reference players){decay}; its games against itself are under '
              '<b>self-play</b>. TensorBoard counts otherwise, self-play included: <code>train/&lt;player&gt;/games</code> '
              '(a serial run) is the games collected in one round and <code>run/games</code> (a parallel run) all the '
              'games collected so far; <code>eval/&lt;player&gt;/vs_&lt;opponent&gt;/games</code> is the games of one '
              'evaluation, against unrated opponents too.</p>')


def _league_table(league, course: Dict[str, list], facts: Dict[str, Any]) -> str:
    """The league table with env steps beside the iterations, its empty columns left out."""
    taken_at = {e['snapshot']: e['env_steps'] for e in course.get('snapshots', [])}
    now = facts.get('env steps')
    headers = table_headers(league)
    iteration = headers.index('step')
    headers = headers[:iteration] + ['iteration', 'env steps'] + headers[iteration + 1:]
    rows = []
    for row in league_rows(league):
        player = league.get_player(row['player_id'])
        if row['kind'] == 'active':
            steps = now
        elif row['kind'] == 'historical':
            steps = taken_at.get(row['player_id'], 0 if player.step == 0 else None)
        else:
            steps = None
        cells = list(row['cells'])
        if row['kind'] == 'reference':
            cells[iteration] = None  # a bot or a fixed player never trains: no iteration to show
        rows.append(cells[:iteration + 1] + [steps] + cells[iteration + 1:])
    keep = filled_columns(rows)
    head = ''.join(f'<th>{html.escape(headers[i])}</th>' for i in keep)
    body = ''.join('<tr>' + ''.join(f'<td>{html.escape(_cell(row[i]))}</td>' for i in keep) + '</tr>'
                   for row in rows)
    decay = getattr(league.payoff, 'decay', 1.0)
    faded = '' if decay >= 1.0 else f' (the payoff below fades the older games of each pair, by {decay:g} a game)'
    return f'<table class="league"><tr>{head}</tr>{body}</table>' + GAMES_NOTE.format(decay=faded)


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
    shown = len(ids)
    total = len(league.roster)
    note = (f'<p class="note">Win rate of the row player against the column player (wins plus half the draws '
            f'count as in the league\'s payoff); grey: fewer than {known:g} games; each cell\'s tooltip gives its '
            f'games.' + (f' Showing {shown} of {total} players: the active and reference ones and the newest snapshots.'
                         if shown < total else '') + '</p>')
    return note + heatmap(ids, ids, rates, games, known, 'Win rate (row against column)')


CATEGORY_NOTE = ('<p class="note">The win rate of the players of the row\'s category (active and snapshots) against '
                 'those of the column\'s, over all their games as the payoff holds them, with the (decayed) games in '
                 'brackets; games within one category count from both sides, so its own cell reads 0.5.</p>')


def _category_payoff(league) -> str:
    head = ''.join(f'<th>{html.escape(c)}</th>' for c in ['category'] + league.categories)
    body = ''.join('<tr>' + ''.join(f'<td>{html.escape(_cell(v))}</td>' for v in row) + '</tr>'
                   for row in category_rows(league))
    return CATEGORY_NOTE + f'<table class="categories"><tr>{head}</tr>{body}</table>'


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
        parts.append(line_chart(_rating_points(course, 'elo'), 'Elo', 'env steps', 'Elo', x_from_zero=True))
    if league.ratings.trueskill is not None:
        mus = _rating_points(course, 'trueskill_mu')
        sigmas = _rating_points(course, 'trueskill_sigma')
        bands = {pid: [(mu - s, mu + s) for (_, mu), (_, s) in zip(points, sigmas.get(pid, []))]
                 for pid, points in mus.items()}
        parts.append(line_chart(mus, 'TrueSkill mu (band: ± sigma)', 'env steps', 'mu', bands=bands, x_from_zero=True))
    if not parts:
        return '<p class="note">This league keeps no rating.</p>'
    return ''.join(parts)


def _lineage(league, course: Dict[str, list], facts: Dict[str, Any]) -> str:
    rows: Dict[str, List[dict]] = {p.player_id: [] for p in league.active_players}
    recorded = set()
    for event in course.get('snapshots', []):
        recorded.add(event['snapshot'])
        events = rows.setdefault(event['player'], [])
        events.append(dict(x=event['env_steps'], kind='snapshot', label=event['snapshot'],
                           detail=f'iteration {event["iteration"]}, {event["env_steps"]} env steps'))
        if event.get('reset'):
            events.append(dict(x=event['env_steps'], kind='reset', label=f'{event["player"]} reset',
                               detail=f'after snapshot {event["snapshot"]}'))
    for player in league.active_players:  # snapshots taken before any step (``_h0``) are in no recorded event
        for snapshot in league.roster.snapshots_of(player.player_id).players:
            if snapshot.player_id not in recorded and snapshot.step == 0:
                rows[player.player_id].append(dict(x=0, kind='snapshot', label=snapshot.player_id,
                                                   detail='iteration 0, 0 env steps (the initial parameters)'))
    for pid, events in rows.items():
        events.sort(key=lambda e: (e['x'], e['kind'] != 'snapshot'))
        for event in events:
            if event['kind'] == 'snapshot':
                event['short'] = _short_name(event['label'], pid)
    end = float(facts.get('env steps') or 0)
    picture = timeline(rows, end, 'Snapshots (numbered dots) and resets (red bars)', 'env steps')
    listed = []
    for player in league.active_players:
        snapshots = league.roster.snapshots_of(player.player_id).players
        names = ', '.join(f'{s.player_id} (iteration {s.step})' for s in snapshots) or 'none yet'
        resets = getattr(player, 'reset_count', 0)
        listed.append(f'<li><b>{html.escape(player.player_id)}</b>: {len(snapshots)} snapshots, {resets} resets: '
                      f'{html.escape(names)}</li>')
    return picture + f'<ul class="lineage">{"".join(listed)}</ul>'


def _short_name(snapshot_id: str, player_id: str) -> str:
    """A snapshot's label on its dot: ``h3`` for ``<player>_h3``, else the whole id."""
    prefix = f'{player_id}_'
    return snapshot_id[len(prefix):] if snapshot_id.startswith(prefix) else snapshot_id


def _exploitability(course: Dict[str, list]) -> str:
    """The exact analyses' chart: exploitability of a two-player game (the meta-strategy and each active player),
    or an entry's own ``measure`` by series (a game of three or more players: NashConv)."""
    series: Dict[str, list] = {}
    measure = 'exploitability'
    for entry in course['exact']:
        if 'values' in entry:
            measure = entry['measure']
            values = entry['values']
        else:
            values = dict({'meta-strategy': entry['meta_exploitability']}, **entry.get('exploitability', {}))
        for name, value in values.items():
            series.setdefault(name, []).append((entry['env_steps'], value))
    return line_chart(series, f'Exact {measure} (0: a Nash equilibrium)', 'env steps', measure, x_from_zero=True)


def _opponents(course: Dict[str, list]) -> str:
    evaluations = course.get('evaluations', [])
    if not evaluations:
        return '<p class="note">No evaluation yet.</p>'
    series: Dict[str, list] = {}
    bands: Dict[str, list] = {}
    last: Dict[str, dict] = {}
    for entry in evaluations:
        last[entry['player']] = entry
        for oid, s in entry['results'].items():
            name = f'{entry["player"]} vs {oid}'
            series.setdefault(name, []).append((entry['env_steps'], s['win']))
            bands.setdefault(name, []).append(win_rate_interval(s['win'], s['games']))
    chart = line_chart(series, 'Win rate against each evaluation opponent (shaded: its 95 % interval over the games '
                       'played)', 'env steps', 'win rate', y_range=(0.0, 1.0), width=760, x_from_zero=True,
                       bands=bands)
    shown = [(pid, entry, oid, s) for pid, entry in last.items() for oid, s in entry['results'].items()]
    counted = any(s.get('distinct_games') is not None for *_, s in shown)  # evaluations of older runs did not count
    head = ('<tr><th>player</th><th>opponent</th><th>win</th><th>draw</th><th>loss</th><th>games</th>'
            + ('<th>distinct games</th>' if counted else '') + '<th>env steps</th></tr>')
    body = ''.join(f'<tr><td>{html.escape(pid)}</td><td>{html.escape(oid)}</td><td>{s["win"]:.1%}</td>'
                   f'<td>{s["draw"]:.1%}</td><td>{s["loss"]:.1%}</td><td>{int(s["games"])}</td>'
                   + (f'<td>{_cell(s.get("distinct_games"))}</td>' if counted else '')
                   + f'<td>{entry["env_steps"]}</td></tr>'
                   for pid, entry, oid, s in shown)
    return (chart + '<p class="note">The last evaluation of each player:</p>' + f'<table>{head}{body}</table>'
            + _repeated_note(shown))


REPEATED_NOTE = ('<p class="note"><b>distinct games</b>: how many of the games differed (each game fingerprinted '
                 'step by step). Greedy players in a game without chance repeat the same few games, so these rates '
                 'rest on fewer games than they count: {repeated}. <code>sparring eval RUN --sampled</code> plays '
                 'varied games.</p>')


def win_rate_interval(rate: float, games: float) -> Tuple[float, float]:
    """The 95 % interval of a win rate over ``games`` games (normal approximation: ``rate +- 1.96`` standard
    errors, within [0, 1]); 100 games at a rate of one half span about +- 0.1."""
    spread = 1.96 * math.sqrt(rate * (1.0 - rate) / games) if games > 0 else 0.5
    return max(0.0, rate - spread), min(1.0, rate + spread)


def _repeated_note(shown) -> str:
    """A note naming the evaluations whose games repeated ("N distinct of M"); '' where none did."""
    repeated = [f'{pid} vs {oid}, {s["distinct_games"]} distinct of {int(s["games"])}' for pid, _, oid, s in shown
                if s.get('distinct_games') is not None and s['distinct_games'] < s['games']]
    return REPEATED_NOTE.format(repeated=html.escape('; '.join(repeated))) if repeated else ''


def render_return_report(course: Dict[str, list], facts: Dict[str, object]) -> str:
    """The page of a single-agent run: its evaluation returns against env steps, and the table of them."""
    title = f'Run report: {facts.get("run", "")}'
    entries = course.get('returns', [])
    series = {'mean return': [(e['env_steps'], e['mean']) for e in entries]}
    bands = {'mean return': [(e['mean'] - e['std'], e['mean'] + e['std']) for e in entries]}
    chart = line_chart(series, 'Evaluation return (band: ± one standard deviation of the episodes)', 'env steps',
                       'return', bands=bands, width=760, x_from_zero=True)
    head = ('<tr><th>env steps</th><th>seconds</th><th>mean return</th><th>standard error</th><th>std</th>'
            '<th>episodes</th></tr>')
    body = ''.join(f'<tr><td>{e["env_steps"]}</td><td>{e["seconds"]:.1f}</td><td>{e["mean"]:.2f}</td>'
                   f'<td>{_standard_error(e)}</td><td>{e["std"]:.2f}</td><td>{e["episodes"] or "-"}</td></tr>'
                   for e in entries)
    note = ('<p class="note">Each evaluation plays its episodes greedily on the evaluation envs; the standard error '
            'of its mean is the spread over the square root of the episodes (<code>sparring eval RUN</code> plays '
            'more, greedy and sampled).</p>')
    sections = [f'<h1>{html.escape(title)}</h1>', _facts(facts), '<h2>Return</h2>', chart, note,
                f'<table>{head}{body}</table>']
    return ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>' + html.escape(title) + '</title><style>'
            + STYLE + '</style></head><body>' + '\n'.join(sections) + '</body></html>\n')


def _standard_error(entry: dict) -> str:
    n = entry.get('episodes') or 0
    return f'{entry["std"] / (n - 1) ** 0.5:.2f}' if n > 1 else '-'
