"""Running observation normalisation with the exact running mean and variance.

Batches are merged with the parallel-variance formula (Chan et al.), so the statistics equal
those of all observations seen, whatever the batch sizes. The statistics are buffers of the
module: they travel with the parameters and are saved with the model.
"""
from __future__ import annotations

from typing import Optional

import gymnasium as gym
import numpy as np
import torch
from torch import nn


class RunningNormalizer(nn.Module):
    # the buffers registered below (declared: nn.Module's attribute lookup does not say they are tensors)
    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, shape: tuple, clip: float = 10.0, eps: float = 1e-8) -> None:
        super().__init__()
        self.clip = clip
        self.eps = eps
        self.register_buffer('mean', torch.zeros(shape, dtype=torch.float64))
        self.register_buffer('var', torch.ones(shape, dtype=torch.float64))
        self.register_buffer('count', torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, batch: np.ndarray | torch.Tensor) -> None:
        """Merge a batch ``[N, *shape]`` into the running statistics."""
        x = torch.as_tensor(batch, dtype=torch.float64, device=self.mean.device).reshape(-1, *self.mean.shape)
        n = x.shape[0]
        if n == 0:
            return
        batch_mean = x.mean(0)
        batch_var = x.var(0, unbiased=False)
        total = self.count + n
        delta = batch_mean - self.mean
        if self.count == 0:
            self.mean.copy_(batch_mean)
            self.var.copy_(batch_var)
        else:
            m2 = self.var * self.count + batch_var * n + delta.pow(2) * self.count * n / total
            self.mean.add_(delta * n / total)
            self.var.copy_(m2 / total)
        self.count.copy_(total)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if self.count == 0:  # nothing seen yet: the identity, not a division by the unit prior
            return obs
        scaled = (obs - self.mean.to(obs.dtype)) / torch.sqrt(self.var.to(obs.dtype) + self.eps)
        return scaled.clamp(-self.clip, self.clip)


def observation_normalizer(enabled: bool, observation_space: gym.Space) -> Optional[RunningNormalizer]:
    """A policy's ``obs_norm``: a running normaliser of the observation space's shape, or None when off."""
    if not enabled:
        return None
    if not isinstance(observation_space, gym.spaces.Box):
        raise TypeError(f'policy.obs_norm needs a Box observation space, got {observation_space}')
    return RunningNormalizer(observation_space.shape)
