"""A parallel league run with two player categories: a learner per player of each category, the categories
meet, TensorBoard plots the win rate between them and the report page and saved league show them."""
import glob
import os

import pytest

from sparring.league import BaseLeague
from tests.configs import fast_parallel, tiny_league_config


@pytest.mark.slow
def test_a_parallel_run_with_two_categories(tmp_path):
    from sparring.framework import parallel_pipeline
    from tests.framework.test_league_watch import read_events
    run_dir = str(tmp_path / 'races')
    config = tiny_league_config(
        run_dir, league=dict(player_category=['red', 'blue']),
        train=dict(max_env_steps=1500, eval_every_iters=3, checkpoint_every_iters=4, tensorboard=True),
        parallel=fast_parallel())
    parallel_pipeline(config)
    league = BaseLeague.load(os.path.join(run_dir, 'league_state.npz'))
    assert [(p.player_id, p.category) for p in league.active_players] == [('naive_sp_red_0', 'red'),
                                                                         ('naive_sp_blue_0', 'blue')]
    _, _, games = league.category_payoff()
    assert games[0, 1] > 0
    tags = {value.tag for path in glob.glob(os.path.join(run_dir, 'tb', '*.league'))
            for event in read_events(path) for value in event.summary.value}
    assert {'league/naive_sp_red_0/elo', 'league/naive_sp_blue_0/elo'} <= tags
    assert {'league/category/red/win_rate/blue', 'league/category/blue/win_rate/red'} <= tags
    page = open(os.path.join(run_dir, 'report.html'), encoding='utf-8').read()
    assert '<h2>Payoff between categories</h2>' in page and '<td>naive_sp_blue_0</td>' in page
