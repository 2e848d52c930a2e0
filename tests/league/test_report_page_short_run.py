"""The report page after the shortest run a newcomer makes (one evaluation, one snapshot): a readable x axis
from 0, every snapshot with its dot, env steps beside the iterations, no all-dash column, the counts
explained."""
import re

from sparring.league import OneVsOneLeague
from sparring.league.report_page import render_report
from sparring.league.svg_chart import line_chart


def short_league():
    league = OneVsOneLeague(dict(reference_players=[dict(player_id='random', param_ref='bot:random', anchor=True)]))
    league.finish_job(dict(player_ids=['naive_sp_0', 'random'], result=['win', 'draw', 'loss', 'win']))
    return league


def one_evaluation_course(env_steps=104_448):
    return dict(evaluations=[dict(env_steps=env_steps, seconds=30.0, player='naive_sp_0',
                                  results={'random': dict(win=0.5, draw=0.25, loss=0.25, games=4)},
                                  ratings={'naive_sp_0': dict(elo=1210.0, trueskill_mu=None, trueskill_sigma=None)})],
                snapshots=[], exact=[])


def x_ticks(svg: str):
    return re.findall(r'class="tick" text-anchor="middle">([^<]*)<', svg)


def test_one_point_gets_an_axis_from_zero_and_keeps_off_the_y_axis():
    svg = line_chart({'a': [(104_448, 0.5)]}, 'title', 'env steps', 'win rate', y_range=(0.0, 1.0))
    ticks = x_ticks(svg)
    assert ticks[0] == '0' and len(set(ticks)) == len(ticks) > 1, ticks
    axis_x = float(re.search(r'<line x1="([\d.]+)" y1="[\d.]+" x2="\1"', svg).group(1))
    (point_x,) = [float(x) for x in re.findall(r'<circle cx="([\d.]+)"', svg)]
    assert point_x > axis_x + 50


def test_the_first_point_of_a_chart_is_not_drawn_on_the_y_axis():
    svg = line_chart({'a': [(640, 0.2), (1280, 0.4)]}, 'title', 'env steps', 'win rate')
    axis_x = float(re.search(r'<line x1="([\d.]+)" y1="[\d.]+" x2="\1"', svg).group(1))
    assert min(float(x) for x in re.findall(r'<circle cx="([\d.]+)"', svg)) > axis_x


def test_a_short_runs_page_reads_in_env_steps_and_shows_the_initial_snapshot():
    page = render_report(short_league(), one_evaluation_course(), {'run': 'r', 'env steps': 104_448})
    assert '104.448k' not in page
    table = page[page.index('<table class="league">'):page.index('</table>', page.index('<table class="league">'))]
    headers = re.findall(r'<th>([^<]*)</th>', table)
    assert 'iteration' in headers and 'env steps' in headers and 'step' not in headers
    assert 'trueskill' not in headers  # TrueSkill is off: no column of dashes
    active = re.search(r'<tr><td>naive_sp_0</td>(.*?)</tr>', table).group(1)
    assert '<td>104448</td>' in active  # the active player's env steps: the run's now
    lineage = page[page.index('Snapshot lineage'):]
    assert re.search(r'<circle [^>]*><title>naive_sp_0_h0: ', lineage), 'the initial snapshot gets its dot'
    assert 'TensorBoard counts otherwise' in page and 'self-play' in page


def test_a_single_agent_page_draws_its_returns():
    from sparring.league.report_page import render_return_report
    course = dict(returns=[dict(env_steps=640, seconds=1.0, mean=20.0, std=4.0, episodes=5),
                           dict(env_steps=1280, seconds=2.0, mean=40.0, std=8.0, episodes=5)])
    page = render_return_report(course, {'run': 'r', 'env': 'CartPole-v1'})
    assert page.count('<circle') == 2 and '<polygon' in page  # the mean and its spread
    assert '<td>1280</td>' in page and '<td>4.00</td>' in page  # the standard error: 8 / sqrt(5 - 1)


def test_one_rating_value_gets_round_ticks():
    svg = line_chart({'elo': [(34_304, 1473.9)]}, 'Elo', 'env steps', 'Elo', x_from_zero=True)
    y_ticks = re.findall(r'class="tick" text-anchor="end">([^<]*)<', svg)
    assert len(y_ticks) >= 2 and all(len(t) <= 5 for t in y_ticks), y_ticks  # 1.4k, 1.45k ... not 1.4735k


def test_a_long_series_is_a_line_without_dots():
    from sparring.league.svg_chart import MAX_DOTS
    svg = line_chart({'elo': [(x, float(x)) for x in range(MAX_DOTS + 1)]}, 'Elo', 'training step', 'Elo')
    assert svg.count('<polyline') == 1 and '<circle' not in svg  # dots would hide the line
    svg = line_chart({'elo': [(x, float(x)) for x in range(MAX_DOTS)]}, 'Elo', 'training step', 'Elo')
    assert svg.count('<circle') == MAX_DOTS
