"""PPO on Breakout with the usual Atari settings (Nature CNN, 8 envs x 128 steps, annealed lr and clip range)."""
config = dict(
    exp_name='runs/breakout_ppo',
    env=dict(type='atari', id='BreakoutNoFrameskip-v4', collector_env_num=8, evaluator_env_num=8,
             n_evaluator_episodes=8),
    policy=dict(
        type='ppo',
        model=dict(type='cnn'),
        collect=dict(n_steps=128),
        learn=dict(epochs=4, num_minibatches=4, lr=2.5e-4, anneal_lr=True, clip_range=0.1, anneal_clip_range=True,
                   value_clip_range=0.1, entropy_coef=0.01, value_coef=0.5, max_grad_norm=0.5, gamma=0.99,
                   gae_lambda=0.95),
    ),
    # 10M agent steps = 40M frames, the usual budget; annealing runs over the whole of it.
    train=dict(max_env_steps=10_000_000, eval_every_iters=100, checkpoint_every_iters=100),
)
