"""A PPO league on connect four: self-play, PFSP over its snapshots, and bots of graded strength as sparring partners.

The player's opponents: itself (``sp``), its past snapshots by PFSP (``pfsp``: the ones it
beats least most often) and the reference players by PFSP (``reference``): the random and the
heuristic bot, and the tactical ``punisher`` and ``blocker`` that punish missed blocks (see
:func:`connect_four_sparring_partners`).

The model is a small CNN whose one 4x4 convolution sees every line of four on the board; with
a learning rate of 1e-3 it learns tactics several times faster than the 256-256 MLP at 3e-4 (its win
rate against ``blocker`` after 1.2M steps, on the results page).
Evaluation plays the reference players and the MCTS bot; ``benchmarks/league_games.py`` adds
MCTS with 100 and 1000 simulations.
"""
from typing import Any, Dict

from sparring.dizoo.board_games.config import connect_four_sparring_partners

config: Dict[str, Any] = dict(
    exp_name='runs/connect_four_league',
    env=dict(type='connect_four', collector_env_num=64, evaluator_env_num=50, n_evaluator_episodes=200,
             stop_value=None),
    policy=dict(
        type='ppo',
        model=dict(type='cnn', conv_layers=[[64, 4, 1]], hidden_size=256),
        collect=dict(n_steps=32),
        learn=dict(epochs=4, num_minibatches=8, lr=1e-3, gamma=0.99, gae_lambda=0.95, entropy_coef=0.01,
                   value_clip_range=None),
    ),
    league=dict(
        type='one_vs_one',
        players=dict(naive_sp=dict(one_phase_step=100, branch_probs=dict(sp=0.4, pfsp=0.3, reference=0.3))),
        reference_players=connect_four_sparring_partners(),
    ),
    battle=dict(eval_deterministic=True, eval_opponents=['bot:connect_four_mcts?num_simulations=100']),
    train=dict(max_env_steps=20_000_000, max_wall_seconds=1800.0, eval_every_iters=25, eval_in_background=True,
               checkpoint_every_iters=50),
)
