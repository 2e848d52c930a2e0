"""A PPO self-play league on Pong duel, evaluated against the random bot (the rating anchor) and the tracker bot.

Discount horizon: gamma 0.99 is 100 steps, at 1/30 s per step about 3.3 s of game time (the run
logs it). ``benchmarks/surgery_league.py`` stops this league, widens the network and adds an
observation feature (``env.extra_features``) by surgery, and resumes it.
"""
from typing import Any, Dict

config: Dict[str, Any] = dict(
    exp_name='runs/pong_duel_league',
    env=dict(type='pong_duel', points_to_win=3, max_steps=600, extra_features=False,
             collector_env_num=32, evaluator_env_num=50, n_evaluator_episodes=200, stop_value=None),
    policy=dict(
        type='ppo',
        model=dict(hidden_sizes=[64, 64]),
        collect=dict(n_steps=64),
        learn=dict(epochs=4, num_minibatches=4, lr=3e-4, gamma=0.99, gae_lambda=0.95, entropy_coef=0.01),
    ),
    league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=10))),
    train=dict(max_env_steps=400_000, max_wall_seconds=1800.0, eval_every_iters=25, checkpoint_every_iters=50),
)
