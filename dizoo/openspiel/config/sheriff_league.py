"""A league of two roles on OpenSpiel's general-sum ``sheriff``: the smuggler and the sheriff each have their own
PPO player, network, learner and snapshots, and each trains against the other role.

The roles are declared on the env (``roles``), so the league's categories are the roles: a naive self-play player
of each role meets the other role's current player (and, by PFSP, its snapshots). Each role's random bot is a
reference player of that role; the scripted bots ``sheriff_smuggler`` (loads the most items, offers no bribe) and
``sheriff_inspector`` (always inspects) are evaluation opponents of the other role. With ``battle.exact_analysis``
every evaluation also reports the NashConv of the live pair (smuggler, sheriff), each role's best-response gain
and the NashConv of each role's recent average, computed by OpenSpiel over the whole game tree.

The sheriff game has mixed equilibria only (a smuggler that always loads is inspected, a sheriff that always
inspects is fooled by an honest smuggler), so two plain best-responding learners chase each other in circles. The
learners use PPO's magnetic mirror descent objective (as the poker configs): a pull towards uniform play of weight
``magnet_coef`` damps the circling, at the price of a small bias (a larger magnet settles sooner, further from an
equilibrium). ``benchmarks/sheriff_roles.py`` follows the NashConv and each role's win rates over a run.
"""
config = dict(
    exp_name='runs/sheriff_league',
    env=dict(type='openspiel', game='sheriff', roles=['smuggler', 'sheriff'], collector_env_num=128,
             evaluator_env_num=16, n_evaluator_episodes=256),
    policy=dict(
        type='ppo',
        model=dict(hidden_sizes=[64, 64]),
        collect=dict(n_steps=32),
        learn=dict(objective='mmd', mmd_kl_coef=20.0, magnet='uniform', magnet_coef=0.3, normalize_advantage=False,
                   epochs=4, num_minibatches=4, lr=1e-3, anneal_lr=False, entropy_coef=0.0, gamma=1.0, gae_lambda=1.0,
                   value_clip_range=None),
    ),
    league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=20, branch_probs=dict(sp=0.8, pfsp=0.2)))),
    battle=dict(exact_analysis=True, eval_opponents=['bot:sheriff_smuggler', 'bot:sheriff_inspector']),
    torch_threads=1,
    train=dict(max_env_steps=2_000_000, max_wall_seconds=600.0, eval_every_iters=10, checkpoint_every_iters=100),
)
