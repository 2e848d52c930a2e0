"""A league of two roles on OpenSpiel's general-sum ``sheriff``: the smuggler and the sheriff each have their own
PPO player, network, learner and snapshots, and each trains against the other role.

The roles are declared on the env (``roles``), so the league's categories are the roles: a naive self-play player
of each role meets the other role's current player and its snapshots. Each role's random bot is a reference player
of that role; the scripted bots ``sheriff_smuggler`` (carries the most items, offers no bribe) and
``sheriff_inspector`` (always inspects) are evaluation opponents of the other role. With ``battle.exact_analysis``
every evaluation also reports the NashConv of the live pair (smuggler, sheriff) and each role's best-response gain,
computed by OpenSpiel over the whole game tree. ``benchmarks/sheriff_roles.py`` follows both.
"""
config = dict(
    exp_name='runs/sheriff_league',
    env=dict(type='openspiel', game='sheriff', roles=['smuggler', 'sheriff'], collector_env_num=64,
             evaluator_env_num=16, n_evaluator_episodes=256),
    policy=dict(
        type='ppo',
        model=dict(hidden_sizes=[64, 64]),
        collect=dict(n_steps=9),
        learn=dict(epochs=4, num_minibatches=4, lr=1e-3, anneal_lr=False, entropy_coef=0.01, gamma=1.0,
                   gae_lambda=1.0, value_clip_range=None),
    ),
    league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=40))),
    battle=dict(exact_analysis=True, eval_opponents=['bot:sheriff_smuggler', 'bot:sheriff_inspector']),
    torch_threads=1,
    train=dict(max_env_steps=2_000_000, max_wall_seconds=600.0, eval_every_iters=20, checkpoint_every_iters=200),
)
