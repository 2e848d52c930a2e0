"""Recurrent actor-critic: an MLP encoder, one LSTM core shared by separate policy and value heads.

The layout of OpenAI Five: the core's output feeds a policy head (logits, or a Gaussian mean with
a state-independent log-std) and a value head. The recurrent state is ``(h, c)``, each
``[B, hidden_size]``, batch first, zeros at an episode's start. ``step`` advances one time step
(acting); ``unroll`` runs a window of steps from a stored initial state, zeroing the state
wherever a new episode starts inside the window (truncated-BPTT learning). Both go through the
same ``LSTMCell``, so a recomputed window reproduces the acting-time outputs.
"""
from __future__ import annotations

from typing import Tuple

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from sparring.config.schema import in_range, one_of, sequence_of
from sparring.config.registry import MODEL_REGISTRY
from sparring.policy.model.mlp import (ACTIVATIONS, _trunk, action_output, encode_observation, flat_obs_dim,
                                       orthogonal_init)

LSTMState = Tuple[torch.Tensor, torch.Tensor]


@MODEL_REGISTRY.register('lstm')
class LSTMActorCritic(nn.Module):
    recurrent = True

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            encoder_sizes=[64],  # MLP layers before the core; [] feeds the observation straight in
            hidden_size=64,  # LSTM units
            activation='tanh',  # the encoder layers' activation: 'tanh', 'relu', 'elu' or 'gelu'
            bptt_len=16,  # truncated-BPTT window: steps a gradient flows back through the core
            init_log_std=0.0,  # Box actions only
            policy_head_gain=0.01,  # small: the initial policy is near uniform / near zero mean
        )

    config_constraints = {
        'encoder_sizes': sequence_of(in_range(1, None)),
        'hidden_size': in_range(1, None),
        'activation': one_of(*ACTIVATIONS),
        'bptt_len': in_range(1, None),
        'policy_head_gain': in_range(0.0, None, open_lo=True),
    }

    def __init__(self, cfg: dict, observation_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__()
        self.observation_space = observation_space
        self.action_space = action_space
        self.hidden_size = int(cfg['hidden_size'])
        self.bptt_len = int(cfg['bptt_len'])
        encoder_sizes = list(cfg['encoder_sizes'])
        self.encoder = _trunk(flat_obs_dim(observation_space), encoder_sizes, cfg['activation'])
        in_dim = encoder_sizes[-1] if encoder_sizes else flat_obs_dim(observation_space)
        self.core = nn.LSTMCell(in_dim, self.hidden_size)
        for name, weight in self.core.named_parameters():
            if name.startswith('weight'):
                nn.init.orthogonal_(weight)
            else:
                nn.init.zeros_(weight)
        # A forget-gate bias of 1 (gates ordered input, forget, cell, output) keeps the memory
        # open at the start of training, so a cue can survive the first updates.
        self.core.bias_hh.data[self.hidden_size:2 * self.hidden_size] = 1.0
        out_dim, log_std = action_output(action_space, cfg['init_log_std'], 'LSTM model')
        self.continuous = log_std is not None
        if self.continuous:
            self.log_std = log_std
        self.policy_head = orthogonal_init(nn.Linear(self.hidden_size, out_dim), cfg['policy_head_gain'])
        self.value_head = orthogonal_init(nn.Linear(self.hidden_size, 1), 1.0)

    def initial_state(self, batch_size: int) -> Tuple[np.ndarray, np.ndarray]:
        zeros = np.zeros((batch_size, self.hidden_size), dtype=np.float32)
        return zeros, zeros.copy()

    def _heads(self, core_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.policy_head(core_out), self.value_head(core_out).squeeze(-1)

    def step(self, obs: torch.Tensor, state: LSTMState) -> tuple[torch.Tensor, torch.Tensor, LSTMState]:
        """One step for a batch ``[B, *obs_shape]``: (logits or mean, value, next state)."""
        h, c = self.core(self.encoder(encode_observation(obs, self.observation_space)), state)
        head, value = self._heads(h)
        return head, value, (h, c)

    def unroll(self, obs: torch.Tensor, state: LSTMState, starts: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, LSTMState]:
        """A window ``[L, U, *obs_shape]`` from ``state`` ``([U, H], [U, H])``.

        ``starts[t, u]`` (bool ``[L, U]``) marks a step whose observation begins a new episode: the
        state is zeroed before it, as the collector zeroed it after the previous step ended.
        Returns heads ``[L, U, ...]``, values ``[L, U]`` and the state after the window.
        """
        length, units = obs.shape[:2]
        features = self.encoder(encode_observation(obs.reshape(length * units, *obs.shape[2:]),
                                                   self.observation_space))
        features = features.reshape(length, units, -1)
        keep = (~starts).to(features.dtype).unsqueeze(-1)
        h, c = state
        outputs = []
        for t in range(length):
            h, c = self.core(features[t], (h * keep[t], c * keep[t]))
            outputs.append(h)
        head, value = self._heads(torch.stack(outputs))
        return head, value, (h, c)
