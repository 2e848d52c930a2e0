"""Trained runs shared by the tests of the commands that use one (eval, play, export, report)."""
import pytest
import torch

from tests.configs import tiny_league_config


def tictactoe_config(exp_name: str, **train) -> dict:
    """A small tic-tac-toe league: one self-play player, the random bot as the rated anchor, greedy evaluation."""
    return tiny_league_config(
        exp_name, seed=11, env=dict(n_evaluator_episodes=20),
        policy=dict(model=dict(hidden_sizes=[32]), learn=dict(epochs=2, num_minibatches=2, lr=1e-3)),
        league=dict(players=dict(naive_sp=dict(one_phase_step=3))),
        battle=dict(eval_deterministic=True, eval_opponents=['bot:tictactoe_heuristic']),
        train=dict(dict(max_env_steps=768), **train))


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
