"""SAC on Hopper-v5 at SAC's defaults with rl-zoo's one Hopper change: 10k transitions before the first update.

One env, chunks of 8 steps, one gradient step per env step (the SAC paper's ratio), 256-256 ReLU actor and
twin critics, lr 3e-4, batch 256, tau 0.005, automatic temperature towards -|A|, a million-transition buffer.
"""
config = dict(
    exp_name='runs/hopper_sac',
    env=dict(type='hopper', collector_env_num=1, evaluator_env_num=5, n_evaluator_episodes=10),
    policy=dict(type='sac', collect=dict(n_steps=8), learn=dict(learning_starts=10_000)),
    train=dict(max_env_steps=1_000_000, eval_every_iters=1250, checkpoint_every_iters=2500),
)
