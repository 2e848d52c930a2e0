"""The report page's last evaluations say how many distinct games each one played, and a note names the
ones whose games repeated ("N distinct of M"); a course recorded without the counts shows neither."""
import re

from sparring.league import OneVsOneLeague
from sparring.league.report_page import render_report


def _page(results: dict) -> str:
    league = OneVsOneLeague(dict(reference_players=[dict(player_id='random', param_ref='bot:random', anchor=True)]))
    course = dict(evaluations=[dict(env_steps=640, seconds=3.0, player='naive_sp_0', results=results,
                                    ratings={'naive_sp_0': dict(elo=1200.0, trueskill_mu=None, trueskill_sigma=None)})],
                  snapshots=[], exact=[])
    page = render_report(league, course, {'run': 'r', 'env steps': 640})
    return page[page.index('Against the evaluation opponents'):]


def _rows(section: str):
    table = section[section.index('<table>'):section.index('</table>')]
    return re.findall(r'<th>([^<]*)</th>', table), re.findall(r'<tr>((?:<td>[^<]*</td>)+)</tr>', table)


def test_the_last_evaluations_show_their_distinct_games_and_a_note_names_the_repeated_ones():
    section = _page({'random': dict(win=0.5, draw=0.25, loss=0.25, games=20, distinct_games=20),
                     'heuristic': dict(win=0.0, draw=0.5, loss=0.5, games=20, distinct_games=2)})
    headers, rows = _rows(section)
    assert headers == ['player', 'opponent', 'win', 'draw', 'loss', 'games', 'distinct games', 'env steps']
    cells = [re.findall(r'<td>([^<]*)</td>', row) for row in rows]
    assert [(c[1], c[5], c[6]) for c in cells] == [('random', '20', '20'), ('heuristic', '20', '2')]
    note = re.search(r'<p class="note"><b>distinct games</b>: (.*?)</p>', section).group(1)
    assert 'naive_sp_0 vs heuristic, 2 distinct of 20' in note and 'vs random' not in note


def test_a_course_without_counts_shows_no_column_and_no_note():
    section = _page({'random': dict(win=0.5, draw=0.25, loss=0.25, games=4)})
    headers, _ = _rows(section)
    assert 'distinct games' not in headers and 'distinct of' not in section


def test_no_note_where_every_game_differed():
    section = _page({'random': dict(win=0.5, draw=0.25, loss=0.25, games=4, distinct_games=4)})
    assert 'distinct games' in _rows(section)[0] and 'distinct of' not in section


def test_the_win_rate_curves_carry_their_95_percent_interval():
    from sparring.league.report_page import win_rate_interval
    section = _page({'random': dict(win=0.5, draw=0.0, loss=0.5, games=100)})
    assert '<polygon' in section and '95 % interval' in section
    low, high = win_rate_interval(0.5, 100)
    assert (round(low, 3), round(high, 3)) == (0.402, 0.598)  # 100 games: about +- 10 points
    assert win_rate_interval(1.0, 20) == (1.0, 1.0) and win_rate_interval(0.9, 4)[1] == 1.0
