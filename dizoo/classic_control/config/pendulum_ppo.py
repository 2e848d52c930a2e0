"""PPO on Pendulum-v1 (Gaussian policy, observation normalisation); aims at >= -250 within 200k steps.

16 minibatches of 128 steps per epoch rather than 32 of 64: half the gradient steps, so about 1.65 x the
env steps per second, for about the same return by env step; with 8 the return falls (docs/results.md,
"PPO on CartPole and Pendulum").
"""
from typing import Any, Dict

config: Dict[str, Any] = dict(
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
