"""SAC's update for Box actions with hand-written gradients: :func:`sac_loss.continuous_terms` and its backward pass.

Same losses, same figures, the gradients of the three losses written into the parameters' ``.grad`` by the
chain rule instead of by autograd. Why: a gradient step of SAC's 256-wide networks on a batch of 256 is
sixteen 256x256x256 matrix products and, with autograd, about 830 tensor operations (nested ones counted)
besides; by hand about 560 and no graph to build and walk, which measured 0.7 ms less of a ~12 ms step on one
core of this machine's EPYC (CPU time, forward and backward alone, minimum of eight runs).

The maths, with ``u = mean + noise * std`` and ``a = tanh(u)``, for the actor's log-density
``log pi = sum(-noise^2 / 2 - log_std - log(2 pi) / 2) - sum(log(1 - a^2))``:

* ``d log pi / d mean = 2 a`` and ``d log pi / d log_std = 2 a noise std - 1`` (the Gaussian's own terms
  cancel: ``(u - mean) / std`` is the noise whatever the mean and the std);
* the actor's loss ``mean(alpha log pi - min_e Q_e(s, a))`` reaches the critics' input only through the
  smallest critic of each sample, whose weights it does not train (they are detached, as in autograd's version);
* the critics' loss ``0.5 sum_e mean((Q_e - y)^2 w)`` gives ``dQ_e = (Q_e - y) w / N``;
* the temperature's loss ``mean(log alpha (H - H_target))`` gives ``mean(H - H_target)``;
* the clamp of the log-std passes the gradient inside its bounds only, as autograd's clamp does.

The results equal autograd's up to the order of floating-point sums (``tests/policy/test_sac_grad.py``).
Covered: ``sac_mlp`` networks with ReLU or tanh hidden layers (``HAND_BACKWARD``); others take autograd.
"""
from __future__ import annotations

from typing import List

import torch

from sparring.policy import sac_loss as L
from sparring.policy.sac_model import HAND_BACKWARD, LOG_STD_MAX, LOG_STD_MIN, SACModel, mlp_backward, mlp_forward


def supports(model: SACModel) -> bool:
    """Whether the hand-written backward pass covers this model."""
    return model.continuous and model.activation in HAND_BACKWARD


@torch.no_grad()
def continuous_step(model: SACModel, features, next_features, action, ret, discount, weights, log_alpha,
                    target_entropy, target_critics, noise, next_noise) -> L.SACTerms:
    """:func:`sac_loss.continuous_terms`'s losses and figures, with every trained parameter's gradient (actor,
    critics, and ``log_alpha`` if it is trained) written into its ``.grad``."""
    activation = model.activation
    actor: List[torch.nn.Linear] = model.actor_layers
    critics = model.critics
    n = len(ret)
    alpha = log_alpha.exp()

    # The soft target from the target critics at the policy's next action.
    next_mean, next_log_std = model.gaussian(next_features)
    next_action, next_log_prob = L.squashed_sample(next_mean, next_log_std, next_noise)
    next_q = target_critics(torch.cat([next_features, next_action], -1)).squeeze(-1).min(0).values
    target = ret + discount * (next_q - alpha * next_log_prob)

    # The critics at the stored action.
    critic_saved: List[torch.Tensor] = []
    q = critics(torch.cat([features, action], -1), saved=critic_saved).squeeze(-1)
    c_loss, td_abs = L.critic_loss(q, target, weights)
    error = q - target.unsqueeze(0)
    dq = error if weights is None else error * weights.unsqueeze(0)

    # The actor's sample, its log-density and the critics there (their weights detached).
    actor_saved: List[torch.Tensor] = []
    mean, raw_log_std = mlp_forward(actor, activation, features, actor_saved).chunk(2, dim=-1)
    log_std = raw_log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
    spread = noise * log_std.exp()  # u - mean
    u = mean + spread
    pi_action = torch.tanh(u)
    log_prob = L.squashed_log_prob(mean, log_std, u)
    pi_saved: List[torch.Tensor] = []
    q_pi, smallest = critics(torch.cat([features, pi_action], -1), saved=pi_saved).squeeze(-1).min(0)
    a_loss = (alpha * log_prob - q_pi).mean()
    entropy = -log_prob
    excess = entropy - target_entropy
    t_loss = (log_alpha * excess).mean()

    # Backward: the critics' loss into the critics' weights ...
    critics.backward(activation, critic_saved, dq.div_(n).unsqueeze(-1), weights=True)
    # ... the actor's loss through the smallest critic into the action, then into the actor's weights.
    dq_pi = torch.zeros_like(q).scatter_(0, smallest.unsqueeze(0), -1.0 / n)
    d_action = critics.backward(activation, pi_saved, dq_pi.unsqueeze(-1), weights=False,
                                input_columns=slice(features.shape[-1], None))
    assert d_action is not None  # input_columns given
    d_log_prob = alpha / n
    d_mean = d_action * (1.0 - pi_action * pi_action) + (2.0 * d_log_prob) * pi_action
    d_log_std = d_mean * spread - d_log_prob
    d_log_std *= (raw_log_std >= LOG_STD_MIN) & (raw_log_std <= LOG_STD_MAX)
    mlp_backward(actor, activation, actor_saved, torch.cat([d_mean, d_log_std], -1))
    if log_alpha.requires_grad:
        log_alpha.grad = excess.mean().reshape(log_alpha.shape)
    return L.SACTerms(c_loss + a_loss + t_loss, td_abs, L.step_stats(c_loss, a_loss, t_loss, alpha, entropy, q))
