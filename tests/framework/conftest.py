"""Trained runs shared by the tests of the commands that use one (eval, play, export, report)."""
import pytest
import torch


def tictactoe_config(exp_name: str, **train) -> dict:
    """A small tic-tac-toe league: one self-play player, the random bot as the rated anchor, greedy evaluation."""
    return dict(
        exp_name=exp_name, seed=11,
        env=dict(type='tictactoe', collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=20),
        policy=dict(type='ppo', model=dict(hidden_sizes=[32]), collect=dict(n_steps=8),
                    learn=dict(epochs=2, num_minibatches=2, lr=1e-3)),
        league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=3))),
        battle=dict(eval_deterministic=True, eval_opponents=['bot:tictactoe_heuristic']),
        train=dict(dict(max_env_steps=768, eval_every_iters=0, checkpoint_every_iters=0, progress_bar=False,
                        tensorboard=False), **train),
    )


@pytest.fixture(scope='session')
def small_league_config():
    """``small_league_config(exp_name, **train)``: the config of the small tic-tac-toe league."""
    return tictactoe_config


@pytest.fixture(scope='session')
def trained_tictactoe(tmp_path_factory):
    """A finished tic-tac-toe league run: ``(run dir, the run's summary)``. Its only evaluation is the
    final one, so the random bot it meets there is fresh, as in a new ``sparring eval``."""
    from sparring.framework import serial_pipeline
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    run_dir = str(tmp_path_factory.mktemp('runs') / 'tictactoe')
    try:
        summary = serial_pipeline(tictactoe_config(run_dir))
    finally:
        torch.set_num_threads(before)
    return run_dir, summary
