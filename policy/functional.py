"""Pure loss and advantage functions shared by the policies: GAE and the PPO loss pieces.

Everything here is a function of arrays, so each piece is testable against a hand computation.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch


def gae(reward: np.ndarray, value: np.ndarray, next_value: np.ndarray, terminated: np.ndarray,
        truncated: np.ndarray, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimation over a ``[T, B]`` chunk; returns (advantages, returns).

    ``next_value[t]`` is the value of the state after step t: the next row's value within an
    episode, the value of the *final* observation where the episode was truncated (so a
    time-limit is bootstrapped, not treated as death), and anything where it terminated (it is
    masked out). The recursion stops at every episode end, terminated or truncated.
    """
    reward = np.asarray(reward, dtype=np.float64)
    value = np.asarray(value, dtype=np.float64)
    alive = 1.0 - np.asarray(terminated, dtype=np.float64)
    cont = 1.0 - np.logical_or(terminated, truncated).astype(np.float64)
    delta = reward + gamma * alive * np.asarray(next_value, dtype=np.float64) - value
    advantages = np.zeros_like(delta)
    running = np.zeros(delta.shape[1:], dtype=np.float64)
    decay = gamma * lam
    for t in range(delta.shape[0] - 1, -1, -1):
        running = delta[t] + decay * cont[t] * running
        advantages[t] = running
    returns = advantages + value
    return advantages.astype(np.float32), returns.astype(np.float32)


def normalize_advantages(adv: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    if adv.numel() < 2:
        return adv
    return (adv - adv.mean()) / (adv.std() + eps)


def clipped_surrogate_loss(log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor,
                           clip_range: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO's clipped policy objective, as a loss to minimise; returns (loss, approx_kl, clip_fraction)."""
    log_ratio = log_prob - old_log_prob
    ratio = log_ratio.exp()
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1.0 - clip_range, 1.0 + clip_range)
    loss = torch.maximum(unclipped, clipped).mean()
    with torch.no_grad():
        # The low-variance, always non-negative estimator of KL(old || new).
        approx_kl = ((ratio - 1.0) - log_ratio).mean()
        clip_fraction = ((ratio - 1.0).abs() > clip_range).float().mean()
    return loss, approx_kl, clip_fraction


def value_loss(value: torch.Tensor, old_value: torch.Tensor, returns: torch.Tensor,
               clip_range: float | None) -> torch.Tensor:
    """Half squared error; with ``clip_range`` the pessimistic max of clipped and unclipped errors."""
    error = (value - returns).pow(2)
    if clip_range is not None:
        clipped_value = old_value + (value - old_value).clamp(-clip_range, clip_range)
        error = torch.maximum(error, (clipped_value - returns).pow(2))
    return 0.5 * error.mean()


def explained_variance(prediction: np.ndarray, target: np.ndarray) -> float:
    """1 - Var[target - prediction] / Var[target]; NaN when the target is constant."""
    var_target = np.var(target)
    if var_target == 0:
        return float('nan')
    return float(1.0 - np.var(target - prediction) / var_target)


class LinearSchedule(NamedTuple):
    """A value annealed linearly from ``start`` (progress 0) to ``end`` (progress 1)."""
    start: float
    end: float

    def __call__(self, progress: float) -> float:
        progress = min(max(progress, 0.0), 1.0)
        return self.start + (self.end - self.start) * progress
