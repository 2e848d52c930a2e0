"""Ready PPO configs for the MuJoCo tasks: :func:`mujoco_ppo_config` (clipped PPO, ``<env>_ppo.py``) and
:func:`mujoco_ppo_kl_config` (the continuous-control write-up's KL-penalty recipe, ``<env>_ppo_kl.py``)."""
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


# Per task, the write-up's batch and budget: (episodes per update, episodes in its run, time limit).
# Our collector gathers a fixed number of steps per update, so a batch is ``collector_env_num`` envs of
# ``n_steps`` each: whole episodes where they cannot end early, otherwise 20 envs of a quarter episode.
WRITE_UP_RUNS = dict(
    invertedpendulum=(20, 1_000, 1000), inverteddoublependulum=(20, 12_000, 1000), reacher=(50, 50_000, 50),
    swimmer=(5, 1_500, 1000), hopper=(20, 15_000, 1000), halfcheetah=(5, 3_000, 1000), walker2d=(20, 25_000, 1000),
    ant=(20, 100_000, 1000), humanoid=(20, 100_000, 1000), humanoidstandup=(5, 100_000, 1000),
)
# Tasks whose episodes always run to the time limit: a batch of them is exactly the write-up's.
FIXED_LENGTH = ('reacher', 'swimmer', 'halfcheetah', 'humanoidstandup')


def mujoco_ppo_kl_config(env_type: str) -> dict:
    """The write-up's recipe for one task, option for option.

    Networks sized from the task (``task_mlp``: three tanh layers, obs x 10, geometric mean,
    act x 10 for the policy, obs x 10, geometric mean, 5 for the value), the time-step feature,
    exact running observation normalisation, rewards scaled by 1 - gamma, GAE(0.995, 0.98).
    Policy: KL penalty with kl_target 0.003 (beta adapted from 1 by 1.5, hinge eta 50, early stop
    at 4 x kl_target, lr adapted past beta's bounds), 20 full-batch epochs, Adam lr 9e-4 / sqrt(hid2),
    log-std starting at -0.5 (log-variance -1). Value function apart: lr 1e-2 / sqrt(hid2), 10
    epochs of 256-step minibatches on this batch and the previous one, squared error. The batch:
    5, 20 or 50 episodes (see ``WRITE_UP_RUNS``); the budget: the write-up's episodes at full length.
    """
    batch_episodes, run_episodes, limit = WRITE_UP_RUNS[env_type]
    gamma = 0.995
    if env_type in FIXED_LENGTH:
        # 10 envs at most, each running whole episodes: 50 Reacher episodes are 10 envs x 5 x 50 steps.
        envs = min(batch_episodes, 10)
        n_steps = batch_episodes // envs * limit
    else:
        envs, n_steps = batch_episodes, limit // 4
    return dict(
        exp_name=f'runs/{env_type}_ppo_kl',
        env=dict(type=env_type, collector_env_num=envs, evaluator_env_num=5, n_evaluator_episodes=10,
                 time_feature=True, reward_scaling=False),
        policy=dict(
            type='ppo_separate_value',
            obs_norm=True,
            model=dict(type='task_mlp', activation='tanh', width_per_dim=10, value_last_width=5, init_log_std=-0.5),
            collect=dict(n_steps=n_steps),
            learn=dict(objective='kl_penalty', kl_target=0.003, beta_init=1.0, eta=50.0, kl_adapt_factor=1.5,
                       epochs=20, num_minibatches=1, lr=9e-4, lr_scale='hid2', anneal_lr=False, adam_eps=1e-8,
                       value_lr=1e-2, value_epochs=10, value_minibatch_size=256, value_replay=True,
                       value_clip_range=None, entropy_coef=0.0, max_grad_norm=None, normalize_advantage=True,
                       gamma=gamma, gae_lambda=0.98, reward_scale=1.0 - gamma),
        ),
        train=dict(max_env_steps=run_episodes * limit, eval_every_iters=10, checkpoint_every_iters=50),
    )
