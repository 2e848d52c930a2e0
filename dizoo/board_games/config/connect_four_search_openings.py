"""Connect four by expert iteration whose training games start from random positions, learnt in small steps, with
the tactics weighed up.

The expert-iteration config of ``connect_four_search.py`` (moves chosen by 50 simulations of PUCT guided
by the player's network, which learns the search's visits and the game's result) with each training game
started after k uniformly random plies, k drawn per game from 0..30 (``env.random_opening_plies``, as in
``connect_four_perfect_levers.py``; evaluation games still start from the empty board), each chunk learnt
in 32 minibatches instead of 8 (the same samples and epochs, four times the optimiser's steps), and
``battle.collect_search.tactics_weight`` = 8: where the player to move can win at once, its winning moves are
the policy's target, else where the other player could complete a line on exactly one cell, that cell, and
those positions weigh 8 times an ordinary one in the policy's loss. Judged by perfect play
(docs/guides/perfect-play.md), self-play alone keeps to the positions its own games lead to and errs often on
those random play reaches; these three levers lowered that most (docs/perfect-play-levers.md has the
figures of each).

``battle.collect_search.exact_value_empty_cells`` = N (off here) fits the value to the solver's exact outcome
in positions with at most N empty cells instead of to the game's result, and ``exact_policy_empty_cells`` = N
(off here) the policy to the solver's outcome-best moves instead of to the search's visits (both need the
``perfect`` extra); docs/perfect-play-levers.md has their probes.
"""
import copy

from sparring.dizoo.board_games.config.connect_four_search import config as search_config

config = copy.deepcopy(search_config)
config['exp_name'] = 'runs/connect_four_search_openings'
config['env'].update(random_opening_plies=[0, 30])
# Minibatches of 256 positions instead of 1,024: fewer errors on every easy group of the tuning set and more wins
# from the empty board (docs/perfect-play-levers.md, lever i).
config['policy']['learn'].update(num_minibatches=32)
# Wins in one and single blocks as the policy's target, weighed 8 times an ordinary position: fewer errors on the
# easy groups than without (docs/perfect-play-levers.md, levers g and i together).
config['battle']['collect_search'].update(tactics_weight=8.0)
