"""A league of two roles on pursuit and evasion: the pursuer and the evader each have their own PPO player,
network (their observations differ in size), learner and snapshots, and each trains against the other role.

The game's roles are the league's categories (filled in from the env: ``league.roles``), so a naive
self-play player of each role meets the other role's current player and its snapshots (PFSP). Each role's
random bot is a reference player of that role (the random pursuer anchors the ratings); the scripted bots,
``pursuit_chase`` (a pursuer) and ``pursuit_flee`` (an evader), are the evaluation opponents of the other
role. ``benchmarks/pursuit_roles.py`` follows each role's win rate against the other role's scripted bot.
"""
config = dict(
    exp_name='runs/pursuit_league',
    env=dict(type='pursuit', collector_env_num=16, evaluator_env_num=16, n_evaluator_episodes=64),
    policy=dict(
        type='ppo',
        model=dict(hidden_sizes=[64, 64], init_log_std=-0.5),
        collect=dict(n_steps=64),
        learn=dict(epochs=4, num_minibatches=4, lr=3e-4, gamma=0.99, gae_lambda=0.95, entropy_coef=0.0),
    ),
    league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=20))),
    train=dict(max_env_steps=300_000, max_wall_seconds=1800.0, eval_every_iters=20, checkpoint_every_iters=50),
)
