"""A DQN league on connect four: self-play, PFSP over its snapshots, and bots of graded strength as
sparring partners (``reference`` branch; they also anchor and rate the Elo scale): the random and
the heuristic bot, and the tactical ``punisher`` and ``blocker``, which punish missed blocks (see
:func:`connect_four_sparring_partners`). The tactical two make it beat the random bot more often than the
first two alone (``benchmarks/dqn.py``; docs/results.md, "DQN").

Evaluation plays the reference players and an MCTS bot with 10 simulations per move, greedily
(no exploration), the seats alternating.
"""
from sparring.dizoo.board_games.config import connect_four_sparring_partners

config = dict(
    exp_name='runs/connect_four_dqn_league',
    env=dict(type='connect_four', collector_env_num=32, evaluator_env_num=50, n_evaluator_episodes=200,
             stop_value=None),
    policy=dict(
        type='dqn',
        model=dict(hidden_sizes=[256, 256], dueling=True),
        collect=dict(n_steps=16, eps_start=1.0, eps_end=0.05, eps_decay_fraction=0.3),
        learn=dict(lr=3e-4, anneal_lr=True, batch_size=128, updates_per_chunk=16, learning_starts=2_000,
                   gamma=0.99, n_step=1, double=True, target_update_every=1, target_tau=0.01, loss='huber'),
        replay=dict(capacity=100_000),
    ),
    league=dict(
        type='one_vs_one',
        players=dict(naive_sp=dict(one_phase_step=200, branch_probs=dict(sp=0.3, pfsp=0.2, reference=0.5))),
        reference_players=connect_four_sparring_partners(),
    ),
    battle=dict(eval_deterministic=True, eval_opponents=['bot:connect_four_mcts?num_simulations=10']),
    train=dict(max_env_steps=3_000_000, max_wall_seconds=1500.0, eval_every_iters=100, eval_in_background=True,
               checkpoint_every_iters=200),
)
