"""MLP actor-critic with orthogonal initialisation, for Discrete and Box action spaces.

The actor and critic have separate trunks by default (``shared_trunk`` joins them). Discrete
actions get logits; Box actions get a Gaussian mean and a state-independent log-std parameter.
"""
from __future__ import annotations

import math
from typing import Sequence, TypeVar

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from sparring.config.schema import in_range, one_of, sequence_of
from sparring.config.registry import MODEL_REGISTRY

ACTIVATIONS = {'tanh': nn.Tanh, 'relu': nn.ReLU, 'elu': nn.ELU, 'gelu': nn.GELU}


Layer = TypeVar('Layer', nn.Linear, nn.Conv2d)


def orthogonal_init(layer: Layer, gain: float) -> Layer:
    nn.init.orthogonal_(layer.weight, gain)
    assert layer.bias is not None  # built with a bias (the layers' default)
    nn.init.zeros_(layer.bias)
    return layer


def _trunk(in_dim: int, sizes: Sequence[int], activation: str) -> nn.Sequential:
    layers, dim = [], in_dim
    for size in sizes:
        layers += [orthogonal_init(nn.Linear(dim, size), math.sqrt(2)), ACTIVATIONS[activation]()]
        dim = size
    return nn.Sequential(*layers)


def flat_obs_dim(space: gym.Space) -> int:
    if isinstance(space, gym.spaces.Box):
        return int(np.prod(space.shape))
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)  # one-hot encoded
    raise TypeError(f'MLP model: unsupported observation space {space}; expected Box or Discrete')


def encode_observation(obs: torch.Tensor, space: gym.Space) -> torch.Tensor:
    """``[N, *obs_shape]`` observations as ``[N, features]`` floats: Discrete one-hot, Box flattened."""
    if isinstance(space, gym.spaces.Discrete):
        return nn.functional.one_hot(obs.long(), space.n).float()
    return obs.reshape(obs.shape[0], -1).float()


def action_output(action_space: gym.Space, init_log_std: float, who: str) -> tuple[int, nn.Parameter | None]:
    """Width of the policy head, and the state-independent log-std parameter for Box actions (else None)."""
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n), None
    if isinstance(action_space, gym.spaces.Box):
        out_dim = int(np.prod(action_space.shape))
        return out_dim, nn.Parameter(torch.full((out_dim,), float(init_log_std)))
    raise TypeError(f'{who}: unsupported action space {action_space}; expected Discrete or Box')


@MODEL_REGISTRY.register('mlp')
class MLPActorCritic(nn.Module):
    @classmethod
    def default_config(cls) -> dict:
        return dict(
            hidden_sizes=[64, 64],  # units of each hidden layer, in order
            activation='tanh',  # the hidden layers' activation: 'tanh', 'relu', 'elu' or 'gelu'
            shared_trunk=False,  # one trunk for the policy and value heads (False: two networks of these sizes)
            init_log_std=0.0,  # Box actions only
            policy_head_gain=0.01,  # small: the initial policy is near uniform / near zero mean
        )

    config_constraints = {
        'hidden_sizes': sequence_of(in_range(1, None), min_len=1),
        'activation': one_of(*ACTIVATIONS),
        'policy_head_gain': in_range(0.0, None, open_lo=True),
    }

    def __init__(self, cfg: dict, observation_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__()
        self.observation_space = observation_space
        self.action_space = action_space
        self.one_hot_obs = isinstance(observation_space, gym.spaces.Discrete)
        in_dim = flat_obs_dim(observation_space)
        # Hidden widths of the policy's and the value function's trunks (the lr scale reads them).
        self.actor_sizes, self.critic_sizes = self.trunk_sizes(cfg, in_dim, action_space)
        shared = cfg.get('shared_trunk', False)
        self.actor_trunk = _trunk(in_dim, self.actor_sizes, cfg['activation'])
        self.critic_trunk = self.actor_trunk if shared else _trunk(in_dim, self.critic_sizes, cfg['activation'])
        out_dim, log_std = action_output(action_space, cfg['init_log_std'], 'MLP model')
        self.continuous = log_std is not None
        if self.continuous:
            self.log_std = log_std
        self.policy_head = orthogonal_init(nn.Linear(self.actor_sizes[-1], out_dim), cfg['policy_head_gain'])
        self.value_head = orthogonal_init(nn.Linear(self.critic_sizes[-1], 1), 1.0)

    @classmethod
    def trunk_sizes(cls, cfg: dict, in_dim: int, action_space: gym.Space) -> tuple[list[int], list[int]]:
        """(policy trunk widths, value trunk widths): here both ``hidden_sizes``; a subclass derives them."""
        sizes = list(cfg['hidden_sizes'])
        return sizes, list(sizes)

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        return encode_observation(obs, self.observation_space)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns (logits or Gaussian mean, value) for a batch of (normalised) observations."""
        x = self.encode(obs)
        actor = self.actor_trunk(x)
        critic = actor if self.critic_trunk is self.actor_trunk else self.critic_trunk(x)
        return self.policy_head(actor), self.value_head(critic).squeeze(-1)

    def policy_output(self, obs: torch.Tensor) -> torch.Tensor:
        """The first half of :meth:`forward`'s answer alone (logits or Gaussian mean), the value trunk left out."""
        return self.policy_head(self.actor_trunk(self.encode(obs)))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        x = self.encode(obs)
        return self.value_head(self.critic_trunk(x)).squeeze(-1)
