"""PSRO on Kuhn poker with PPO best responses, evaluated by exact exploitability.

Each phase trains a fresh PPO best response (``mutate_prob=1`` resets it to the initial
parameters) against the Nash mixture of the snapshots so far, solved on the exact meta-game
(``battle.exact_analysis``), then freezes it. The population's Nash meta-strategy is the
run's answer: its exploitability is computed exactly at every evaluation and logged as
``meta_expl``. Swap the game for ``leduc_poker`` to run the same recipe on Leduc.
"""
config = dict(
    exp_name='runs/kuhn_poker_psro',
    env=dict(type='openspiel', game='kuhn_poker', collector_env_num=128, evaluator_env_num=8,
             n_evaluator_episodes=64),
    policy=dict(
        type='ppo',
        model=dict(hidden_sizes=[64, 64]),
        collect=dict(n_steps=8),
        learn=dict(epochs=4, num_minibatches=4, lr=1e-3, anneal_lr=False, entropy_coef=0.01, gamma=1.0,
                   gae_lambda=1.0, value_clip_range=None),
    ),
    league=dict(type='one_vs_one',
                players=dict(naive_sp=dict(one_phase_step=40, branch_probs=dict(nash=1.0), mutate_prob=1.0))),
    battle=dict(exact_analysis=True),
    train=dict(max_env_steps=100_000_000, max_wall_seconds=600.0, eval_every_iters=40, checkpoint_every_iters=200),
)
