"""Self-play with magnetic mirror descent on Leduc poker, scored exactly (see
:func:`sparring.dizoo.openspiel.config.poker_mmd_config`): 15 minutes.
"""
from sparring.dizoo.openspiel.config import poker_mmd_config

config = poker_mmd_config('leduc_poker', max_wall_seconds=900.0, n_steps=32, mmd_kl_coef=100.0, magnet_coef=0.2,
                          one_phase_step=20, eval_every_iters=20)
