"""Connect four by expert iteration whose training games start from random positions.

The expert-iteration config of ``connect_four_search.py`` (moves chosen by 50 simulations of PUCT guided
by the player's network, which learns the search's visits and the game's result) with each training game
started after k uniformly random plies, k drawn per game from 0..30 (``env.random_opening_plies``, as in
``connect_four_perfect_levers.py``; evaluation games still start from the empty board): judged by perfect
play (docs/guides/perfect-play.md), self-play alone keeps to the positions its own games lead to and errs
often on those random play reaches. Its measured figures are in that guide.

``battle.collect_search.exact_value_empty_cells`` = N (off here) fits the value to the solver's exact outcome
in positions with at most N empty cells instead of to the game's result (needs the ``perfect`` extra).
"""
import copy

from sparring.dizoo.board_games.config.connect_four_search import config as search_config

config = copy.deepcopy(search_config)
config['exp_name'] = 'runs/connect_four_search_openings'
config['env'].update(random_opening_plies=[0, 30])
