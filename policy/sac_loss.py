"""Soft Actor-Critic's maths as pure tensor functions (Haarnoja et al. 2018; Christodoulou 2019 for discrete actions).

* The squashed Gaussian: ``a = tanh(u)``, ``u ~ N(mean, std)``; its log-density is the Gaussian's minus
  ``sum log(1 - tanh(u)^2)`` (the change of variables), written as ``2 (log 2 - u - softplus(-2u))``
  so it stays finite where tanh saturates.
* The losses of one gradient step, for Box and for Discrete actions, returned summed so that one
  backward pass serves all three: the critics' (each critic's squared TD error against the soft
  target from the target critics), the actor's (with the critics detached) and the temperature's
  (``log alpha`` times the entropy's excess over its target, detached), whose gradient is negative,
  raising alpha, when the policy's entropy is below the target.
* Discrete actions take expectations over the legal actions instead of samples; illegal ones have
  probability exactly 0 and contribute nothing.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional

import torch

from sparring.policy import distributions as D

_LOG2 = math.log(2.0)
#: the figures a step reports, in the order of ``SACTerms.stats``
STEP_STATS = ('critic_loss', 'actor_loss', 'alpha_loss', 'alpha', 'entropy', 'q_mean')


def tanh_log_det(u: torch.Tensor) -> torch.Tensor:
    """``sum_i log(1 - tanh(u_i)^2)`` over the last axis, computed stably."""
    return (2.0 * (_LOG2 - u - torch.nn.functional.softplus(-2.0 * u))).sum(-1)


def squashed_log_prob(mean: torch.Tensor, log_std: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Log-density of ``tanh(u)`` under the squashed Gaussian (in the squashed [-1, 1] space)."""
    return D.gaussian_log_prob(mean, log_std, u) - tanh_log_det(u)


def squashed_sample(mean: torch.Tensor, log_std: torch.Tensor, noise: torch.Tensor):
    """(action in (-1, 1), its log-density) for standard-normal ``noise``; differentiable in mean and log-std."""
    u = mean + noise * log_std.exp()
    return torch.tanh(u), squashed_log_prob(mean, log_std, u)


def temperature_loss(log_alpha: torch.Tensor, entropy: torch.Tensor, target_entropy) -> torch.Tensor:
    """``log alpha * (H - H_target)`` averaged: alpha falls while the policy's entropy exceeds the target."""
    return (log_alpha * (entropy - target_entropy).detach()).mean()


def critic_loss(q: torch.Tensor, target: torch.Tensor, weights: Optional[torch.Tensor]):
    """(0.5 * the sum over critics of each one's mean squared TD error, |TD error| per sample averaged over critics).

    ``q`` is ``[E, N]``; ``weights`` (prioritised replay's importance weights) scale each sample's error.
    """
    error = q - target.unsqueeze(0)
    squared = error.pow(2) if weights is None else error.pow(2) * weights.unsqueeze(0)
    return 0.5 * squared.mean(-1).sum(), error.detach().abs().mean(0)


class SACTerms(NamedTuple):
    loss: torch.Tensor  # critics' + actor's + temperature's, for one backward pass
    td_abs: torch.Tensor  # [N], for prioritised replay
    stats: torch.Tensor  # the STEP_STATS, kept on the device until the update reads them all


def step_stats(critic, actor, alpha_loss, alpha, entropy, q) -> torch.Tensor:
    """The ``STEP_STATS`` of one step as one tensor."""
    return torch.stack([critic.detach(), actor.detach(), alpha_loss.detach(), alpha, entropy.detach().mean(),
                        q.detach().mean()])


def continuous_terms(model, features, next_features, action, ret, discount, weights, log_alpha, target_entropy,
                     target_critics, noise, next_noise) -> SACTerms:
    """One step's losses for Box actions (in [-1, 1]); ``noise``/``next_noise`` are standard normal ``[N, D]``."""
    alpha = log_alpha.detach().exp()
    with torch.no_grad():
        next_mean, next_log_std = model.gaussian(next_features)
        next_action, next_log_prob = squashed_sample(next_mean, next_log_std, next_noise)
        next_q = target_critics(torch.cat([next_features, next_action], -1)).squeeze(-1).min(0).values
        target = ret + discount * (next_q - alpha * next_log_prob)
    q = model.q_values(features, action)
    c_loss, td_abs = critic_loss(q, target, weights)
    mean, log_std = model.gaussian(features)
    pi_action, log_prob = squashed_sample(mean, log_std, noise)
    q_pi = model.q_values(features, pi_action, detached=True).min(0).values
    a_loss = (alpha * log_prob - q_pi).mean()
    entropy = -log_prob
    t_loss = temperature_loss(log_alpha, entropy, target_entropy)
    return SACTerms(c_loss + a_loss + t_loss, td_abs, step_stats(c_loss, a_loss, t_loss, alpha, entropy, q))


def masked_policy(logits: torch.Tensor, mask: Optional[torch.Tensor]):
    """(probabilities, log-probabilities with illegal actions at 0 instead of -inf-like) of a masked softmax."""
    log_probs = D.categorical_log_probs(logits, mask)
    probs = log_probs.exp()
    return probs, log_probs if mask is None else torch.where(mask, log_probs, torch.zeros_like(log_probs))


def soft_state_value(probs: torch.Tensor, log_probs: torch.Tensor, q: torch.Tensor, alpha) -> torch.Tensor:
    """``sum_a pi(a) (Q(s, a) - alpha log pi(a))``; illegal actions (pi = 0) add nothing."""
    return (probs * (q - alpha * log_probs)).sum(-1)


def discrete_terms(model, features, next_features, action, mask, next_mask, ret, discount, weights, log_alpha,
                   target_entropy, target_critics) -> SACTerms:
    """One step's losses for Discrete actions; ``target_entropy`` may differ per sample ``[N]`` (legal counts)."""
    alpha = log_alpha.detach().exp()
    with torch.no_grad():
        next_probs, next_log_probs = masked_policy(model.logits(next_features), next_mask)
        next_q = target_critics(next_features).min(0).values
        target = ret + discount * soft_state_value(next_probs, next_log_probs, next_q, alpha)
    q_all = model.q_values(features)
    q = q_all.gather(-1, action.long().view(1, -1, 1).expand(q_all.shape[0], -1, 1)).squeeze(-1)
    c_loss, td_abs = critic_loss(q, target, weights)
    probs, log_probs = masked_policy(model.logits(features), mask)
    q_pi = model.q_values(features, detached=True).min(0).values
    a_loss = -soft_state_value(probs, log_probs, q_pi, alpha).mean()
    entropy = -(probs * log_probs).sum(-1)
    t_loss = temperature_loss(log_alpha, entropy, target_entropy)
    return SACTerms(c_loss + a_loss + t_loss, td_abs, step_stats(c_loss, a_loss, t_loss, alpha, entropy, q))


def discrete_target_entropy(mask: Optional[torch.Tensor], num_actions: int, ratio: float) -> torch.Tensor:
    """``ratio`` times the largest entropy over each state's legal actions, ``log(legal count)``."""
    if mask is None:
        return torch.tensor(ratio * math.log(num_actions))
    return ratio * mask.sum(-1).clamp(min=1).float().log()


@torch.no_grad()
def polyak_update(targets, sources, tau: float) -> None:
    """``target += tau * (source - target)`` for every pair, in one fused call."""
    torch._foreach_lerp_(list(targets), list(sources), tau)
