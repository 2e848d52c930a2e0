"""A PPO league on tic-tac-toe that learns: self-play, PFSP over its snapshots, and bots as sparring partners.

PPO's general defaults (lr 3e-4 annealed to 0, self-play and snapshots only) let a tic-tac-toe
league drift: after 100k steps it still loses a third of its games to the random bot. What makes it learn
is a constant lr of 1e-3 (no annealing) and the ``reference`` branch, which plays the bots of
:func:`sparring_partners` (random, the heuristic, and its tactical ``blocker`` and ``punisher`` options)
beside its own snapshots. The docs' example league run (docs/gen/example_run.py) is this config for 90 s.
"""
from typing import Any, Dict

from sparring.dizoo.board_games.config import sparring_partners

config: Dict[str, Any] = dict(
    exp_name='runs/tictactoe_league',
    env=dict(type='tictactoe', collector_env_num=32, evaluator_env_num=50, n_evaluator_episodes=200),
    policy=dict(
        type='ppo',
        model=dict(hidden_sizes=[128, 128]),
        collect=dict(n_steps=16),
        learn=dict(epochs=4, num_minibatches=4, lr=1e-3, anneal_lr=False, entropy_coef=0.01, value_clip_range=None),
    ),
    league=dict(
        type='one_vs_one',
        players=dict(naive_sp=dict(one_phase_step=100, branch_probs=dict(sp=0.4, pfsp=0.3, reference=0.3))),
        reference_players=sparring_partners('tictactoe_heuristic'),
    ),
    battle=dict(eval_deterministic=True, eval_opponents=['bot:tictactoe_mcts']),
    train=dict(max_env_steps=2_000_000, max_wall_seconds=150.0, eval_every_iters=100, checkpoint_every_iters=200),
)
