"""The PPO connect-four league whose training games start from random positions: fewer errors off its own games.

Judged by perfect play (docs/guides/perfect-play.md), a self-play network is strong on the games its
own play leads to and brittle on the positions random play reaches. Here each training game starts
after k uniformly random plies, k drawn per game from 0..30 (``env.random_opening_plies``; evaluation
games still start from the empty board), so the player also learns to finish and to defend positions
it would never have led into. Of the levers probed at 400,000 env steps (random openings, the perfect
player at depths 2/4/6 as a sparring partner, a larger CNN) this is the one that lowered the error
rate on the positions decided within 13 plies, at the price of fewer wins from the empty board (the
figures: docs/perfect-play-levers.md). Otherwise the league of ``connect_four_league.py``.
"""
import copy

from sparring.dizoo.board_games.config.connect_four_league import config as league_config

config = copy.deepcopy(league_config)
config['exp_name'] = 'runs/connect_four_perfect_levers'
config['env'].update(random_opening_plies=[0, 30])
