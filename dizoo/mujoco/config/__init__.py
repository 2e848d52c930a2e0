"""Ready PPO configs for the MuJoCo tasks; :func:`mujoco_ppo_config` holds what they share."""
from __future__ import annotations


def mujoco_ppo_config(env_type: str, max_env_steps: int = 1_000_000) -> dict:
    """The MuJoCo PPO recipe for one task: a Gaussian policy with state-independent log-std on a
    64-64 tanh MLP, running observation normalisation, reward scaling, 2048 steps per update
    (8 envs x 256), 10 epochs of 32 minibatches, lr 3e-4 annealed, clip 0.2, GAE(0.99, 0.95).
    """
    return dict(
        exp_name=f'runs/{env_type}_ppo',
        env=dict(type=env_type, collector_env_num=8, evaluator_env_num=8, n_evaluator_episodes=8,
                 reward_scaling=True, reward_scaling_gamma=0.99),
        policy=dict(
            type='ppo',
            obs_norm=True,
            model=dict(type='mlp', hidden_sizes=[64, 64], activation='tanh', init_log_std=0.0),
            collect=dict(n_steps=256),
            learn=dict(epochs=10, num_minibatches=32, lr=3e-4, anneal_lr=True, clip_range=0.2, value_clip_range=0.2,
                       entropy_coef=0.0, value_coef=0.5, max_grad_norm=0.5, gamma=0.99, gae_lambda=0.95),
        ),
        train=dict(max_env_steps=max_env_steps, eval_every_iters=10, checkpoint_every_iters=50),
    )
