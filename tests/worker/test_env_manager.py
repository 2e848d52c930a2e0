"""Vectorised env managers: batching, seeding, automatic reset, truncation bootstrap, validation."""
import os
import sys

import gymnasium
import numpy as np
import pytest

from sparring.worker.env import (BaseEnvManager, EnvError, StepResult, SubprocessEnvManager,
                                 make_env_manager)
from sparring.worker.env.subprocess_manager import available_cpus

sys.path.insert(0, os.path.dirname(__file__))
import test_env_fakes  # noqa: F401  registers 'fake_counter'


def counter(**cfg) -> dict:
    return dict(type='fake_counter', **cfg)


def rollout(manager, steps: int, seed: int = 0):
    """Every array a manager returns over ``steps`` random steps, stacked per field."""
    rng = np.random.default_rng(seed)
    first = manager.reset()
    out = {field: [] for field in StepResult._fields if field != 'infos'}
    for _ in range(steps):
        result = manager.step(rng.integers(0, 2, manager.num_envs))
        for field in out:
            out[field].append(getattr(result, field))
    return first, {field: np.stack(values) for field, values in out.items()}


def assert_same_rollouts(a, b):
    np.testing.assert_array_equal(a[0], b[0])
    for field in a[1]:
        np.testing.assert_array_equal(a[1][field], b[1][field], err_msg=field)


def test_shapes_and_dtypes_are_batch_first():
    with make_env_manager(dict(type='cartpole'), 3, seed=0) as manager:
        assert isinstance(manager, BaseEnvManager) and manager.num_envs == 3
        obs = manager.reset()
        assert obs.shape == (3, 4) and obs.dtype == np.float32
        result = manager.step(np.array([0, 1, 0]))
        assert isinstance(result, StepResult)
        assert result.obs.shape == result.final_obs.shape == (3, 4)
        assert result.reward.dtype == np.float32 and result.reward.shape == (3,)
        assert result.terminated.dtype == result.truncated.dtype == bool
        assert result.episode_return.dtype == np.float64 and np.isnan(result.episode_return).all()
        assert result.episode_length.dtype == np.int64 and (result.episode_length == 0).all()
        assert len(result.infos) == 3 and all(isinstance(i, dict) for i in result.infos)


def test_same_seed_gives_the_same_trajectories_and_another_seed_does_not():
    cfg = dict(type='cartpole', max_episode_steps=20)
    runs = []
    for seed in (7, 7, 8):
        with make_env_manager(cfg, 4, seed=seed) as manager:
            runs.append(rollout(manager, 60))
    assert_same_rollouts(runs[0], runs[1])
    assert not np.array_equal(runs[0][0], runs[2][0])
    assert (runs[0][1]['truncated'] | runs[0][1]['terminated']).sum() >= 8  # automatic resets happened


def test_env_i_is_seeded_with_seed_plus_i_on_the_first_reset_only():
    with make_env_manager(dict(type='cartpole'), 3, seed=10) as manager:
        obs = manager.reset()
        for i in range(3):
            expected, _ = gymnasium.make('CartPole-v1').reset(seed=10 + i)
            np.testing.assert_array_equal(obs[i], expected)
        assert not np.array_equal(manager.reset(), obs)  # later resets continue the seeded streams


def test_truncated_episode_returns_its_final_observation_and_restarts():
    steps = 5
    with make_env_manager(dict(type='cartpole', max_episode_steps=steps), 2, seed=1) as manager:
        manager.reset()
        references = [gymnasium.make('CartPole-v1', max_episode_steps=steps) for _ in range(2)]
        for i, env in enumerate(references):
            env.reset(seed=1 + i)
        for t in range(1, steps + 1):
            actions = np.array([t % 2, (t + 1) % 2])
            result = manager.step(actions)
            expected = [env.step(int(a)) for env, a in zip(references, actions)]
            if t < steps:
                assert not result.truncated.any() and np.isnan(result.episode_return).all()
                np.testing.assert_array_equal(result.final_obs, result.obs)
        assert result.truncated.all() and not result.terminated.any()
        np.testing.assert_array_equal(result.final_obs, np.stack([e[0] for e in expected]))
        restarted = np.stack([env.reset()[0] for env in references])  # unseeded, like the automatic reset
        np.testing.assert_array_equal(result.obs, restarted)
        assert not np.array_equal(result.obs, result.final_obs)
        np.testing.assert_array_equal(result.episode_return, [steps, steps])
        np.testing.assert_array_equal(result.episode_length, [steps, steps])
        after = manager.step(np.zeros(2, np.int64))
        assert not after.truncated.any() and (after.episode_length == 0).all()


@pytest.mark.parametrize('terminate_at, truncate_at, terminated, truncated', [
    (3, 0, True, False), (0, 3, False, True), (3, 3, True, True)])
def test_terminated_and_truncated_are_kept_apart(terminate_at, truncate_at, terminated, truncated):
    with make_env_manager(counter(terminate_at=terminate_at, truncate_at=truncate_at), 2, seed=0) as manager:
        np.testing.assert_array_equal(manager.reset(), [[0, 1], [0, 1]])
        for _ in range(2):
            result = manager.step(np.array([1, 2]))
            assert not (result.terminated.any() or result.truncated.any())
        result = manager.step(np.array([1, 2]))
        assert (result.terminated == terminated).all() and (result.truncated == truncated).all()
        np.testing.assert_array_equal(result.final_obs, [[3, 1], [3, 1]])  # last obs of episode 1
        np.testing.assert_array_equal(result.obs, [[0, 2], [0, 2]])  # first obs of episode 2
        np.testing.assert_array_equal(result.episode_return, [3.0, 6.0])
        np.testing.assert_array_equal(result.episode_length, [3, 3])


@pytest.mark.parametrize('fault, field', [
    ('obs_shape', 'observation of shape (3,)'), ('nan_obs', 'observation containing NaN'),
    ('nan_reward', 'reward nan'), ('reward_not_scalar', 'reward array'),
    ('int_terminated', 'terminated 1 of type int'), ('truncated_none', 'truncated None'),
    ('four_tuple', '5-tuple'), ('info_not_dict', 'info'), ('raise', 'ValueError')])
def test_malformed_env_output_raises_env_error_naming_env_and_field(fault, field):
    with make_env_manager(counter(fault=fault, fault_at=2), 3, seed=0) as manager:
        manager.reset()
        manager.step(np.zeros(3, np.int64))
        with pytest.raises(EnvError) as err:
            manager.step(np.zeros(3, np.int64))
    message = str(err.value)
    assert field in message and "env 0 (type 'fake_counter')" in message


def test_a_failed_step_requires_a_reset_and_step_before_reset_is_an_error():
    with make_env_manager(counter(fault='nan_reward', fault_at=1), 2, seed=0) as manager:
        with pytest.raises(EnvError, match='call reset'):
            manager.step(np.zeros(2, np.int64))
        manager.reset()
        with pytest.raises(EnvError, match='nan'):
            manager.step(np.zeros(2, np.int64))
        with pytest.raises(EnvError, match='an earlier step'):
            manager.step(np.zeros(2, np.int64))


@pytest.mark.parametrize('actions, message', [
    (np.zeros(3, np.int64), 'expected shape (2,)'), (np.zeros((2, 1), np.int64), 'expected shape (2,)'),
    (np.zeros(2, np.float32), 'expected integers'), (np.array([0, 3]), 'out of range for envs [1]')])
def test_bad_action_batches_are_rejected_before_any_env_steps(actions, message):
    with make_env_manager(counter(), 2, seed=0) as manager:
        manager.reset()
        with pytest.raises(EnvError) as err:
            manager.step(actions)
        assert message in str(err.value)
        manager.step(np.array([0, 2]))  # nothing stepped: no reset needed


def test_box_actions_are_clipped_when_sent_and_the_callers_array_is_untouched():
    runs = []
    for scale in (1.0, 50.0):
        with make_env_manager(dict(type='pendulum'), 2, seed=0) as manager:
            manager.reset()
            actions = np.array([[2.0], [-2.0]], np.float32) * scale
            runs.append(manager.step(actions).obs)
            assert actions[0, 0] == 2.0 * scale
    np.testing.assert_array_equal(runs[0], runs[1])
    with make_env_manager(dict(type='pendulum'), 2, seed=0) as manager:
        manager.reset()
        with pytest.raises(EnvError, match='NaN or inf for envs \\[1\\]'):
            manager.step(np.array([[0.0], [np.nan]], np.float32))


def test_one_env_runs_in_process_whatever_the_config_says():
    cfg = dict(type='gym', id='CartPole-v1', manager=dict(type='subprocess'))
    with make_env_manager(cfg, 1, seed=0) as manager:
        assert type(manager) is BaseEnvManager
        assert manager.reset().shape == (1, 4)


def test_close_is_idempotent_and_a_closed_manager_refuses_work():
    manager = make_env_manager(dict(type='cartpole'), 2, seed=0)
    manager.reset()
    manager.close()
    manager.close()
    with pytest.raises(EnvError, match='closed'):
        manager.reset()


@pytest.mark.slow
def test_subprocess_manager_matches_the_in_process_one_under_a_seed():
    cfg = dict(type='cartpole', max_episode_steps=25)
    with make_env_manager(cfg, 5, seed=3) as manager:
        in_process = rollout(manager, 80)
    # The default start method ('spawn') and number of workers (one per CPU).
    with SubprocessEnvManager(cfg, 5, seed=3) as manager:
        assert manager.num_workers == min(5, available_cpus())
        in_workers = rollout(manager, 80)
    assert_same_rollouts(in_process, in_workers)
