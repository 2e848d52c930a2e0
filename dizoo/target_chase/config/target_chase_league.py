"""A league of three seats on target chase, a game of continuous actions: three players chase one moving target.

One naive self-play player with a Gaussian PPO policy fills every seat of its games with itself (the `sp` branch)
or, by PFSP, with its snapshots, and learns from every seat it holds; each finished game is recorded as a ranking
of the three seats. Every ``eval_every_iters`` rounds it plays games with the reference players in the other seats:
the random bot and the scripted ``target_chase_greedy`` (the log's ``eval_chips`` is its mean return there, the
summary's ``eval`` how often it finished ahead of each).
"""
config = dict(
    exp_name='runs/target_chase_league',
    env=dict(type='target_chase', collector_env_num=16, evaluator_env_num=8, n_evaluator_episodes=32),
    policy=dict(
        type='ppo',
        model=dict(hidden_sizes=[64, 64], init_log_std=-0.5),
        collect=dict(n_steps=40),
        learn=dict(epochs=4, num_minibatches=4, lr=3e-4, gamma=0.99, gae_lambda=0.95, entropy_coef=0.0),
    ),
    league=dict(
        type='one_vs_one',
        seats=3,
        players=dict(naive_sp=dict(one_phase_step=20, branch_probs=dict(sp=0.8, pfsp=0.2))),
        reference_players=[dict(player_id='random', param_ref='bot:random'),
                           dict(player_id='greedy', param_ref='bot:target_chase_greedy', anchor=False)],
    ),
    torch_threads=1,
    train=dict(max_env_steps=200_000, max_wall_seconds=900.0, eval_every_iters=10, checkpoint_every_iters=50),
)
