"""Self-play with magnetic mirror descent on Leduc poker, scored exactly (see
:func:`sparring.dizoo.openspiel.config.poker_mmd_config`): 15 minutes.
"""
from sparring.dizoo.openspiel.config import poker_mmd_config

# 8192 steps per update and alpha 0.4 leave the live network's exploitability less noisy than 4096 and 0.2, at the
# same meta-strategy figures (benchmarks/strength.py; benchmarks/results/strength.json).
config = poker_mmd_config('leduc_poker', max_wall_seconds=900.0, n_steps=64, mmd_kl_coef=100.0, magnet_coef=0.4,
                          one_phase_step=10, eval_every_iters=10)
