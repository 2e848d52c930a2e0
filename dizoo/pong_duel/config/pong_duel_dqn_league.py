"""A DQN league on Pong duel: self-play and PFSP over its snapshots, evaluated against the random bot (the rating
anchor) and the tracker bot.

Double DQN with a dueling head, 3-step returns and a Polyak-averaged target; epsilon falls from 1
to 0.02 over the first fifth of the run. The league's snapshots carry their own epsilon (a buffer
of the network), so past selves play as they did when frozen.
"""
config = dict(
    exp_name='runs/pong_duel_dqn_league',
    env=dict(type='pong_duel', points_to_win=3, max_steps=600, collector_env_num=32, evaluator_env_num=50,
             n_evaluator_episodes=200, stop_value=None),
    policy=dict(
        type='dqn',
        model=dict(hidden_sizes=[128, 128], dueling=True),
        collect=dict(n_steps=16, eps_start=1.0, eps_end=0.02, eps_decay_fraction=0.2),
        learn=dict(lr=5e-4, batch_size=128, updates_per_chunk=16, learning_starts=5_000, gamma=0.99, n_step=3,
                   double=True, target_update_every=1, target_tau=0.01, loss='huber'),
        replay=dict(capacity=200_000),
    ),
    league=dict(type='one_vs_one',
                players=dict(naive_sp=dict(one_phase_step=200, branch_probs=dict(sp=0.6, pfsp=0.4)))),
    train=dict(max_env_steps=600_000, max_wall_seconds=1500.0, eval_every_iters=100, checkpoint_every_iters=200),
)
