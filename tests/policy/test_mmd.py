"""Magnetic mirror descent: the loss against hand computations, its minimiser against the closed form, the policy."""
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

import sparring.dizoo  # noqa: F401  (registers the envs)
from sparring.config import compile_section
from sparring.config.registry import POLICY_REGISTRY
from sparring.config.schema import ConfigError
from sparring.policy import distributions as D
from sparring.policy.mmd import mmd_policy_loss, reverse_kl
from sparring.worker.collector import SampleCollector
from sparring.worker.env.manager import make_env_manager

pytestmark = pytest.mark.usefixtures('one_torch_thread')


def _log(*probs):
    return torch.log(torch.tensor([list(probs)]))


# -- the pure pieces ----------------------------------------------------------------------------

def test_reverse_kl_hand_cases_uniform_and_given_reference():
    # KL((0.8, 0.2) || uniform) = 0.8 ln 1.6 + 0.2 ln 0.4
    assert reverse_kl(_log(0.8, 0.2), None).item() == pytest.approx(0.8 * math.log(1.6) + 0.2 * math.log(0.4))
    # KL((0.8, 0.2) || (0.2, 0.8)) = 0.8 ln 4 + 0.2 ln 0.25 = 0.6 ln 4
    assert reverse_kl(_log(0.8, 0.2), _log(0.2, 0.8)).item() == pytest.approx(0.6 * math.log(4.0), rel=1e-6)


def test_reverse_kl_uniform_counts_only_legal_actions():
    # logits (ln 4, 0, 9) with the third action illegal: pi = (0.8, 0.2, 0), the uniform magnet is (1/2, 1/2, 0)
    logits = torch.tensor([[math.log(4.0), 0.0, 9.0]])
    log_probs = D.categorical_log_probs(logits, torch.tensor([[True, True, False]]))
    assert reverse_kl(log_probs, None).item() == pytest.approx(0.8 * math.log(1.6) + 0.2 * math.log(0.4), rel=1e-6)


def test_mmd_loss_hand_case():
    # pi = (0.8, 0.2), the update started from (0.5, 0.5); action 0 was taken with advantage 1: ratio 1.6,
    # clipped at 1.2, so the surrogate is -1.2. KL(pi || pi_old) = 0.8 ln 1.6 + 0.2 ln 0.4 ~ 0.192745;
    # KL(pi || magnet (0.2, 0.8)) = 0.6 ln 4 ~ 0.831777. Loss = -1.2 + 2 * 0.192745 + 0.5 * 0.831777.
    log_probs, old = _log(0.8, 0.2), _log(0.5, 0.5)
    loss, kl_old, kl_magnet = mmd_policy_loss(log_probs[:, 0], old[:, 0], torch.tensor([1.0]), log_probs, old,
                                              _log(0.2, 0.8), clip_range=0.2, kl_coef=2.0, magnet_coef=0.5)
    kl_uniform = 0.8 * math.log(1.6) + 0.2 * math.log(0.4)
    assert kl_old.item() == pytest.approx(kl_uniform, rel=1e-6)
    assert kl_magnet.item() == pytest.approx(0.6 * math.log(4.0), rel=1e-6)
    assert loss.item() == pytest.approx(-1.2 + 2.0 * kl_uniform + 0.5 * 0.6 * math.log(4.0), rel=1e-6)


def test_minimising_the_loss_gives_the_closed_form_mmd_step():
    # One state, two actions, pi_old uniform and one sample of each action (so the mean of ratio * A is the
    # expectation sum_a pi(a) A(a)), no clipping. The minimiser of
    #   -sum_a pi(a) A(a) + c KL(pi || pi_old) + alpha KL(pi || rho)
    # is pi*(a) ~ exp((A(a) + c ln pi_old(a) + alpha ln rho(a)) / (c + alpha)). With A = (1, 0), c = 1,
    # alpha = 0.5, rho = (0.2, 0.8): logit difference (1 + 0.5 ln 0.25) / 1.5 = 0.204569, pi*(0) = 0.550965.
    logits = torch.zeros(1, 2, requires_grad=True)
    old = _log(0.5, 0.5)
    actions, adv = torch.tensor([0, 1]), torch.tensor([1.0, 0.0])
    optimiser = torch.optim.SGD([logits], lr=0.5)
    for _ in range(500):
        log_probs = torch.log_softmax(logits, -1).expand(2, 2)
        loss, _, _ = mmd_policy_loss(D.categorical_log_prob(log_probs, actions), old.expand(2, 2)[0, actions], adv,
                                     log_probs, old.expand(2, 2), _log(0.2, 0.8).expand(2, 2), clip_range=1e6,
                                     kl_coef=1.0, magnet_coef=0.5)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    expected = 1.0 / (1.0 + math.exp(-(1.0 + 0.5 * math.log(0.25)) / 1.5))
    assert expected == pytest.approx(0.550965, abs=1e-6)
    assert torch.softmax(logits, -1)[0, 0].item() == pytest.approx(expected, abs=1e-5)


# -- the policy ---------------------------------------------------------------------------------

def _policy(seed=0, **learn):
    cfg = compile_section('policy', dict(type='ppo', collect=dict(n_steps=16),
                                         learn=dict(dict(objective='mmd', epochs=2, num_minibatches=2), **learn)))
    env = make_env_manager(dict(type='cartpole'), 4, seed)
    policy = POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=seed)
    return policy, SampleCollector(env, policy, 16)


def test_moving_magnet_trails_the_policy_by_magnet_lr_and_is_checkpointed_and_reset():
    policy, collector = _policy(magnet='moving', magnet_lr=0.25, lr=0.01)
    before = {k: v.clone() for k, v in policy.objective.magnet_net.state_dict().items()}
    stats = policy.learn(collector.collect().data)
    assert stats['magnet_coef'] == 0.05 and stats['gradient_steps'] == 4
    live = policy.net.state_dict()
    for key, magnet in policy.objective.magnet_net.state_dict().items():
        torch.testing.assert_close(magnet, before[key] + 0.25 * (live[key] - before[key]))
    assert any(not torch.equal(before[k], live[k]) for k in before)  # the policy did move
    other, _ = _policy(magnet='moving', magnet_lr=0.25, lr=0.01, seed=1)
    other.load_state_dict(policy.state_dict())
    for key, magnet in policy.objective.magnet_net.state_dict().items():
        torch.testing.assert_close(other.objective.magnet_net.state_dict()[key], magnet)
    policy.reset_optimizer()  # a league reset: the magnet starts again from the policy
    for key, magnet in policy.objective.magnet_net.state_dict().items():
        torch.testing.assert_close(magnet, live[key])


def test_uniform_magnet_anneals_alpha_and_keeps_no_network():
    policy, collector = _policy(magnet_coef=0.2, magnet_coef_final=0.0)
    assert getattr(policy.objective, 'magnet_net', None) is None and 'magnet' not in policy.state_dict()
    assert policy.learn(collector.collect().data, progress=0.75)['magnet_coef'] == pytest.approx(0.05)


def test_mmd_config_errors_and_continuous_actions():
    for learn, key in ((dict(magnet='fixed'), 'policy.learn.magnet'), (dict(magnet_coef=-0.1), 'policy.learn.magnet_coef'),
                       (dict(magnet_lr=1.5), 'policy.learn.magnet_lr'), (dict(mmd_kl_coef=-1.0), 'policy.learn.mmd_kl_coef'),
                       (dict(magnet_coef_final=-1.0), 'policy.learn.magnet_coef_final')):
        with pytest.raises(ConfigError, match=key):
            compile_section('policy', dict(type='ppo', learn=dict(objective='mmd', **learn)))
    cfg = compile_section('policy', dict(type='ppo', learn=dict(objective='mmd')))
    box = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    with pytest.raises(TypeError, match='Discrete'):
        POLICY_REGISTRY.get('ppo')(cfg, box, box)
