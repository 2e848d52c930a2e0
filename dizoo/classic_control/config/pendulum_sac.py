"""SAC on Pendulum-v1 at SAC's defaults (squashed Gaussian, twin critics, automatic temperature): stops at an
evaluation mean of -200. One env steps at a time like the reference setting; each chunk of 8 steps is learned
with 8 batched gradient steps (one per env step)."""
config = dict(
    exp_name='runs/pendulum_sac',
    env=dict(type='pendulum', collector_env_num=1, evaluator_env_num=8, n_evaluator_episodes=8, stop_value=-200),
    policy=dict(type='sac', collect=dict(n_steps=8)),
    train=dict(max_env_steps=20_000, eval_every_iters=125, checkpoint_every_iters=1000),
)
