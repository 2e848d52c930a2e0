"""The ready two-category tic-tac-toe league (``tictactoe_races``) trains in serial mode, its categories meet,
the report shows the payoff between them, and a resumed run continues with every player's category."""
import os

import pytest
import torch

from sparring.framework import serial_pipeline
from sparring.framework.cli import load_config_file
from sparring.league import BaseLeague

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, 'dizoo', 'board_games', 'config', 'tictactoe_races.py')


def short(exp, max_env_steps):
    """The ready config cut to a few rounds of a test."""
    config = load_config_file(CONFIG)
    config['exp_name'] = str(exp)
    config['env'].update(collector_env_num=4, evaluator_env_num=2, n_evaluator_episodes=4)
    config['policy']['model'] = dict(hidden_sizes=[16])
    config['policy']['collect'] = dict(n_steps=8)
    config['policy']['learn'].update(epochs=1, num_minibatches=1)
    for player in config['league']['players'].values():
        player['one_phase_step'] = 2
    config['battle']['eval_opponents'] = []  # the reference players are evaluated anyway
    config['train'] = dict(max_env_steps=max_env_steps, eval_every_iters=3,
                           checkpoint_every_iters=3, progress_bar=False, tensorboard=False)
    return config


@pytest.mark.slow
def test_the_two_categories_train_meet_and_resume(tmp_path):
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    exp = tmp_path / 'races'
    try:
        serial_pipeline(short(exp, 4 * 32 * 6), seed=0)
        first = BaseLeague.load(str(exp / 'league_state.npz'))
        summary = serial_pipeline(short(exp, 4 * 32 * 9), seed=0, resume=True)
    finally:
        torch.set_num_threads(before)
    league = BaseLeague.load(str(exp / 'league_state.npz'))
    assert league.categories == ['red', 'blue']
    assert {p.player_id: p.category for p in league.active_players} == {
        'main_player_red_0': 'red', 'main_exploiter_red_0': 'red',
        'main_player_blue_0': 'blue', 'main_exploiter_blue_0': 'blue'}
    assert all(p.category == league.get_player(p.parent_id).category for p in league.historical_players)
    # the resumed run kept the first run's snapshots, with their categories, and took more
    kept = {p.player_id: p.category for p in first.historical_players}
    assert kept.items() <= {p.player_id: p.category for p in league.historical_players}.items()
    assert len(league.historical_players) > len(kept)
    _, _, games = league.category_payoff()
    assert games[0, 1] > 0 and games[1, 0] > 0  # red and blue met
    assert 'Payoff between categories' in summary['league_table']
    page = open(exp / 'report.html', encoding='utf-8').read()
    assert '<h2>Payoff between categories</h2>' in page and '<th>category</th>' in page
