"""PPO on Pendulum-v1 (Gaussian policy, observation normalisation); aims at >= -250 within 200k steps.

16 minibatches of 128 steps per epoch rather than 32 of 64: half the gradient steps, so 1.65 x the env
steps per second (7.4-7.9k against 4.5-4.7k here), for about the same return by env step. Measured,
evaluation after 100k steps, seeds 0-4: -113, -115, -99, -138, -226 (median -115) against -113, -97,
-82, -115, -152 (median -113) with 32; after 200k, seeds 0-2: -116, -164, -196 against -98, -148, -225.
With 8 minibatches the return falls (-246, -133, -188 at 100k).
"""
config = dict(
    exp_name='runs/pendulum_ppo',
    env=dict(type='pendulum', collector_env_num=8, evaluator_env_num=8, n_evaluator_episodes=8, stop_value=-200),
    policy=dict(
        type='ppo',
        obs_norm=True,
        collect=dict(n_steps=256),
        learn=dict(epochs=10, num_minibatches=16, lr=1e-3, gamma=0.9, gae_lambda=0.95, entropy_coef=0.0,
                   value_clip_range=None, max_grad_norm=0.5),
    ),
    train=dict(max_env_steps=200_000, eval_every_iters=10, checkpoint_every_iters=20),
)
