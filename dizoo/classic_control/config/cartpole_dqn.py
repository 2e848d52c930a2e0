"""DQN on CartPole-v1 (double DQN, dueling head, 3-step returns, Polyak target): stops at an evaluation mean of 475."""
config = dict(
    exp_name='runs/cartpole_dqn',
    env=dict(type='cartpole', collector_env_num=8, evaluator_env_num=8, n_evaluator_episodes=8, stop_value=475),
    policy=dict(
        type='dqn',
        model=dict(hidden_sizes=[128, 128], dueling=True),
        collect=dict(n_steps=4, eps_start=1.0, eps_end=0.02, eps_decay_steps=20_000),
        learn=dict(lr=5e-4, batch_size=128, updates_per_chunk=8, learning_starts=1_000, gamma=0.99, n_step=3,
                   double=True, target_update_every=1, target_tau=0.01, loss='huber', max_grad_norm=10.0),
        replay=dict(capacity=50_000),
    ),
    train=dict(max_env_steps=200_000, eval_every_iters=25, checkpoint_every_iters=500),
)
