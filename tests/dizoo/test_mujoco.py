"""MuJoCo envs under short names, GymEnv's reward scaling and evaluation on raw rewards, the ready configs
(clipped PPO and the write-up's KL-penalty recipe)."""
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
# The write-up's other tasks, v5 observation sizes (Ant and the humanoids observe more or less than v1 did).
MORE_TASKS = [('swimmer', 'Swimmer-v5', 8, 2), ('reacher', 'Reacher-v5', 10, 2),
              ('invertedpendulum', 'InvertedPendulum-v5', 4, 1), ('inverteddoublependulum', 'InvertedDoublePendulum-v5', 9, 1),
              ('ant', 'Ant-v5', 105, 8), ('humanoid', 'Humanoid-v5', 348, 17), ('humanoidstandup', 'HumanoidStandup-v5', 348, 17)]


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

@pytest.mark.parametrize('name, gym_id, obs_dim, act_dim', TASKS + MORE_TASKS)
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


@pytest.mark.slow
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


# -- the write-up's recipe ----------------------------------------------------------------------

@pytest.mark.parametrize('name', [t[0] for t in TASKS + MORE_TASKS])
def test_ready_kl_configs_carry_the_write_ups_settings(name):
    pytest.importorskip('mujoco')
    from sparring.framework.cli import load_config_file
    cfg = compile_config(load_config_file(f'dizoo/mujoco/config/{name}_ppo_kl.py'), save=False)
    assert cfg.env.type == name and cfg.env.time_feature and not cfg.env.reward_scaling and cfg.policy.obs_norm
    assert cfg.policy.type == 'ppo_separate_value' and cfg.policy.model.type == 'task_mlp'
    learn = cfg.policy.learn
    assert (learn.objective, learn.kl_target, learn.epochs, learn.num_minibatches) == ('kl_penalty', 0.003, 20, 1)
    assert (learn.lr, learn.value_lr, learn.lr_scale) == (9e-4, 1e-2, 'hid2')
    assert (learn.value_epochs, learn.value_minibatch_size, learn.value_replay) == (10, 256, True)
    assert (learn.gamma, learn.gae_lambda) == (0.995, 0.98) and learn.reward_scale == pytest.approx(0.005)


def test_hopper_kl_config_sizes_its_networks_with_the_time_feature():
    pytest.importorskip('mujoco')
    from sparring.config.registry import POLICY_REGISTRY
    from sparring.dizoo.mujoco.config import mujoco_ppo_kl_config
    cfg = compile_config(mujoco_ppo_kl_config('hopper'), save=False)
    env = make_env(cfg.env)
    assert env.observation_space.shape == (12,)  # 11 + the elapsed fraction
    policy = POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, env.observation_space, env.action_space)
    assert policy.model.actor_sizes == [120, 60, 30] and policy.model.critic_sizes == [120, 24, 5]
    assert policy.lr == pytest.approx(9e-4 / 60 ** 0.5) and policy.value_lr == pytest.approx(1e-2 / 24 ** 0.5)
    env.close()


def test_swimmer_kl_batches_are_whole_episodes():
    pytest.importorskip('mujoco')
    from sparring.dizoo.mujoco.config import mujoco_ppo_kl_config
    config = mujoco_ppo_kl_config('swimmer')
    assert config['env']['collector_env_num'] == 5 and config['policy']['collect']['n_steps'] == 1000
    reacher = mujoco_ppo_kl_config('reacher')  # 50 episodes of 50 steps
    assert reacher['env']['collector_env_num'] * reacher['policy']['collect']['n_steps'] == 50 * 50


@pytest.mark.slow
def test_hopper_trains_with_the_kl_recipe(tmp_path):
    pytest.importorskip('mujoco')
    from sparring.dizoo.mujoco.config import mujoco_ppo_kl_config
    config = mujoco_ppo_kl_config('hopper')
    config.update(exp_name=str(tmp_path / 'hopper_kl'))
    config['env'].update(collector_env_num=2, evaluator_env_num=2, n_evaluator_episodes=2, max_episode_steps=50)
    config['policy']['collect'] = dict(n_steps=64)
    config['policy']['learn'].update(epochs=2, value_epochs=2)
    config['train'].update(max_env_steps=256, eval_every_iters=0, progress_bar=False, tensorboard=False)
    summary = serial_pipeline(config, seed=0)
    assert summary['env_steps'] == 256 and np.isfinite(summary['eval_mean']) and summary['eval_mean'] > 5.0
