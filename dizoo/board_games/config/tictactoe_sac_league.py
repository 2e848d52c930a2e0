"""A discrete-SAC league on tic-tac-toe: masked categorical actor, twin Q critics over the nine cells, self-play,
PFSP over its snapshots and the bots as sparring partners (``reference`` branch), as in ``tictactoe_league``.

Discrete SAC's expectation over the legal actions replaces sampling; the temperature is tuned so the
policy keeps ``target_entropy_ratio`` of each position's largest entropy (log of its legal moves):
0.3 here rather than the paper's 0.98, which keeps the policy close to uniform in a game won by precise
moves. Replay as DQN's league: 16 gradient steps of 128 transitions per chunk.
"""
from sparring.dizoo.board_games.config import sparring_partners

config = dict(
    exp_name='runs/tictactoe_sac_league',
    env=dict(type='tictactoe', collector_env_num=32, evaluator_env_num=50, n_evaluator_episodes=200),
    policy=dict(
        type='sac',
        model=dict(hidden_sizes=[128, 128]),
        collect=dict(n_steps=16),
        learn=dict(lr=3e-4, batch_size=128, updates_per_chunk=16, learning_starts=2_000, gamma=0.99,
                   target_entropy_ratio=0.3),
        replay=dict(capacity=100_000),
    ),
    league=dict(
        type='one_vs_one',
        players=dict(naive_sp=dict(one_phase_step=100, branch_probs=dict(sp=0.4, pfsp=0.3, reference=0.3))),
        reference_players=sparring_partners('tictactoe_heuristic'),
    ),
    battle=dict(eval_deterministic=True, eval_opponents=['bot:tictactoe_mcts']),
    train=dict(max_env_steps=2_000_000, max_wall_seconds=150.0, eval_every_iters=100, checkpoint_every_iters=200),
)
