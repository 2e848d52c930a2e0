"""A league on the prisoner's dilemma, whose one equilibrium is mutual defection (defecting dominates).

A one-shot game: every episode is one simultaneous move, so the return is the move's payoff
(``gamma=0``). A result compares the two payoffs, so defecting never loses; the player learns to
defect against itself, its snapshots and the random bot (the ``reference`` branch), and its
evaluation against the random bot tends to 50 % wins and 50 % draws (the bot cooperates half the time).
"""
config = dict(
    exp_name='runs/prisoners_dilemma_league',
    env=dict(type='prisoners_dilemma', collector_env_num=64, evaluator_env_num=8, n_evaluator_episodes=200),
    policy=dict(
        type='ppo',
        model=dict(hidden_sizes=[16]),
        collect=dict(n_steps=4),
        learn=dict(epochs=4, num_minibatches=2, lr=3e-3, anneal_lr=False, gamma=0.0, gae_lambda=0.0,
                   value_clip_range=None),
    ),
    league=dict(type='one_vs_one',
                players=dict(naive_sp=dict(one_phase_step=30, branch_probs=dict(sp=0.4, pfsp=0.3, reference=0.3)))),
    battle=dict(eval_deterministic=False),
    train=dict(max_env_steps=100_000, eval_every_iters=30, checkpoint_every_iters=0),
)
