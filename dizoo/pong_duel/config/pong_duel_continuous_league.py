"""A PPO self-play league on continuous Pong duel: each paddle's action is a velocity in [-1, 1].

The court, speeds and scoring are those of ``pong_duel_league.py`` (velocity 1 moves as far as "up" does),
so the two leagues can be compared at the same budget (``benchmarks/continuous_league.py``). The policy
is PPO's diagonal Gaussian (state-independent log-std, started at -1: a standard deviation of 0.37 of
the full speed), its samples clipped to the box by the env; 8 epochs per chunk: both beat the random bot more
often than log-std -0.5 and 4 epochs (``benchmarks/continuous_league.py``; docs/results.md, "Continuous
battles"). Self-play and PFSP over the snapshots; the
random bot (uniform velocities, the rating anchor) and the tracker bot (a velocity proportional to the
gap to the ball) are the reference and evaluation opponents.
"""
config = dict(
    exp_name='runs/pong_duel_continuous_league',
    env=dict(type='pong_duel', continuous=True, points_to_win=3, max_steps=600,
             collector_env_num=32, evaluator_env_num=50, n_evaluator_episodes=200, stop_value=None),
    policy=dict(
        type='ppo',
        model=dict(hidden_sizes=[64, 64], init_log_std=-1.0),
        collect=dict(n_steps=64),
        learn=dict(epochs=8, num_minibatches=4, lr=3e-4, gamma=0.99, gae_lambda=0.95, entropy_coef=0.0),
    ),
    league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=10))),
    train=dict(max_env_steps=400_000, max_wall_seconds=1800.0, eval_every_iters=25, checkpoint_every_iters=50),
)
