"""Ready configs for the OpenSpiel poker games: :func:`poker_mmd_config` (self-play with magnetic mirror descent,
``<game>_mmd.py``); ``kuhn_poker_psro.py`` is PSRO with PPO best responses."""
from __future__ import annotations


def poker_mmd_config(game: str, max_wall_seconds: float, n_steps: int, mmd_kl_coef: float, magnet_coef: float,
                     one_phase_step: int, eval_every_iters: int, max_env_steps: int = 100_000_000,
                     magnet_coef_final=None, average_window: int = 0) -> dict:
    """Self-play on ``game`` with PPO's ``'mmd'`` objective, scored exactly (``battle.exact_analysis``).

    One active player plays itself (both seats train); its last iterate is the run's single-network answer,
    reported as its exploitability. Every ``one_phase_step`` updates (or two phases, whichever the snapshot
    rule says) it is frozen into a snapshot; the exact Nash meta-strategy over the snapshots and the live
    player is the league's answer (``meta_expl``). Advantages are left unnormalised: the magnet and KL terms
    are weighed against returns in chips, and normalising would rescale the step size every update.
    ``average_window`` > 0 adds the NFSP-style average network (``policy.average``) fitted to the player's
    choices over that many updates; it then answers for the player (and for each snapshot).
    """
    return dict(
        exp_name=f'runs/{game}_mmd',
        env=dict(type='openspiel', game=game, collector_env_num=128, evaluator_env_num=8, n_evaluator_episodes=16),
        policy=dict(
            type='ppo',
            model=dict(hidden_sizes=[64, 64]),
            average=dict(enabled=average_window > 0, window=max(1, average_window), steps=16, batch_size=512),
            collect=dict(n_steps=n_steps),
            learn=dict(objective='mmd', mmd_kl_coef=mmd_kl_coef, magnet='uniform', magnet_coef=magnet_coef,
                       magnet_coef_final=magnet_coef_final, normalize_advantage=False, epochs=4, num_minibatches=4,
                       lr=1e-3, anneal_lr=False, entropy_coef=0.0, gamma=1.0, gae_lambda=1.0, value_clip_range=None),
        ),
        league=dict(type='one_vs_one',
                    players=dict(naive_sp=dict(one_phase_step=one_phase_step, branch_probs=dict(sp=1.0)))),
        battle=dict(exact_analysis=True),
        torch_threads=1,
        train=dict(max_env_steps=max_env_steps, max_wall_seconds=max_wall_seconds, eval_every_iters=eval_every_iters,
                   checkpoint_every_iters=1000),
    )
