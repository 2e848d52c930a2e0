"""``sparring export`` of a SAC player: the Gaussian's mean and log-std (Box actions) or the masked probabilities
(Discrete), as the policy computes them."""
import gymnasium as gym
import numpy as np
import torch

from sparring.config.compile import compile_section
from sparring.framework.export import export_policy
from sparring.policy.sac import SACPolicy


def _policy(action_space):
    cfg = compile_section('policy', dict(type='sac', model=dict(hidden_sizes=[16]), obs_norm=True))
    policy = SACPolicy(cfg, gym.spaces.Box(-1.0, 1.0, (3,), np.float32), action_space, seed=0)
    policy.net.normalizer.update(np.random.default_rng(1).standard_normal((50, 3)))
    return policy


def test_exported_sac_player_gives_its_gaussian_or_its_masked_probabilities(tmp_path):
    obs = np.random.default_rng(0).standard_normal((6, 3)).astype(np.float32)
    box = _policy(gym.spaces.Box(-2.0, 2.0, (2,), np.float32))
    info = export_policy(box, str(tmp_path / 'box.pt'), 'torchscript')
    assert info['outputs'] == ['action_mean', 'action_log_std', 'value', 'action']
    with torch.no_grad():
        mean, log_std, value, action = torch.jit.load(info['path'])(torch.as_tensor(obs))
        want_mean, want_log_std = box.model.gaussian(box.net.features(torch.as_tensor(obs)))
    torch.testing.assert_close(mean, want_mean)
    torch.testing.assert_close(log_std, want_log_std)
    deterministic = box.act(obs, deterministic=True).action  # the mean squashed into the bounds
    np.testing.assert_allclose(deterministic, 2.0 * np.tanh(mean.numpy()), atol=1e-6)
    np.testing.assert_allclose(action.numpy(), deterministic, atol=1e-6)  # the greedy action, as the env takes it
    assert value.shape == (6,)

    discrete = _policy(gym.spaces.Discrete(4))
    mask = np.ones((6, 4), bool)
    mask[:, 1] = False
    info = export_policy(discrete, str(tmp_path / 'discrete.pt'), 'torchscript')
    with torch.no_grad():
        probs, value = torch.jit.load(info['path'])(torch.as_tensor(obs), torch.as_tensor(mask))
    np.testing.assert_allclose(probs.numpy(), discrete.action_probabilities(obs, mask), atol=1e-6)
    assert (probs[:, 1] == 0).all() and value.shape == (6,)
