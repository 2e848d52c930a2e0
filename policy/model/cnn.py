"""The Nature CNN actor-critic (Mnih et al. 2015) for image observations such as stacked Atari frames.

Three convolutions (32 8x8 stride 4, 64 4x4 stride 2, 64 3x3 stride 1) and a 512-unit layer
form one trunk shared by the policy and value heads. Weights are orthogonal with gain sqrt(2),
the policy head's 0.01 (a near-uniform first policy) and the value head's 1. uint8 observations
are scaled to [0, 1] inside the model, so trajectory chunks keep the compact uint8 frames.

``trunk_precision='bfloat16'`` runs the convolutions and the hidden layer in bfloat16 (autocast, on
whichever device the batch is: CPUs with AMX or AVX-512 BF16 and recent GPUs compute it several
times faster); parameters, gradients and the two heads stay float32, so log-probabilities and values
keep full precision. Acting and learning use the same trunk, so a step's recorded log-probability
is the one the update recomputes.
"""
from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from sparring.config.schema import ConfigError, in_range, one_of, sequence_of
from sparring.config.registry import MODEL_REGISTRY
from sparring.policy.model.mlp import action_output, orthogonal_init


def _conv_layer_spec(value) -> None:
    if (not isinstance(value, (list, tuple)) or len(value) != 3
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value)):
        raise ConfigError(f'expected [out_channels, kernel_size, stride] of positive ints, got {value!r}')


def image_shape(space: gym.Space) -> tuple:
    """``(channels, height, width)`` of a Box of ``[C, H, W]`` or ``[H, W]`` (one channel) images."""
    if not isinstance(space, gym.spaces.Box) or len(space.shape) not in (2, 3):
        raise TypeError(f'CNN model: observation space {space!r}; expected a Box of images shaped [C, H, W] '
                        f'(channels first, e.g. stacked frames) or [H, W]')
    return tuple(space.shape) if len(space.shape) == 3 else (1, *space.shape)


@MODEL_REGISTRY.register('cnn')
class NatureCNNActorCritic(nn.Module):
    @classmethod
    def default_config(cls) -> dict:
        return dict(
            conv_layers=[[32, 8, 4], [64, 4, 2], [64, 3, 1]],  # [out_channels, kernel_size, stride] each
            hidden_size=512,  # units of the fully connected layer after the convolutions
            init_log_std=0.0,  # Box actions only
            policy_head_gain=0.01,  # small: the initial policy is near uniform / near zero mean
            trunk_precision='float32',  # or 'bfloat16': the trunk under autocast (see the module docstring)
        )

    config_constraints = {
        'conv_layers': sequence_of(_conv_layer_spec, min_len=1),
        'hidden_size': in_range(1, None),
        'policy_head_gain': in_range(0.0, None, open_lo=True),
        'trunk_precision': one_of('float32', 'bfloat16'),
    }

    def __init__(self, cfg: dict, observation_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__()
        self.observation_space = observation_space
        self.action_space = action_space
        self.input_shape = image_shape(observation_space)
        # Integer pixels are scaled here, on the batch, rather than stored as floats (4x the memory).
        self.pixel_scale = 1.0 / 255.0 if np.dtype(observation_space.dtype) == np.uint8 else 1.0
        layers, channels = [], self.input_shape[0]
        for out_channels, kernel, stride in cfg['conv_layers']:
            layers += [orthogonal_init(nn.Conv2d(channels, out_channels, kernel, stride), math.sqrt(2)), nn.ReLU()]
            channels = out_channels
        self.convs = nn.Sequential(*layers, nn.Flatten())
        with torch.no_grad():
            try:
                flat_dim = self.convs(torch.zeros(1, *self.input_shape)).shape[1]
            except RuntimeError as err:
                raise ConfigError(f'config key "policy.model.conv_layers": {cfg["conv_layers"]} do not fit images of '
                                  f'shape {self.input_shape} ({err}); expected layers that leave at least one '
                                  f'pixel') from None
        self.trunk = nn.Sequential(self.convs, orthogonal_init(nn.Linear(flat_dim, cfg['hidden_size']), math.sqrt(2)),
                                   nn.ReLU())
        out_dim, log_std = action_output(action_space, cfg['init_log_std'], 'CNN model')
        self.continuous = log_std is not None
        if self.continuous:
            self.log_std = log_std
        self.policy_head = orthogonal_init(nn.Linear(cfg['hidden_size'], out_dim), cfg['policy_head_gain'])
        self.value_head = orthogonal_init(nn.Linear(cfg['hidden_size'], 1), 1.0)
        self.trunk_bfloat16 = cfg['trunk_precision'] == 'bfloat16'

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        images = obs.reshape(obs.shape[0], *self.input_shape).float()
        images = images * self.pixel_scale if self.pixel_scale != 1.0 else images
        if not self.trunk_bfloat16:
            return self.trunk(images)
        with torch.autocast(device_type=images.device.type, dtype=torch.bfloat16):
            hidden = self.trunk(images)
        return hidden.float()

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns (logits or Gaussian mean, value) for a batch of images ``[B, C, H, W]``."""
        hidden = self.features(obs)
        return self.policy_head(hidden), self.value_head(hidden).squeeze(-1)

    def policy_output(self, obs: torch.Tensor) -> torch.Tensor:
        """The first half of :meth:`forward`'s answer alone (logits or Gaussian mean)."""
        return self.policy_head(self.features(obs))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.value_head(self.features(obs)).squeeze(-1)
