"""A PPO league on connect four: self-play, PFSP over its snapshots, and the heuristic bot as a sparring partner.

The player's opponents: itself (``sp``), its past snapshots by PFSP (``pfsp``: the ones it
beats least most often) and the reference players by PFSP (``reference``: the random and the
heuristic bot, which also anchor the Elo scale). Evaluation plays the reference players and the
MCTS bot; ``benchmarks/league_games.py`` adds MCTS with 100 and 1000 simulations.
"""
config = dict(
    exp_name='runs/connect_four_league',
    env=dict(type='connect_four', collector_env_num=64, evaluator_env_num=50, n_evaluator_episodes=200,
             stop_value=None),
    policy=dict(
        type='ppo',
        model=dict(hidden_sizes=[256, 256], activation='relu'),
        collect=dict(n_steps=32),
        learn=dict(epochs=4, num_minibatches=8, lr=3e-4, gamma=0.99, gae_lambda=0.95, entropy_coef=0.01,
                   value_clip_range=None),
    ),
    league=dict(
        type='one_vs_one',
        players=dict(naive_sp=dict(one_phase_step=100, branch_probs=dict(sp=0.4, pfsp=0.3, reference=0.3))),
        reference_players=[
            dict(player_id='random', param_ref='bot:random'),
            dict(player_id='heuristic', param_ref='bot:connect_four_heuristic', anchor=False),  # rated
        ],
    ),
    battle=dict(eval_deterministic=True, eval_opponents=['bot:connect_four_mcts?num_simulations=100']),
    train=dict(max_env_steps=20_000_000, max_wall_seconds=1800.0, eval_every_iters=25,
               checkpoint_every_iters=50),
)
