"""A PPO self-play league on 2v2 Team Pong: one shared policy per team, told which paddle it moves.

Discount horizon: gamma 0.99 is 100 steps, at 1/30 s per step about 3.3 s of game time, a little
more than a ball's trip across the court and back (the run logs it).
"""
config = dict(
    exp_name='runs/team_pong_league',
    env=dict(type='team_pong', team_size=2, team_spirit=0.5, points_to_win=3, max_steps=600,
             collector_env_num=32, evaluator_env_num=50, n_evaluator_episodes=200, stop_value=None),
    policy=dict(
        type='ppo',
        model=dict(hidden_sizes=[64, 64]),
        collect=dict(n_steps=64),
        learn=dict(epochs=4, num_minibatches=4, lr=3e-4, gamma=0.99, gae_lambda=0.95, entropy_coef=0.01),
    ),
    league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=25))),
    battle=dict(eval_opponents=['bot:team_pong_heuristic']),
    train=dict(max_env_steps=1_000_000, max_wall_seconds=600.0, eval_every_iters=25, checkpoint_every_iters=50),
)
