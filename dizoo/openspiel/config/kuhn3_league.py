"""Three-player Kuhn poker in a league of three seats, scored exactly by OpenSpiel's NashConv.

One player learns by self-play with magnetic mirror descent (PPO's ``'mmd'`` objective, as the two-player poker
configs): each job seats it and two opponents its branches draw (itself, or by PFSP one of its snapshots), it
trains on every seat it holds, and each finished hand is recorded as a ranking of the three seats by their chips.
Every ``eval_every_iters`` updates the run reports, by OpenSpiel's own ``nash_conv``, the NashConv of the live
network, of the population's meta-strategy (a mixture of the newest snapshots and the live network solved on their
exact three-player meta-game) and of the newest snapshots' average (see :mod:`sparring.league.multiseat_exact`).
"""
from sparring.dizoo.openspiel.config import poker_mmd_config

# A stronger magnet than the two-player configs' 0.05 (which cycled here), annealed towards 0.03 over 4 million env
# steps (351 s at load 1.2 on the 2-core AMD EPYC: meta-strategy NashConv 0.037, network 0.047; record kuhn3.json,
# benchmarks/kuhn3.py).
config = poker_mmd_config('kuhn_poker', max_wall_seconds=600.0, n_steps=32, mmd_kl_coef=20.0, magnet_coef=0.1,
                          magnet_coef_final=0.03, one_phase_step=20, eval_every_iters=20, max_env_steps=4_000_000)
config.update(exp_name='runs/kuhn3_league')
config['env'].update(type='openspiel_multiseat', game_params=dict(players=3))
config['league'].update(seats=3)
config['league']['players']['naive_sp'].update(branch_probs=dict(sp=0.8, pfsp=0.2))
