"""A PSRO-style league on the 2x2 zero-sum matrix game [[3, -2], [-2, 1]].

The player trains a best response to the Nash mixture of its snapshots (the ``nash`` branch,
solved on the exact meta-game), freezes it every ``one_phase_step`` updates and starts the next
response afresh (``mutate_prob=1``). The population's Nash meta-strategy approaches the game's
equilibrium (3/8, 5/8) in both seats; the run reports its distance exactly.
"""
from typing import Any, Dict

config: Dict[str, Any] = dict(
    exp_name='runs/zero_sum_2x2_league',
    env=dict(type='zero_sum_2x2', collector_env_num=64, evaluator_env_num=8, n_evaluator_episodes=64),
    policy=dict(
        type='ppo',
        model=dict(hidden_sizes=[16]),
        collect=dict(n_steps=4),
        learn=dict(epochs=4, num_minibatches=2, lr=3e-3, anneal_lr=False, entropy_coef=0.01, gamma=0.0,
                   gae_lambda=0.0, value_clip_range=None),
    ),
    league=dict(type='one_vs_one',
                players=dict(naive_sp=dict(one_phase_step=30, branch_probs=dict(nash=1.0), mutate_prob=1.0))),
    battle=dict(exact_analysis=True),
    train=dict(max_env_steps=400_000, eval_every_iters=30, checkpoint_every_iters=0),
)
