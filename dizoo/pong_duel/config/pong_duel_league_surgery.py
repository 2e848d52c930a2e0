"""The Pong duel league after surgery: a wider network and the extra observation feature ``ball_intercept_y``.

Turn a run of ``pong_duel_league.py`` into one of this config, keeping what its players compute::

    sparring surgery --checkpoint runs/pong_duel_league --config dizoo/pong_duel/config/pong_duel_league_surgery.py \\
        --out runs/pong_duel_league_wide
    sparring train dizoo/pong_duel/config/pong_duel_league_surgery.py --exp-name runs/pong_duel_league_wide --resume
"""
import copy

from sparring.dizoo.pong_duel.config.pong_duel_league import config as before

config = copy.deepcopy(before)
config['exp_name'] = 'runs/pong_duel_league_wide'
config['env']['extra_features'] = True
config['policy']['model']['hidden_sizes'] = [128, 96]
