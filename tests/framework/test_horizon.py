"""The discount horizon in steps and game seconds: T / (1 - gamma)."""
import pytest

from sparring.config import compile_config
from sparring.framework.horizon import discount_horizon, env_seconds_per_step, horizon_line


def test_horizon_in_steps_and_seconds():
    assert discount_horizon(0.99) == dict(steps=pytest.approx(100.0), seconds=None)
    # OpenAI Five: gamma 0.9997 at 4 frames of 30 fps per step -> about 7.4 minutes of game time
    assert discount_horizon(0.9997, 4 / 30)['seconds'] == pytest.approx(444.4, abs=0.1)
    assert discount_horizon(1.0)['steps'] == float('inf')


def test_envs_state_their_step_time():
    assert env_seconds_per_step(dict(type='pong_duel')) == pytest.approx(1 / 30)
    assert env_seconds_per_step(dict(type='team_pong')) == pytest.approx(1 / 30)
    assert env_seconds_per_step(dict(type='gym', id='CartPole-v1')) == pytest.approx(0.02)  # its tau
    assert env_seconds_per_step(dict(type='tictactoe')) is None


def test_the_log_line_of_a_config():
    cfg = compile_config(dict(env=dict(type='gym', id='Pendulum-v1'), policy=dict(learn=dict(gamma=0.95))), save=False)
    assert horizon_line(cfg) == 'discount horizon: gamma 0.95 -> 20 steps = 1 game seconds (0.05 s per step)'
    cfg = compile_config(dict(env=dict(type='tictactoe')), save=False)
    assert horizon_line(cfg) == 'discount horizon: gamma 0.99 -> 100 steps (the env gives no seconds_per_step)'
