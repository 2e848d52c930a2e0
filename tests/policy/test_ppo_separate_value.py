"""The write-up's networks sized from the task, learning rates scaled by hid2, and PPO with the value trained apart."""
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

import sparring.dizoo  # noqa: F401  (registers the envs)
from sparring.config import compile_section
from sparring.config.registry import MODEL_REGISTRY, POLICY_REGISTRY
from sparring.config.schema import ConfigError
from sparring.policy.model.task_mlp import task_sizes
from sparring.policy.ppo_separate_value import scaled_lr
from sparring.worker.collector import SampleCollector
from sparring.worker.env.manager import make_env_manager

pytestmark = pytest.mark.usefixtures('one_torch_thread')
HOPPER_OBS = gym.spaces.Box(-np.inf, np.inf, (11,), np.float64)
HOPPER_ACT = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)


def linear_shapes(trunk):
    return [tuple(layer.weight.shape) for layer in trunk if isinstance(layer, torch.nn.Linear)]


# -- sizes and learning rates, by hand --------------------------------------------------------

def test_hopper_sizes_by_hand():
    # policy: 11 x 10 = 110, 3 x 10 = 30, sqrt(110 * 30) = 57.4 -> 57; value: 110, sqrt(110 * 5) = 23.5 -> 23, 5
    assert task_sizes(11, 3) == ([110, 57, 30], [110, 23, 5])
    cfg = compile_section('policy.model', dict(type='task_mlp'))
    model = MODEL_REGISTRY.get('task_mlp')(cfg, HOPPER_OBS, HOPPER_ACT)
    assert linear_shapes(model.actor_trunk) == [(110, 11), (57, 110), (30, 57)]
    assert linear_shapes(model.critic_trunk) == [(110, 11), (23, 110), (5, 23)]
    assert tuple(model.policy_head.weight.shape) == (3, 30) and tuple(model.value_head.weight.shape) == (1, 5)
    assert isinstance(model.actor_trunk[1], torch.nn.Tanh) and model.log_std.shape == (3,)


def test_the_time_feature_counts_as_an_observation_dimension():
    with_time = gym.spaces.Box(-np.inf, np.inf, (12,), np.float64)
    model = MODEL_REGISTRY.get('task_mlp')(compile_section('policy.model', dict(type='task_mlp')), with_time, HOPPER_ACT)
    assert model.actor_sizes == [120, 60, 30] and model.critic_sizes == [120, 24, 5]


def test_the_plain_mlp_keeps_one_width_list_for_both_trunks():
    cfg = compile_section('policy.model', dict(type='mlp', hidden_sizes=[32, 16]))
    model = MODEL_REGISTRY.get('mlp')(cfg, HOPPER_OBS, HOPPER_ACT)
    assert model.actor_sizes == model.critic_sizes == [32, 16]
    assert linear_shapes(model.critic_trunk) == [(32, 11), (16, 32)]


def _policy(observation_space=HOPPER_OBS, action_space=HOPPER_ACT, **sections):
    section = dict(dict(type='ppo_separate_value', model=dict(type='task_mlp')), **sections)
    cfg = compile_section('policy', section)
    return POLICY_REGISTRY.get('ppo_separate_value')(cfg, observation_space, action_space, seed=0)


def test_learning_rates_scaled_by_hid2():
    policy = _policy(learn=dict(lr=9e-4, value_lr=1e-2, lr_scale='hid2'))
    assert policy.lr == pytest.approx(9e-4 / math.sqrt(57))  # 1.19e-4
    assert policy.value_lr == pytest.approx(1e-2 / math.sqrt(23))  # 2.09e-3
    assert policy.optimizer.param_groups[0]['lr'] == pytest.approx(9e-4 / math.sqrt(57))
    assert policy.value_optimizer.param_groups[0]['lr'] == pytest.approx(1e-2 / math.sqrt(23))
    unscaled = _policy(learn=dict(lr=9e-4, value_lr=1e-2))
    assert (unscaled.lr, unscaled.value_lr) == (9e-4, 1e-2)
    assert scaled_lr(1.0, [64, 16], 'hid2') == 0.25
    with pytest.raises(ConfigError, match='policy.learn.lr_scale.*two hidden layers'):
        _policy(model=dict(type='mlp', hidden_sizes=[64]), learn=dict(lr_scale='hid2'))
    with pytest.raises(ConfigError, match='policy.learn.lr_scale'):
        _policy(learn=dict(lr_scale='hid1'))


# -- the value function trained apart ----------------------------------------------------------

def test_the_two_optimisers_split_the_parameters():
    policy = _policy()
    model = policy.model
    value_ids = {id(p) for p in [*model.critic_trunk.parameters(), *model.value_head.parameters()]}
    policy_ids = {id(p) for group in policy.optimizer.param_groups for p in group['params']}
    assert {id(p) for p in policy.value_optimizer.param_groups[0]['params']} == value_ids
    assert not policy_ids & value_ids
    assert policy_ids | value_ids == {id(p) for p in policy.net.parameters()}
    assert id(model.log_std) in policy_ids


def _pendulum(**learn):
    cfg = compile_section('policy', dict(type='ppo_separate_value', model=dict(type='task_mlp'),
                                         collect=dict(n_steps=150),
                                         learn=dict(dict(objective='kl_penalty', epochs=20, num_minibatches=1,
                                                         value_epochs=10, value_minibatch_size=256), **learn)))
    env = make_env_manager(dict(type='pendulum'), 4, 0)
    policy = POLICY_REGISTRY.get('ppo_separate_value')(cfg, env.observation_space, env.action_space, seed=0)
    return policy, SampleCollector(env, policy, 150)


def test_value_fitted_apart_on_this_and_the_previous_chunk_and_the_policy_on_full_batch_epochs():
    policy, collector = _pendulum(lr=1e-6, kl_target=0.003)
    critic_before = [p.detach().clone() for p in policy.model.critic_trunk.parameters()]
    stats = policy.learn(collector.collect().data)
    # the policy: 20 epochs of the whole 600-step chunk (a tiny lr keeps the KL below the early stop)
    assert stats['gradient_steps'] == 20 and stats['samples_consumed'] == 20 * 600 and stats['early_stop'] == 0.0
    # the value: 10 epochs of 600 // 256 = 2 minibatches; nothing to replay yet
    assert stats['value_gradient_steps'] == 20 and stats['value_samples'] == 600
    assert any(not torch.equal(a, b) for a, b in zip(critic_before, policy.model.critic_trunk.parameters()))
    stats = policy.learn(collector.collect().data)
    assert stats['value_samples'] == 1200 and stats['value_gradient_steps'] == 10 * (1200 // 256)
    assert stats['value_loss'] > 0 and np.isfinite(stats['value_loss'])


def test_the_policy_loss_leaves_the_value_alone(monkeypatch):
    policy, collector = _pendulum()
    monkeypatch.setattr(type(policy), '_after_policy_epochs', lambda self, batch, progress: {})
    critic = [p.detach().clone() for p in [*policy.model.critic_trunk.parameters(), *policy.model.value_head.parameters()]]
    actor = [p.detach().clone() for p in policy.model.actor_trunk.parameters()]
    policy.learn(collector.collect().data)
    after = [*policy.model.critic_trunk.parameters(), *policy.model.value_head.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(critic, after))
    assert any(not torch.equal(a, b) for a, b in zip(actor, policy.model.actor_trunk.parameters()))


def test_reward_scale_multiplies_the_rewards_before_gae():
    policy = _policy(learn=dict(reward_scale=0.5, gamma=0.9, gae_lambda=1.0))
    T, B = 3, 1
    chunk = dict(obs=np.zeros((T, B, 11)), action=np.zeros((T, B, 3), np.float32), log_prob=np.zeros((T, B), np.float32),
                 value=np.zeros((T, B), np.float32), next_value=np.zeros((T, B), np.float32),
                 reward=np.full((T, B), 2.0, np.float32), terminated=np.array([[False], [False], [True]]),
                 truncated=np.zeros((T, B), bool))
    batch = policy._train_batch(chunk)
    # rewards of 1 after scaling: returns 1 + 0.9 + 0.81, 1 + 0.9, 1
    np.testing.assert_allclose(batch.kept.ret.numpy(), [2.71, 1.9, 1.0], rtol=1e-6)
    assert chunk['reward'][0, 0] == 2.0  # the caller's chunk is not touched


def test_checkpoint_and_reset_carry_the_value_optimiser():
    policy, collector = _pendulum()
    policy.learn(collector.collect().data)
    state = policy.state_dict()
    assert state['value_optimizer']['state']
    other, _ = _pendulum()
    other.load_state_dict(state)
    for a, b in zip(policy.value_optimizer.state_dict()['state'].values(),
                    other.value_optimizer.state_dict()['state'].values()):
        assert torch.equal(a['exp_avg'], b['exp_avg'])
    policy.reset_optimizer()
    assert not policy.value_optimizer.state and not policy.optimizer.state


def test_config_errors_name_the_key():
    with pytest.raises(ConfigError, match='policy.model.shared_trunk'):
        compile_section('policy', dict(type='ppo_separate_value', model=dict(type='mlp', shared_trunk=True)))
    with pytest.raises(ConfigError, match='policy.model.type.*recurrent'):
        compile_section('policy', dict(type='ppo_separate_value', model=dict(type='lstm')))
    with pytest.raises(ConfigError, match='policy.learn.grad_clip'):
        compile_section('policy', dict(type='ppo_separate_value', learn=dict(grad_clip='five')))
    with pytest.raises(ConfigError, match='policy.learn.value_minibatch_size'):
        compile_section('policy', dict(type='ppo_separate_value', learn=dict(value_minibatch_size=0)))
    with pytest.raises(ConfigError, match='policy.model.width_per_dim'):
        compile_section('policy', dict(type='ppo', model=dict(type='task_mlp', width_per_dim=0)))


def test_a_chunk_with_only_value_steps_still_fits_the_value():
    # e.g. a turn-based player's chunk where it never moved: nothing for the policy, the value still learns
    policy = _policy(learn=dict(epochs=2, num_minibatches=1, value_epochs=1))
    T, B = 4, 2
    rng = np.random.default_rng(0)
    chunk = dict(obs=rng.normal(size=(T, B, 11)), action=np.zeros((T, B, 3), np.float32),
                 log_prob=np.zeros((T, B), np.float32), value=np.zeros((T, B), np.float32),
                 next_value=np.zeros((T, B), np.float32), reward=np.ones((T, B), np.float32),
                 terminated=np.zeros((T, B), bool), truncated=np.zeros((T, B), bool),
                 train_mask=np.zeros((T, B), bool), value_mask=np.ones((T, B), bool))
    before = policy.model.value_head.weight.detach().clone()
    stats = policy.learn(chunk)
    assert stats['policy_loss'] == 0.0 and stats['value_gradient_steps'] == 1 and stats['skipped_updates'] == 0
    assert not torch.equal(before, policy.model.value_head.weight)
