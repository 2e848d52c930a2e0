"""MuJoCo envs under short names, GymEnv's reward scaling and evaluation on raw rewards, the ready configs."""
import sys

import gymnasium
import numpy as np
import pytest

from sparring.config import compile_config
from sparring.config.schema import ConfigError
from sparring.framework import serial_pipeline
from sparring.worker.env import make_env
from sparring.worker.env.gym_env import evaluator_env_config

pytestmark = pytest.mark.usefixtures('one_torch_thread')
TASKS = [('hopper', 'Hopper-v5', 11, 3), ('halfcheetah', 'HalfCheetah-v5', 17, 6), ('walker2d', 'Walker2d-v5', 17, 6)]


def wrappers_of(env):
    found = []
    while isinstance(env, gymnasium.Wrapper):
        found.append(type(env))
        env = env.env
    return found


# -- reward scaling (any Gymnasium env; Pendulum needs no MuJoCo) -------------------------------

def rollout(env_cfg, steps=200, seed=3):
    env = make_env(env_cfg)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    rewards, terminated = [], []
    for _ in range(steps):
        _, reward, term, trunc, _ = env.step(rng.uniform(-2, 2, size=(1,)).astype(np.float32))
        rewards.append(float(reward))
        terminated.append(term)
    env.close()
    return np.array(rewards), np.array(terminated)


def test_reward_scaling_divides_by_the_running_std_of_the_discounted_return():
    raw, terminated = rollout(dict(type='pendulum'))
    scaled, _ = rollout(dict(type='pendulum', reward_scaling=True, reward_scaling_gamma=0.9))
    assert not terminated.any()
    discounted = np.zeros_like(raw)
    running = 0.0
    for t, r in enumerate(raw):
        running = 0.9 * running + r
        discounted[t] = running
    # Not the reward's own std, nor mean-centred: only a scale.
    std_so_far = np.array([discounted[:t + 1].std() for t in range(len(raw))])
    np.testing.assert_allclose(scaled[20:], raw[20:] / std_so_far[20:], rtol=2e-3)
    assert np.sign(scaled).tolist() == np.sign(raw).tolist()


def test_evaluation_envs_get_raw_rewards():
    cfg = dict(type='pendulum', reward_scaling=True)
    train_env = make_env(cfg)
    eval_env = make_env(evaluator_env_config(cfg))
    assert gymnasium.wrappers.NormalizeReward in wrappers_of(train_env)
    assert gymnasium.wrappers.NormalizeReward not in wrappers_of(eval_env)
    assert evaluator_env_config(dict(type='pendulum')) == make_env(dict(type='pendulum')).cfg
    train_env.close()
    eval_env.close()


def test_reward_scaling_options_are_checked():
    with pytest.raises(ConfigError, match='"env.reward_scaling_gamma"'):
        make_env(dict(type='pendulum', reward_scaling=True, reward_scaling_gamma=1.5))
    with pytest.raises(ConfigError, match='"env.reward_scaling"'):
        make_env(dict(type='pendulum', reward_scaling='yes'))


def test_missing_mujoco_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, 'mujoco', None)  # import mujoco now raises ImportError
    with pytest.raises(ImportError, match=r'sparring\[mujoco\]'):
        make_env(dict(type='hopper'))


# -- the MuJoCo tasks ---------------------------------------------------------------------------

@pytest.mark.parametrize('name, gym_id, obs_dim, act_dim', TASKS)
def test_registered_mujoco_names_preset_the_v5_ids(name, gym_id, obs_dim, act_dim):
    pytest.importorskip('mujoco')
    env = make_env(dict(type=name))
    assert env.spec.id == gym_id and env.cfg.manager.type == 'base'
    assert env.observation_space.shape == (obs_dim,) and env.action_space.shape == (act_dim,)
    obs, _ = env.reset(seed=0)
    obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
    assert obs.shape == (obs_dim,) and np.isfinite(reward)
    env.close()


@pytest.mark.parametrize('name', [t[0] for t in TASKS])
def test_ready_configs_use_the_mujoco_recipe(name):
    pytest.importorskip('mujoco')
    from sparring.framework.cli import load_config_file
    config = load_config_file(f'dizoo/mujoco/config/{name}_ppo.py')
    cfg = compile_config(config, save=False)
    assert cfg.env.type == name and cfg.env.reward_scaling and cfg.policy.obs_norm
    assert cfg.policy.model.type == 'mlp' and cfg.policy.collect.n_steps * cfg.env.collector_env_num == 2048


def test_hopper_trains_with_a_gaussian_policy_and_evaluates_raw_returns(tmp_path):
    pytest.importorskip('mujoco')
    from sparring.dizoo.mujoco.config import mujoco_ppo_config
    config = mujoco_ppo_config('hopper', max_env_steps=256)
    config.update(exp_name=str(tmp_path / 'hopper'))
    config['env'].update(collector_env_num=2, evaluator_env_num=2, n_evaluator_episodes=2,
                         max_episode_steps=50)
    config['policy']['collect'] = dict(n_steps=64)
    config['policy']['learn'].update(epochs=2, num_minibatches=2)
    config['train'].update(eval_every_iters=0, progress_bar=False, tensorboard=False)
    summary = serial_pipeline(config, seed=0)
    assert summary['env_steps'] == 256 and np.isfinite(summary['eval_mean'])
    # Hopper pays ~1 per step for staying alive: a raw return, not one divided by a return's std.
    assert summary['eval_mean'] > 5.0
