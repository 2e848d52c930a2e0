"""The Nature CNN actor-critic: layer shapes, orthogonal init gains, pixel scaling, config errors, PPO use."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from sparring.config.compile import compile_section
from sparring.config.schema import ConfigError
from sparring.config.registry import MODEL_REGISTRY
from sparring.policy import PPOPolicy
from sparring.policy.model.cnn import NatureCNNActorCritic

pytestmark = pytest.mark.usefixtures('one_torch_thread')
FRAMES = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
SIX_ACTIONS = gym.spaces.Discrete(6)


def build(observation_space=FRAMES, action_space=SIX_ACTIONS, **cfg):
    torch.manual_seed(0)
    section = compile_section('policy.model', dict(type='cnn', **cfg))
    return MODEL_REGISTRY.get('cnn')(section, observation_space, action_space)


def test_cnn_is_registered_and_has_the_nature_layers():
    assert MODEL_REGISTRY.get('cnn') is NatureCNNActorCritic
    model = build()
    convs = [m for m in model.convs if isinstance(m, torch.nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size, c.stride) for c in convs] == [
        (4, 32, (8, 8), (4, 4)), (32, 64, (4, 4), (2, 2)), (64, 64, (3, 3), (1, 1))]
    hidden = model.trunk[1]
    assert (hidden.in_features, hidden.out_features) == (64 * 7 * 7, 512)
    assert (model.policy_head.in_features, model.policy_head.out_features) == (512, 6)
    assert (model.value_head.in_features, model.value_head.out_features) == (512, 1)


def test_forward_shapes_for_a_batch_of_stacked_frames():
    model = build()
    obs = torch.randint(0, 256, (5, 4, 84, 84), dtype=torch.uint8)
    logits, value = model(obs)
    assert logits.shape == (5, 6) and value.shape == (5,)
    torch.testing.assert_close(model.value(obs), value)


@pytest.mark.parametrize('name, gain', [('conv0', 2 ** 0.5), ('conv1', 2 ** 0.5), ('conv2', 2 ** 0.5),
                                        ('hidden', 2 ** 0.5), ('policy', 0.01), ('value', 1.0)])
def test_orthogonal_init_gains(name, gain):
    model = build()
    convs = [m for m in model.convs if isinstance(m, torch.nn.Conv2d)]
    layer = dict(conv0=convs[0], conv1=convs[1], conv2=convs[2], hidden=model.trunk[1], policy=model.policy_head,
                 value=model.value_head)[name]
    weight = layer.weight.detach().reshape(layer.weight.shape[0], -1).double()
    assert weight.shape[0] <= weight.shape[1]  # wide matrices: orthogonal rows of norm `gain`
    torch.testing.assert_close(weight @ weight.T, gain ** 2 * torch.eye(weight.shape[0], dtype=torch.float64),
                               atol=1e-5 * max(gain ** 2, 1e-2), rtol=0)
    assert (layer.bias == 0).all()


def test_uint8_frames_are_scaled_to_unit_range_inside_the_model():
    pixels = build()
    floats = build(observation_space=gym.spaces.Box(0.0, 1.0, (4, 84, 84), np.float32))
    floats.load_state_dict(pixels.state_dict())
    obs = torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8)
    for a, b in zip(pixels(obs), floats(obs.float() / 255)):
        torch.testing.assert_close(a, b)
    assert not torch.allclose(floats(obs.float())[0], pixels(obs)[0])  # float inputs are not rescaled


def test_single_grey_frames_and_box_actions():
    model = build(observation_space=gym.spaces.Box(0, 255, (84, 84), np.uint8),
                  action_space=gym.spaces.Box(-1, 1, (3,), np.float32), init_log_std=-0.5)
    assert model.continuous and model.log_std.shape == (3,) and (model.log_std == -0.5).all()
    mean, value = model(torch.zeros(2, 84, 84, dtype=torch.uint8))
    assert mean.shape == (2, 3) and value.shape == (2,)


def test_bad_spaces_and_layers_are_clear_errors():
    with pytest.raises(TypeError, match=r'\[C, H, W\]'):
        build(observation_space=gym.spaces.Box(0, 1, (10,), np.float32))
    with pytest.raises(ConfigError, match='"policy.model.conv_layers".*do not fit'):
        build(observation_space=gym.spaces.Box(0, 255, (1, 16, 16), np.uint8))
    with pytest.raises(ConfigError, match='"policy.model.conv_layers"'):
        build(conv_layers=[[32, 8]])
    with pytest.raises(ConfigError, match='"policy.model.hidden_size"'):
        build(hidden_size=0)


def test_ppo_with_the_cnn_acts_on_uint8_frames_and_learns():
    space = gym.spaces.Box(0, 255, (4, 36, 36), np.uint8)  # the smallest frames the Nature layers take
    cfg = compile_section('policy', dict(type='ppo', model=dict(type='cnn', hidden_size=64),
                                         learn=dict(epochs=2, num_minibatches=2)))
    policy = PPOPolicy(cfg, space, gym.spaces.Discrete(4), seed=0)
    rng = np.random.default_rng(0)
    T, B = 8, 2
    obs = rng.integers(0, 256, (T, B, 4, 36, 36), dtype=np.uint8)
    out = policy.act(obs.reshape(T * B, 4, 36, 36))
    assert out.action.shape == (T * B,) and np.isfinite(out.value).all()
    chunk = dict(obs=obs, action=out.action.reshape(T, B), log_prob=out.log_prob.reshape(T, B),
                 value=out.value.reshape(T, B), reward=rng.normal(size=(T, B)).astype(np.float32),
                 terminated=np.zeros((T, B), bool), truncated=np.zeros((T, B), bool),
                 next_value=np.zeros((T, B), np.float32))
    before = {k: v.clone() for k, v in policy.get_params().items()}
    stats = policy.learn(chunk)
    assert np.isfinite(stats['policy_loss']) and np.isfinite(stats['value_loss'])
    assert any(not torch.equal(before[k], v) for k, v in policy.get_params().items())


BOARD = gym.spaces.Box(0.0, 1.0, (3, 6, 7), np.float32)


def test_a_bfloat16_trunk_keeps_float32_heads_and_parameters_and_comes_close():
    exact = build(BOARD, gym.spaces.Discrete(7), conv_layers=[[64, 4, 1]], hidden_size=256)
    fast = build(BOARD, gym.spaces.Discrete(7), conv_layers=[[64, 4, 1]], hidden_size=256, trunk_precision='bfloat16')
    fast.load_state_dict(exact.state_dict())
    obs = (torch.rand(32, 3, 6, 7) < 0.3).float()
    (_, value), (fast_logits, fast_value) = exact(obs), fast(obs)
    assert fast_logits.dtype == fast_value.dtype == torch.float32
    assert all(p.dtype == torch.float32 for p in fast.parameters())
    # bfloat16 keeps 8 significant bits: about 1 % of the hidden activations' size, not more.
    scale = exact.features(obs).abs().max()
    assert (fast.features(obs) - exact.features(obs)).abs().max() < 0.02 * scale
    assert not torch.equal(fast.features(obs), exact.features(obs))  # it really ran in bfloat16
    torch.testing.assert_close(fast_value, value, atol=0.05, rtol=0.05)
    fast_value.sum().backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in fast.trunk.parameters())


def test_an_unknown_trunk_precision_is_refused():
    with pytest.raises(ConfigError, match='trunk_precision'):
        build(BOARD, gym.spaces.Discrete(7), conv_layers=[[64, 4, 1]], hidden_size=256, trunk_precision='float16')
