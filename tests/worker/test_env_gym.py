"""GymEnv by Gymnasium id and by registered name, env config sections and their errors."""
import gymnasium
import numpy as np
import pytest

from sparring.config.schema import ConfigError
from sparring.config.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY
from sparring.worker.env import GymEnv, make_env
from sparring.config.compile import compile_section


def test_gym_env_by_id_is_a_gymnasium_env():
    env = make_env(dict(type='gym', id='CartPole-v1'))
    assert isinstance(env, GymEnv) and isinstance(env, gymnasium.Env)
    assert env.observation_space.shape == (4,) and env.action_space.n == 2
    obs, info = env.reset(seed=3)
    again, _ = make_env(dict(type='gym', id='CartPole-v1')).reset(seed=3)
    np.testing.assert_array_equal(obs, again)
    obs, reward, terminated, truncated, info = env.step(1)
    assert obs.shape == (4,) and reward == 1.0 and terminated is False and truncated is False
    env.close()


@pytest.mark.parametrize('name, gym_id', [('cartpole', 'CartPole-v1'), ('acrobot', 'Acrobot-v1'),
                                          ('pendulum', 'Pendulum-v1')])
def test_registered_classic_control_names_preset_the_id_and_run_in_process(name, gym_id):
    env = make_env(dict(type=name))
    assert env.cfg.id == gym_id and env.spec.id == gym_id
    assert env.cfg.manager == dict(type='base')
    env.close()


def test_gym_type_defaults_to_the_subprocess_manager_and_fills_its_options():
    section = compile_section('env', dict(type='gym', id='CartPole-v1'))
    assert section.manager.type == 'subprocess'
    assert section.manager.num_workers == 0 and section.manager.context == 'spawn'
    assert set(ENV_MANAGER_REGISTRY.names()) >= {'base', 'subprocess'}


def test_max_episode_steps_and_kwargs_reach_gymnasium_make():
    env = make_env(dict(type='gym', id='Pendulum-v1', max_episode_steps=7, kwargs=dict(g=5.0)))
    assert env.spec.max_episode_steps == 7 and env.unwrapped.g == 5.0
    env.reset(seed=0)
    flags = [env.step(np.zeros(1, np.float32))[3] for _ in range(7)]
    assert flags == [False] * 6 + [True]


def test_unknown_env_type_lists_close_registered_names():
    with pytest.raises(ConfigError) as err:
        make_env(dict(type='cartpol'))
    assert "'cartpole'" in str(err.value) and 'env.type' in str(err.value)


def test_unknown_gym_id_suggests_close_ids_and_registered_names():
    with pytest.raises(ConfigError) as err:
        make_env(dict(type='gym', id='CartPol-v1'))
    assert 'env.id' in str(err.value) and "'CartPole-v1'" in str(err.value)
    with pytest.raises(ConfigError) as err:
        make_env(dict(type='gym', id='cartpole'))
    assert "env=dict(type='cartpole')" in str(err.value)


def test_missing_id_and_bad_values_are_config_errors_naming_the_key():
    with pytest.raises(ConfigError, match='"env.id"'):
        make_env(dict(type='gym'))
    with pytest.raises(ConfigError, match='"env.collector_env_num"'):
        compile_section('env', dict(type='cartpole', collector_env_num=0))
    with pytest.raises(ConfigError, match='"env.max_episode_steps"'):
        compile_section('env', dict(type='cartpole', max_episode_steps=2.5))


def test_manager_options_are_checked_with_suggestions():
    with pytest.raises(ConfigError, match="Did you mean 'num_workers'"):
        compile_section('env', dict(type='cartpole', manager=dict(type='subprocess', num_worker=2)))
    with pytest.raises(ConfigError, match='"env.manager.context"'):
        compile_section('env', dict(type='cartpole', manager=dict(type='subprocess', context='threads')))
    with pytest.raises(ConfigError, match="unknown env manager 'subproces'"):
        compile_section('env', dict(type='cartpole', manager=dict(type='subproces')))


def test_registered_subclass_is_in_the_env_registry():
    assert ENV_REGISTRY.get('gym') is GymEnv
    assert issubclass(ENV_REGISTRY.get('cartpole'), GymEnv)
