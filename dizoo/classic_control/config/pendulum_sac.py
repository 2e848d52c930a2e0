"""SAC on Pendulum-v1 (squashed Gaussian, twin critics, automatic temperature), tuned for arithmetic per env step:
128-128 actor and critics (SAC's default is 256-256) at lr 1e-3 (rl-zoo's Pendulum lr; SAC's default 3e-4); stops
at an evaluation mean of -200. One env steps at a time like the reference setting; each chunk of 8 steps is learned
with 8 batched gradient steps (one per env step, batch 256, tau 0.005: SAC's defaults).

Tuned with ``benchmarks/sac_tuning.py`` (the figures: ``benchmarks/results/sac_tuning.json`` and the results
page's SAC section): as few env steps to -200 and the same return as SAC's defaults, for about half the CPU per
env step; narrower nets at lr 3e-4 were slower to -200.
"""
config = dict(
    exp_name='runs/pendulum_sac',
    env=dict(type='pendulum', collector_env_num=1, evaluator_env_num=8, n_evaluator_episodes=8, stop_value=-200),
    policy=dict(type='sac', model=dict(hidden_sizes=[128, 128]), collect=dict(n_steps=8), learn=dict(lr=1e-3)),
    train=dict(max_env_steps=20_000, eval_every_iters=125, checkpoint_every_iters=1000),
)
