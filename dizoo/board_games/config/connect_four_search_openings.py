"""Connect four by expert iteration whose training games start from random positions, learnt in small steps.

The expert-iteration config of ``connect_four_search.py`` (moves chosen by 50 simulations of PUCT guided
by the player's network, which learns the search's visits and the game's result) with each training game
started after k uniformly random plies, k drawn per game from 0..30 (``env.random_opening_plies``, as in
``connect_four_perfect_levers.py``; evaluation games still start from the empty board), and each chunk learnt
in 32 minibatches instead of 8 (the same samples and epochs, four times the optimiser's steps). Judged by
perfect play (docs/guides/perfect-play.md), self-play alone keeps to the positions its own games lead to and
errs often on those random play reaches; the openings and the smaller steps are the two levers that lowered
that. At 409,600 env steps (seed 0), on the guide's reported position set, the network alone errs on 13.2, 6.2
and 2.3 % of the end, middle and begin positions decided within 13 plies (8 minibatches: 18.2, 11.8 and 3.4 %),
and with its search of 100 on 0.8-1.0 %.

``battle.collect_search.exact_value_empty_cells`` = N (off here) fits the value to the solver's exact outcome
in positions with at most N empty cells instead of to the game's result, ``exact_policy_empty_cells`` = N
(off here) the policy to the solver's outcome-best moves instead of to the search's visits (both need the
``perfect`` extra), and ``tactics_weight`` = w (off here) weighs up the positions with a win in one or a single
block; docs/guides/perfect-play.md has their probes.
"""
import copy

from sparring.dizoo.board_games.config.connect_four_search import config as search_config

config = copy.deepcopy(search_config)
config['exp_name'] = 'runs/connect_four_search_openings'
config['env'].update(random_opening_plies=[0, 30])
# Minibatches of 256 positions instead of 1,024: at 205k env steps fewer errors on every easy group of the tuning
# set and more wins from the empty board (docs/guides/perfect-play.md, lever i).
config['policy']['learn'].update(num_minibatches=32)
