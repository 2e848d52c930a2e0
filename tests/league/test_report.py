"""The league table as text and the PNG pictures."""
import sys

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


@pytest.mark.slow
def test_plots_write_png_files(tmp_path):
    pytest.importorskip('matplotlib')
    league = played_league()
    for path in (league.plot_payoff(str(tmp_path / 'payoff.png')),
                 league.plot_ratings(str(tmp_path / 'elo.png')),
                 league.plot_ratings(str(tmp_path / 'trueskill.png'), system='trueskill')):
        with open(path, 'rb') as f:
            assert f.read(8) == b'\x89PNG\r\n\x1a\n'
    with pytest.raises(ValueError, match='disabled'):
        OneVsOneLeague().plot_ratings(str(tmp_path / 'x.png'), system='trueskill')


def test_missing_matplotlib_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)
    with pytest.raises(ImportError, match=r'pip install sparring\[league\]'):
        OneVsOneLeague().plot_payoff(str(tmp_path / 'payoff.png'))
