"""A SAC self-play league on continuous Pong duel (each paddle's action a velocity in [-1, 1]): the court,
scoring, league and opponents of ``pong_duel_continuous_league.py`` (PPO's), so the two compare at one budget.

The actor is SAC's tanh-squashed Gaussian, so velocities stay inside the box without the env clipping;
its critics, their targets, the temperature and the replay buffer stay with the learner, and league
snapshots copy the actor only. Chunks are 16 envs x 16 steps; 32 gradient steps of 256 transitions each
per chunk (a replay ratio below the paper's one per step, which would spend the budget on updates).
"""
config = dict(
    exp_name='runs/pong_duel_continuous_sac_league',
    env=dict(type='pong_duel', continuous=True, points_to_win=3, max_steps=600,
             collector_env_num=16, evaluator_env_num=50, n_evaluator_episodes=200, stop_value=None),
    policy=dict(
        type='sac',
        model=dict(hidden_sizes=[128, 128]),
        collect=dict(n_steps=16),
        learn=dict(lr=3e-4, batch_size=256, updates_per_chunk=32, learning_starts=5_000, gamma=0.99),
        replay=dict(capacity=200_000),
    ),
    league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=40))),
    train=dict(max_env_steps=400_000, max_wall_seconds=1800.0, eval_every_iters=100, checkpoint_every_iters=200),
)
