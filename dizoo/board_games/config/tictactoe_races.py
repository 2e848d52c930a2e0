"""An AlphaStar league on tic-tac-toe with two player categories ("races") that meet.

The same game and spaces for both categories, separate populations: each category has its own main
player and main exploiter (``player_category``), each with its own network. As in AlphaStar, the main
players self-play against the main players of both categories, PFSP draws from the snapshots of both,
and each main exploiter trains against the main players of both; the league table, the report's
"payoff between categories" table and TensorBoard (``league/category/...``) show how the two
populations fare against each other. The policy's settings are those of the ready tic-tac-toe league.
"""
import copy

from sparring.dizoo.board_games.config.tictactoe_league import config as tictactoe_league

config = copy.deepcopy(tictactoe_league)
config['exp_name'] = 'runs/tictactoe_races'
config['league'] = dict(
    type='alphastar',
    player_category=['red', 'blue'],
    active_players=dict(main_player=1, main_exploiter=1),
    players=dict(main_player=dict(one_phase_step=100), main_exploiter=dict(one_phase_step=100)),
    reference_players=config['league']['reference_players'],
)
