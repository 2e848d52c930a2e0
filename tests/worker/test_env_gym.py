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


def test_gym_type_steps_in_process_unless_asked_and_fills_the_asked_managers_options():
    section = compile_section('env', dict(type='gym', id='CartPole-v1'))
    assert section.manager == dict(type='base')
    asked = compile_section('env', dict(type='gym', id='CartPole-v1', manager=dict(type='subprocess')))
    assert asked.manager.num_workers == 0 and asked.manager.context == 'spawn'
    assert set(ENV_MANAGER_REGISTRY.names()) >= {'base', 'subprocess'}


BARE_SCRIPT = """
import numpy as np
from sparring.worker.env.manager import make_env_manager

manager = make_env_manager(dict(type='gym', id='CartPole-v1'), 8, seed=0)
manager.reset()
for _ in range(20):
    manager.step(np.zeros(8, np.int64))
manager.close()
print(type(manager).__name__)
"""


@pytest.mark.slow
def test_a_bare_script_without_a_main_guard_steps_gym_envs(tmp_path):
    """What the README's first example does, without ``if __name__ == '__main__':``: spawned env workers would
    run the script again and die, so the default must not spawn."""
    import os
    import subprocess
    import sys
    script = tmp_path / 'bare.py'
    script.write_text(BARE_SCRIPT)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, OMP_NUM_THREADS='1'))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == 'BaseEnvManager' and 'Traceback' not in done.stderr


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


# -- the time-step feature ----------------------------------------------------------------------

def test_time_feature_is_the_elapsed_fraction_and_reaches_one_at_the_limit():
    env = make_env(dict(type='pendulum', time_feature=True, max_episode_steps=4))
    assert env.observation_space.shape == (4,) and env.observation_space.dtype == np.float32
    assert env.observation_space.low[-1] == 0.0 and env.observation_space.high[-1] == 1.0
    obs, _ = env.reset(seed=0)
    fractions, flags = [obs[-1]], []
    for _ in range(4):
        obs, _, terminated, truncated, _ = env.step(np.zeros(1, np.float32))
        fractions.append(obs[-1])
        flags.append((terminated, truncated))
    assert fractions == [0.0, 0.25, 0.5, 0.75, 1.0]
    # the limit is a state with no time left: terminated (not bootstrapped), and still truncated
    assert flags == [(False, False)] * 3 + [(True, True)]
    obs, _ = env.reset(seed=1)
    assert obs[-1] == 0.0
    plain = make_env(dict(type='pendulum', max_episode_steps=4))
    plain_obs, _ = plain.reset(seed=1)
    np.testing.assert_array_equal(obs[:-1], plain_obs)
    env.close()
    plain.close()


def test_time_feature_needs_a_flat_box_observation():
    with pytest.raises(ConfigError, match='"env.time_feature".*flat Box'):
        make_env(dict(type='gym', id='FrozenLake-v1', time_feature=True, manager=dict(type='base')))
    with pytest.raises(ConfigError, match='"env.time_feature"'):
        make_env(dict(type='pendulum', time_feature='yes'))


def test_time_feature_chunks_bootstrap_a_cut_episode_and_not_the_time_limit():
    import torch
    from sparring.config.registry import POLICY_REGISTRY
    from sparring.policy import functional as F
    from sparring.worker.collector import SampleCollector
    from sparring.worker.env.manager import make_env_manager
    torch.set_num_threads(1)
    env = make_env_manager(dict(type='pendulum', time_feature=True, max_episode_steps=5), 2, 0)
    policy = POLICY_REGISTRY.get('ppo')(compile_section('policy', dict(type='ppo')), env.observation_space,
                                        env.action_space, seed=0)
    collector = SampleCollector(env, policy, 7)
    chunk = collector.collect().data
    # rows 0..4 are the first episode (fractions 0 .. 0.8); the limit is reached by row 4's step
    np.testing.assert_allclose(chunk['obs'][:, 0, -1], [0.0, 0.2, 0.4, 0.6, 0.8, 0.0, 0.2], atol=1e-7)
    assert chunk['terminated'][:, 0].tolist() == [False] * 4 + [True, False, False]
    assert chunk['truncated'][:, 0].tolist() == [False] * 4 + [True, False, False]
    adv, ret = F.gae(chunk['reward'], chunk['value'], chunk['next_value'], chunk['terminated'], chunk['truncated'],
                     0.99, 0.95)
    # the last step before the limit: its return is its reward alone, nothing bootstrapped past the limit
    assert ret[4, 0] == pytest.approx(chunk['reward'][4, 0], rel=1e-6)
    # the chunk cut the second episode at fraction 0.4: bootstrapped from that observation's value
    cut_obs = collector._obs
    assert cut_obs[0, -1] == pytest.approx(0.4)
    assert chunk['next_value'][6, 0] == pytest.approx(policy.value(cut_obs)[0], rel=1e-6)
    assert ret[6, 0] == pytest.approx(chunk['reward'][6, 0] + 0.99 * chunk['next_value'][6, 0], rel=1e-5)
    env.close()
