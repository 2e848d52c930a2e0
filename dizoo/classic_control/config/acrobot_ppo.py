"""PPO on Acrobot-v1."""
config = dict(
    exp_name='runs/acrobot_ppo',
    env=dict(type='acrobot', collector_env_num=8, evaluator_env_num=8, n_evaluator_episodes=8, stop_value=-100),
    policy=dict(
        type='ppo',
        obs_norm=True,
        collect=dict(n_steps=64),
        learn=dict(epochs=4, num_minibatches=4, lr=1e-3, gamma=0.99, gae_lambda=0.94, entropy_coef=0.0),
    ),
    train=dict(max_env_steps=300_000, eval_every_iters=10),
)
