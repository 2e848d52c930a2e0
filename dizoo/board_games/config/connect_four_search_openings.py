"""Connect four by expert iteration whose training games start from random positions.

The expert-iteration config of ``connect_four_search.py`` (moves chosen by 50 simulations of PUCT guided
by the player's network, which learns the search's visits and the game's result) with each training game
started after k uniformly random plies, k drawn per game from 0..30 (``env.random_opening_plies``, as in
``connect_four_perfect_levers.py``; evaluation games still start from the empty board): judged by perfect
play (docs/guides/perfect-play.md), self-play alone keeps to the positions its own games lead to and errs
often on those random play reaches. At 409,600 env steps (seed 0), on the guide's reported position set, its
search of 100 errs on 0.8-1.0 % of the positions decided within 13 plies (the PPO league with the same
openings at 1M env steps: 1.5-2.3 %), the network alone on 2.6-18.2 % (most on end positions), and it wins
64 % of its games against MCTS-100 from the empty board.

``battle.collect_search.exact_value_empty_cells`` = N (off here) fits the value to the solver's exact outcome
in positions with at most N empty cells instead of to the game's result, and ``exact_policy_empty_cells`` = N
(off here) the policy to the solver's outcome-best moves instead of to the search's visits (both need the
``perfect`` extra; docs/guides/perfect-play.md has their probes).
"""
import copy

from sparring.dizoo.board_games.config.connect_four_search import config as search_config

config = copy.deepcopy(search_config)
config['exp_name'] = 'runs/connect_four_search_openings'
config['env'].update(random_opening_plies=[0, 30])
