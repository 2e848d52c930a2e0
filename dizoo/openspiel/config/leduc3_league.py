"""Three-player Leduc poker in a league of three seats: the three-player Kuhn league's recipe
(:mod:`sparring.dizoo.openspiel.config.kuhn3_league`) on a larger game, for 30 minutes.

Leduc's three-player tree has 25,800 information states and about a million terminal histories: one NashConv by
OpenSpiel took about two minutes on the shared 2-core machine, so the run measures none while it trains
(``battle.exact_analysis`` off). Score a trained player afterwards with
``sparring.dizoo.openspiel.exploitability.policy_nash_conv('leduc_poker', player, game_params=dict(players=3))``.
"""
from sparring.dizoo.openspiel.config import poker_mmd_config

config = poker_mmd_config('leduc_poker', max_wall_seconds=1800.0, n_steps=64, mmd_kl_coef=20.0, magnet_coef=0.1,
                          magnet_coef_final=0.03, one_phase_step=20, eval_every_iters=0, max_env_steps=12_000_000)
config.update(exp_name='runs/leduc3_league')
config['env'].update(type='openspiel_multiseat', game_params=dict(players=3))
config['league'].update(seats=3)
config['league']['players']['naive_sp'].update(branch_probs=dict(sp=0.8, pfsp=0.2))
config['battle'].update(exact_analysis=False)
