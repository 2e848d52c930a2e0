"""MLP Q-network for Discrete actions, with an optional dueling head (Wang et al., 2016).

``forward(obs) -> [B, A]`` action values. The dueling head splits the last hidden layer into a
state value V(s) and advantages A(s, a) and recombines them as V + A - mean_a A, which makes the
decomposition identifiable and lets V learn from every action's updates.
"""
from __future__ import annotations

import gymnasium as gym
import torch
from torch import nn

from sparring.config.schema import in_range, one_of, sequence_of
from sparring.config.registry import MODEL_REGISTRY
from sparring.policy.model.mlp import ACTIVATIONS, _trunk, encode_observation, flat_obs_dim, orthogonal_init


@MODEL_REGISTRY.register('q_mlp')
class QMLP(nn.Module):
    #: tells value-based policies (DQN) that ``forward`` returns one value per action
    outputs_q_values = True

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            hidden_sizes=[128, 128],  # units of each hidden layer, in order
            activation='relu',  # the hidden layers' activation: 'tanh', 'relu', 'elu' or 'gelu'
            dueling=False,  # a dueling head: Q = V + A - mean(A), the state's value and each action's advantage
        )

    config_constraints = {
        'hidden_sizes': sequence_of(in_range(1, None), min_len=1),
        'activation': one_of(*ACTIVATIONS),
    }

    def __init__(self, cfg: dict, observation_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__()
        if not isinstance(action_space, gym.spaces.Discrete):
            raise TypeError(f'q_mlp model: action space {action_space} is not Discrete; Q-learning needs a '
                            f'finite set of actions')
        self.observation_space = observation_space
        self.action_space = action_space
        sizes = list(cfg['hidden_sizes'])
        self.trunk = _trunk(flat_obs_dim(observation_space), sizes, cfg['activation'])
        self.num_actions = int(action_space.n)
        self.dueling = bool(cfg['dueling'])
        self.q_head = orthogonal_init(nn.Linear(sizes[-1], self.num_actions), 1.0)
        if self.dueling:  # q_head then holds the advantages
            self.v_head = orthogonal_init(nn.Linear(sizes[-1], 1), 1.0)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        hidden = self.trunk(encode_observation(obs, self.observation_space))
        out = self.q_head(hidden)
        if self.dueling:
            out = self.v_head(hidden) + out - out.mean(-1, keepdim=True)
        return out
