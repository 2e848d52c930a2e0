"""Connect four by expert iteration: self-play whose moves a search guided by the player's own network chooses.

Each move of the player's self-play games is chosen by 50 simulations of PUCT over the rules
(``battle.collect_search``, dizoo/board_games/search_acting.py), guided by the network's policy and
value; the network then learns the search's visit distribution (``policy.learn.objective='search'``)
and the game's result (``gamma = gae_lambda = 1``: the value is fitted to the outcome). The search
sees tactics a few moves deep that the network alone misses, so the network learns them from it:
the AlphaZero recipe. The first 12 stones of a game are drawn from the visit counts so self-play
games differ, a quarter of them uniformly at random (``random_moves``) so the games also pass through
the odd positions weaker players lead into; after that the most visited move is played. Same CNN as
the PPO league (``connect_four_league.py``).
"""
from typing import Any, Dict

from sparring.dizoo.board_games.config import connect_four_sparring_partners

config: Dict[str, Any] = dict(
    exp_name='runs/connect_four_search',
    env=dict(type='connect_four', collector_env_num=128, evaluator_env_num=50, n_evaluator_episodes=200,
             stop_value=None),
    policy=dict(
        type='ppo',
        model=dict(type='cnn', conv_layers=[[64, 4, 1]], hidden_size=256),
        collect=dict(n_steps=32),
        learn=dict(objective='search', epochs=4, num_minibatches=8, lr=1e-3, anneal_lr=False, gamma=1.0,
                   gae_lambda=1.0, entropy_coef=0.0, value_coef=1.0, value_clip_range=None, max_grad_norm=None,
                   mirror=dict(obs_axis=-1, actions=[6, 5, 4, 3, 2, 1, 0]), threads=2),
    ),
    league=dict(
        type='one_vs_one',
        players=dict(naive_sp=dict(one_phase_step=100, branch_probs=dict(sp=1.0))),
        reference_players=connect_four_sparring_partners(),
    ),
    battle=dict(collect_search=dict(num_simulations=50, c_puct=1.5, sample_moves=12, root_noise=0.25, noise_alpha=1.0,
                                    random_moves=0.25),
                eval_deterministic=True, eval_opponents=['bot:connect_four_mcts?num_simulations=100']),
    train=dict(max_env_steps=20_000_000, max_wall_seconds=3600.0, eval_every_iters=25, eval_in_background=True,
               checkpoint_every_iters=50),
)
