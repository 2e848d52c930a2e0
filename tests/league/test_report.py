"""The league table as text and the SVG pictures."""
import sys
from xml.etree import ElementTree

import pytest

from sparring.league import AlphaStarLeague, OneVsOneLeague


def played_league():
    pytest.importorskip('trueskill')
    league = AlphaStarLeague(dict(rating=dict(trueskill=dict(enabled=True)), players=dict(
        main_player=dict(one_phase_step=2), main_exploiter=dict(one_phase_step=2),
        league_exploiter=dict(one_phase_step=2)), reference_players=[dict(player_id='random_bot', elo=800.0)]))
    for step in range(1, 12):
        for player in league.active_players:
            league.update_active_player(dict(player_id=player.player_id, train_iteration=step))
            job = league.get_job_info(player.player_id, eval_flag=step % 4 == 0)
            league.finish_job(dict(player_ids=job['player_ids'], result=['win', 'loss', 'win']))
            league.judge_snapshot(player.player_id)
    return league


def test_league_table_lists_players_games_win_rates_and_ratings():
    league = played_league()
    text = league.table()
    lines = text.splitlines()
    header = ['player', 'kind', 'type / parent', 'step', 'games', 'self-play', 'win rate', 'elo', 'trueskill']
    assert [lines[0].index(h) for h in header] == sorted(lines[0].index(h) for h in header)
    assert len(lines) == 2 + len(league.roster)
    assert 'random_bot' in text and 'reference' in text and '±' in text
    elos = [float(line.split()[-4]) for line in lines[2:]]
    assert elos == sorted(elos, reverse=True)  # sorted by Elo
    assert str(league) == text
    joined = league.table(sort_by='joined').splitlines()
    assert joined[2].startswith('main_player_0 ')
    short = league.table(max_rows=3).splitlines()
    assert len(short) == 2 + 3 + 1 and short[-1] == f'... {len(league.roster) - 3} more players'
    with pytest.raises(ValueError, match='sort_by'):
        league.table(sort_by='name')


def test_pictures_are_svg_files_drawn_without_a_plotting_library(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)  # the base install draws them
    league = played_league()
    payoff = league.plot_payoff(str(tmp_path / 'payoff.png'))
    elo = league.plot_ratings(str(tmp_path / 'elo.svg'))
    trueskill = league.plot_ratings(str(tmp_path / 'trueskill.svg'), system='trueskill')
    assert (payoff, elo) == (str(tmp_path / 'payoff.svg'), str(tmp_path / 'elo.svg'))  # an SVG is named so
    svg = '{http://www.w3.org/2000/svg}'
    cells = ElementTree.parse(payoff).getroot().iter(f'{svg}rect')
    tips = [rect.findtext(f'{svg}title') for rect in cells if rect.findtext(f'{svg}title')]
    assert len(tips) == len(league.roster) ** 2  # every pair, its games in the tooltip
    rates, games = league.payoff.matrix(['main_player_0'], ['main_exploiter_0'])
    assert f'main_player_0 vs main_exploiter_0: {games[0, 0]:.0f} games, win rate {rates[0, 0]:.3f}' in tips
    for path, key in ((elo, 'elo'), (trueskill, 'trueskill_mu')):
        root = ElementTree.parse(path).getroot()
        assert root.find(f'{svg}style') is not None  # styled on its own, outside the report page
        lines = {line.findtext(f'{svg}title') for line in root.iter(f'{svg}line') if line.findtext(f'{svg}title')}
        assert lines == {f'random_bot: {league.ratings.summary("random_bot")[key]:.4g}'}  # the reference level
        polylines = list(root.iter(f'{svg}polyline'))
        assert len(polylines) == len(league.active_players)
    snapshot = league.historical_players[0]
    dots = [c.findtext(f'{svg}title') for c in ElementTree.parse(elo).getroot().iter(f'{svg}circle')]
    assert f'{snapshot.player_id}: {league.ratings.summary(snapshot.player_id)["elo"]:.4g} at {snapshot.step:g}' \
        in dots
    with pytest.raises(ValueError, match='disabled'):
        OneVsOneLeague().plot_ratings(str(tmp_path / 'x.svg'), system='trueskill')
    empty = ElementTree.parse(OneVsOneLeague().plot_ratings(str(tmp_path / 'empty.svg'))).getroot()
    assert 'nothing recorded yet' in ''.join(empty.itertext())


def test_each_reference_player_has_its_own_line_style_and_legend_swatch_in_the_ratings_picture(tmp_path):
    league = OneVsOneLeague(dict(reference_players=[dict(player_id='random', param_ref='bot:random'),
                                                    dict(player_id='heuristic', param_ref='bot:heuristic'),
                                                    dict(player_id='mcts', param_ref='bot:mcts')]))
    league.update_active_player(dict(player_id='naive_sp_0', train_iteration=1))
    league.record_eval_result('naive_sp_0', 'heuristic', ['loss'])
    svg = '{http://www.w3.org/2000/svg}'
    root = ElementTree.parse(league.plot_ratings(str(tmp_path / 'elo.svg'))).getroot()
    styles = {}
    for line in root.iter(f'{svg}line'):
        if line.get('stroke-dasharray'):
            styles.setdefault((line.get('stroke'), line.get('stroke-dasharray')), []).append(line.findtext(f'{svg}title'))
    assert len(styles) == 3  # three bots, three styles
    assert all(len(drawn) == 2 for drawn in styles.values())  # each: its level line and its legend swatch alike
