"""`make demo`: the connect-four league of ``connect_four_league.py``, cut to about three minutes.

It ends by printing the league table, each player's results against the bots, and the paths of
the payoff heatmap and rating pictures in the experiment directory.
"""
import copy

from sparring.dizoo.board_games.config.connect_four_league import config as league_config

config = copy.deepcopy(league_config)
config['exp_name'] = 'runs/connect_four_demo'
config['env'].update(n_evaluator_episodes=100)
config['train'].update(max_wall_seconds=180.0, eval_every_iters=25, checkpoint_every_iters=50)
