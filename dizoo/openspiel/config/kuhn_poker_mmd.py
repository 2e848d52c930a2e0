"""Self-play with magnetic mirror descent on Kuhn poker, scored exactly (see
:func:`sparring.dizoo.openspiel.config.poker_mmd_config`): 5 minutes; the live network's exploitability
(``expl``) and the Nash meta-strategy's over its snapshots (``meta_expl``) are logged at every evaluation.
"""
from sparring.dizoo.openspiel.config import poker_mmd_config

config = poker_mmd_config('kuhn_poker', max_wall_seconds=300.0, n_steps=32, mmd_kl_coef=20.0, magnet_coef=0.05,
                          one_phase_step=20, eval_every_iters=10)
