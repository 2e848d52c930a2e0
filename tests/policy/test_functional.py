"""GAE and PPO loss pieces against hand-computed cases."""
import math

import numpy as np
import pytest
import torch

from sparring.policy import distributions as D
from sparring.policy import functional as F
from sparring.policy.normalizer import RunningNormalizer


def test_gae_cuts_at_truncation_and_bootstraps_from_final_value():
    reward = np.array([[1.0], [2.0], [3.0]])
    value = np.array([[0.5], [1.0], [1.5]])
    # next_value[1] is V(final observation) of the truncated episode; next_value[2] is V(last obs).
    next_value = np.array([[1.0], [2.0], [4.0]])
    terminated = np.zeros((3, 1), bool)
    truncated = np.array([[False], [True], [False]])
    adv, ret = F.gae(reward, value, next_value, terminated, truncated, gamma=0.9, lam=0.5)
    # delta = r + 0.9 * V' - V = [1.4, 2.8, 5.1]; A2 = 5.1, A1 = 2.8 (cut), A0 = 1.4 + 0.45 * 2.8
    np.testing.assert_allclose(adv[:, 0], [2.66, 2.8, 5.1], rtol=1e-6)
    np.testing.assert_allclose(ret[:, 0], [3.16, 3.8, 6.6], rtol=1e-6)


def test_gae_does_not_bootstrap_a_terminated_step():
    reward = np.array([[1.0], [2.0], [3.0]])
    value = np.array([[0.5], [1.0], [1.5]])
    next_value = np.array([[1.0], [99.0], [4.0]])  # 99 must be ignored: the episode ended
    terminated = np.array([[False], [True], [False]])
    adv, _ = F.gae(reward, value, next_value, terminated, np.zeros((3, 1), bool), gamma=0.9, lam=0.5)
    np.testing.assert_allclose(adv[:, 0], [1.4 + 0.45 * 1.0, 1.0, 5.1], rtol=1e-6)


def test_gae_columns_are_independent():
    rng = np.random.default_rng(0)
    reward, value, next_value = rng.normal(size=(3, 5, 4))
    terminated = rng.random((5, 4)) < 0.2
    truncated = rng.random((5, 4)) < 0.2
    adv, _ = F.gae(reward, value, next_value, terminated, truncated, 0.99, 0.95)
    for b in range(4):
        one, _ = F.gae(reward[:, b:b + 1], value[:, b:b + 1], next_value[:, b:b + 1], terminated[:, b:b + 1],
                       truncated[:, b:b + 1], 0.99, 0.95)
        np.testing.assert_allclose(adv[:, b], one[:, 0], rtol=1e-6)


def test_clipped_surrogate_loss_hand_case():
    log_prob = torch.log(torch.tensor([1.5, 1.5, 0.5, 0.5]))
    old = torch.zeros(4)
    adv = torch.tensor([1.0, -1.0, 1.0, -1.0])
    loss, kl, clip_frac = F.clipped_surrogate_loss(log_prob, old, adv, clip_range=0.2)
    # per sample max(-A r, -A clip(r)): -1.2, 1.5, -0.5, 0.8
    assert loss.item() == pytest.approx(0.15, abs=1e-6)
    assert clip_frac.item() == 1.0
    expected_kl = (2 * (0.5 - math.log(1.5)) + 2 * (-0.5 - math.log(0.5))) / 4
    assert kl.item() == pytest.approx(expected_kl, abs=1e-6)


def test_value_loss_clipped_and_unclipped():
    value = torch.tensor([2.0, 0.0])
    old = torch.tensor([1.0, 1.0])
    ret = torch.tensor([3.0, 0.0])
    assert F.value_loss(value, old, ret, clip_range=0.5).item() == pytest.approx(0.5 * (2.25 + 0.25) / 2)
    assert F.value_loss(value, old, ret, clip_range=None).item() == pytest.approx(0.5 * (1.0 + 0.0) / 2)


def test_masked_categorical_never_samples_illegal_and_entropy_over_legal_only():
    logits = torch.zeros(2000, 3)
    mask = torch.tensor([True, True, False]).expand(2000, 3)
    log_probs = D.categorical_log_probs(logits, mask)
    samples = D.categorical_sample(log_probs, torch.Generator().manual_seed(0))
    assert (samples != 2).all()
    assert abs((samples == 0).float().mean().item() - 0.5) < 0.05
    np.testing.assert_allclose(D.categorical_entropy(log_probs).numpy(), math.log(2), rtol=1e-6)


def test_gaussian_log_prob_and_entropy_match_torch_distributions():
    mean = torch.randn(5, 3, generator=torch.Generator().manual_seed(1))
    log_std = torch.tensor([-0.5, 0.0, 0.3])
    actions = torch.randn(5, 3, generator=torch.Generator().manual_seed(2))
    ref = torch.distributions.Normal(mean, log_std.exp())
    np.testing.assert_allclose(D.gaussian_log_prob(mean, log_std, actions).numpy(),
                               ref.log_prob(actions).sum(-1).numpy(), rtol=1e-5)
    np.testing.assert_allclose(D.gaussian_entropy(log_std, torch.Size([5])).numpy(),
                               ref.entropy().sum(-1).numpy(), rtol=1e-5)


def test_running_normalizer_equals_full_statistics():
    rng = np.random.default_rng(3)
    batches = [rng.normal(2.0, 3.0, size=(n, 4)) for n in (1, 7, 100, 13)]
    norm = RunningNormalizer((4,))
    for batch in batches:
        norm.update(batch)
    everything = np.concatenate(batches)
    np.testing.assert_allclose(norm.mean.numpy(), everything.mean(0), rtol=1e-10)
    np.testing.assert_allclose(norm.var.numpy(), everything.var(0), rtol=1e-10)
    assert norm.count.item() == len(everything)


def test_linear_schedule_clamps_progress():
    schedule = F.LinearSchedule(1.0, 0.0)
    assert schedule(0.25) == 0.75
    assert schedule(2.0) == 0.0 and schedule(-1.0) == 1.0
