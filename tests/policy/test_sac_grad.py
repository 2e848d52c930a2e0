"""SAC's hand-written gradients (policy/sac_grad.py) against autograd's on the same losses: the same losses and
figures bit for bit, the same gradients to float rounding, over the cases the maths branches on."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from sparring.config.compile import compile_section
from sparring.policy import sac_grad as G
from sparring.policy import sac_loss as L
from sparring.policy.sac import SACPolicy

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACTIONS = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)


def _policy(activation='relu', num_critics=2, auto_alpha=True, action_space=ACTIONS):
    cfg = compile_section('policy', dict(type='sac', learn=dict(auto_alpha=auto_alpha, init_alpha=0.3),
                                         model=dict(hidden_sizes=[32, 16], activation=activation,
                                                    num_critics=num_critics)))
    return SACPolicy(cfg, OBS, action_space, seed=0)


def _inputs(policy, prioritized, n=64):
    g = torch.Generator().manual_seed(1)
    weights = torch.rand(n, generator=g) if prioritized else None
    return (policy.model, torch.randn(n, 3, generator=g), torch.randn(n, 3, generator=g),
            torch.rand(n, 2, generator=g) * 2 - 1, torch.randn(n, generator=g), torch.full((n,), 0.99), weights,
            policy.log_alpha, policy.target_entropy, policy.target_critics, torch.randn(n, 2, generator=g),
            torch.randn(n, 2, generator=g))


@pytest.mark.parametrize('activation, num_critics, auto_alpha, prioritized', [
    ('relu', 2, True, False), ('relu', 2, True, True), ('tanh', 2, True, False), ('relu', 3, False, True),
])
def test_hand_gradients_equal_autograds(activation, num_critics, auto_alpha, prioritized):
    policy = _policy(activation, num_critics, auto_alpha)
    with torch.no_grad():  # one log-std above the clamp's top and one inside: both sides of its backward
        policy.model.actor[-1].bias[2:] = torch.tensor([3.0, -0.5])
    params = policy.optimizer.param_groups[0]['params']
    inputs = _inputs(policy, prioritized)
    reference = L.continuous_terms(*inputs)
    reference.loss.backward()
    expected = [p.grad for p in params]
    for p in params:
        p.grad = None
    hand = G.continuous_step(*inputs)
    # The same forward operations in the same order: equal bit for bit on the machines we ran; a tolerance of
    # float32 rounding (1e-6 relative) so that another CPU's kernels choosing another summation order still pass.
    torch.testing.assert_close(hand.loss, reference.loss.detach(), rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(hand.stats, reference.stats, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(hand.td_abs, reference.td_abs, rtol=1e-6, atol=1e-7)
    assert policy.log_alpha.requires_grad == auto_alpha
    for p, want in zip(params, expected):
        assert (p.grad is None) == (want is None)
        if want is not None:
            torch.testing.assert_close(p.grad, want, rtol=1e-5, atol=1e-6)
    clamped = policy.model.actor_layers[-1].bias.grad[2]
    assert clamped == 0.0  # the log-std above the clamp gets no gradient


def test_the_policy_takes_hand_gradients_for_relu_and_tanh_networks_and_autograd_otherwise():
    assert _policy('relu')._hand_gradients and _policy('tanh')._hand_gradients
    assert not _policy('elu')._hand_gradients
    assert not _policy(action_space=gym.spaces.Discrete(3))._hand_gradients


def test_a_learning_step_by_hand_matches_autograds_step():
    chunk_rng = np.random.default_rng(0)
    T, B = 16, 2
    chunk = dict(obs=chunk_rng.standard_normal((T, B, 3)).astype(np.float32),
                 next_obs=chunk_rng.standard_normal((T, B, 3)).astype(np.float32),
                 action=chunk_rng.uniform(-2, 2, (T, B, 2)).astype(np.float32), reward=chunk_rng.standard_normal((T, B)),
                 terminated=np.zeros((T, B), bool), truncated=np.zeros((T, B), bool))
    by_hand, by_autograd = _policy(), _policy()
    by_autograd._hand_gradients = False
    for policy in (by_hand, by_autograd):
        policy.cfg['learn'].update(learning_starts=1, updates_per_chunk=3, batch_size=16)
        policy.learn(chunk)
    for (name, a), b in zip(by_hand.net.state_dict().items(), by_autograd.net.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6, msg=name)


def test_the_layer_lists_follow_the_parameters_through_a_copy_a_load_and_a_move():
    policy = _policy()
    critics, targets = policy.model.critics, policy.target_critics
    for module in (critics, targets):
        assert all(w is mw and b is mb for (w, b), mw, mb in zip(module.layers, module.weights, module.biases))
    assert targets.layers[0][0] is not critics.layers[0][0]
    fresh = _policy()
    with torch.no_grad():
        for p in fresh.net.parameters():
            p.add_(1.0)
    policy.load_state_dict(fresh.state_dict())
    policy.to_device(torch.device('cpu'))
    assert torch.equal(critics.layers[1][0], fresh.model.critics.weights[1])
    assert torch.equal(policy.model.actor_layers[0].weight, fresh.model.actor[0].weight)
