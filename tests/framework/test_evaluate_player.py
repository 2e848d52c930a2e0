"""load_player and ``sparring eval``: a trained player against bots, other runs' players and snapshots."""
import json
import math

import numpy as np
import pytest

import sparring
from sparring.framework.cli import main
from sparring.framework.player_loader import TrainedRun
from sparring.league.errors import LeagueError
from sparring.framework.evaluate_player import elo_difference, evaluate_player, outcome_statistics


@pytest.mark.slow
def test_load_player_returns_the_first_active_player_acting_on_observations(trained_tictactoe, one_torch_thread):
    run_dir, _ = trained_tictactoe
    policy = sparring.load_player(run_dir)
    obs = np.zeros((1, 3, 3, 3), np.float32)
    obs[:, 2] = 1.0  # to move, empty board
    mask = np.ones((1, 9), bool)
    mask[0, 4] = False
    out = policy.act(obs, action_mask=mask, deterministic=True)
    assert out.action.shape == (1,) and out.action[0] != 4
    with pytest.raises(LeagueError, match='no player'):
        sparring.load_player(run_dir, player='nobody')


def test_eval_against_random_gives_the_rate_of_the_leagues_own_evaluation(trained_tictactoe, tmp_path,
                                                                           one_torch_thread, capsys):
    run_dir, summary = trained_tictactoe
    (pid, league_eval), = summary['eval'].items()
    out = tmp_path / 'eval.json'
    assert main(['eval', run_dir, '--against', 'bot:random', 'bot:tictactoe_heuristic', '--out', str(out)]) == 0
    printed = capsys.readouterr().out
    assert 'vs bot:random: win' in printed and 'Elo' in printed
    report = json.loads(out.read_text())
    assert report['player'] == pid and report['games'] == 20
    for label, league_id in (('bot:random', 'random'), ('bot:tictactoe_heuristic', 'tictactoe_heuristic')):
        mine, theirs = report['opponents'][label], league_eval[league_id]
        assert (mine['win'], mine['draw'], mine['loss']) == (theirs['win'], theirs['draw'], theirs['loss'])
        assert mine['games'] == theirs['games'] == 20
        # the same games split by the player's seat: ten from each, their wins adding up to the whole
        seats = mine['by_seat']
        assert sorted(seats) == ['0', '1'] and seats['0']['games'] == seats['1']['games'] == 10
        assert (seats['0']['win'] + seats['1']['win']) / 2 == pytest.approx(mine['win'])
    assert 'as seat 0: win' in printed and 'as seat 1: win' in printed


def test_eval_against_another_runs_player_and_a_snapshot(trained_tictactoe, one_torch_thread):
    run_dir, _ = trained_tictactoe
    run = TrainedRun(run_dir)
    snapshot = run.league.historical_players[0].player_id
    report = evaluate_player(run_dir, [f'{run_dir}:{run.active_ids[0]}', snapshot], games=8, sampled=True, seed=5)
    for stats in report['opponents'].values():
        assert stats['games'] == 8
        assert stats['win'] + stats['draw'] + stats['loss'] == pytest.approx(1.0)
    assert main(['eval', run_dir, '--against', 'nobody']) == 2


def test_outcome_statistics_give_standard_errors_and_an_elo_interval():
    stats = outcome_statistics(['win'] * 6 + ['draw'] * 2 + ['loss'] * 2)
    assert stats['win'] == 0.6 and stats['win_se'] == pytest.approx(math.sqrt(0.6 * 0.4 / 10))
    assert stats['score'] == pytest.approx(0.7)
    assert stats['elo'] == pytest.approx(400 * math.log10(0.7 / 0.3))
    assert stats['elo_low'] < stats['elo'] < stats['elo_high']
    assert elo_difference(1.0) == math.inf and elo_difference(0.5) == 0.0
    assert outcome_statistics(['win'] * 4)['elo_high'] == math.inf


@pytest.mark.slow
def test_import_sparring_stays_cheap():
    """load_player is imported on first use: ``import sparring`` alone loads neither torch nor the framework."""
    import subprocess
    import sys
    code = ("import sys, sparring; assert 'torch' not in sys.modules and 'sparring.framework' not in sys.modules; "
            "assert callable(sparring.load_player) and 'sparring.framework.player_loader' in sys.modules")
    subprocess.run([sys.executable, '-c', code], check=True)


@pytest.mark.slow
def test_eval_with_a_guided_search_plays_at_least_as_well_as_the_network(trained_tictactoe, one_torch_thread, capsys):
    run_dir, _ = trained_tictactoe
    against = ['bot:random', 'bot:tictactoe_heuristic']
    alone = evaluate_player(run_dir, against, games=20)
    assert main(['eval', run_dir, '--against', *against, '--games', '20', '--search', '100']) == 0
    assert 'guided search of 100 simulations' in capsys.readouterr().out
    searched = evaluate_player(run_dir, against, games=20, search=100)
    assert searched['search'] == 100 and alone['search'] is None
    assert searched['opponents']['bot:random']['loss'] == 0.0  # every immediate win and block is in its tree
    for name in against:
        assert searched['opponents'][name]['score'] >= alone['opponents'][name]['score']
    assert main(['eval', run_dir, '--against', 'bot:random', '--search', '0']) == 2
