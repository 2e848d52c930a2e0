"""``sparring export``: a trained player's network as a file that runs without sparring (ONNX or TorchScript).

The exported network takes

* ``obs``: a batch of observations ``[N, *obs_shape]`` (float32; int64 indices for a Discrete space),
* ``action_mask``: ``[N, A]`` booleans, True for a legal action (Discrete actions only),
* ``state_h``, ``state_c``: ``[N, H]`` float32 recurrent state (LSTM players only; zeros at an
  episode's start),

and returns

* ``action_probs`` ``[N, A]`` (Discrete actions: the policy's probabilities, illegal actions 0; a
  DQN player's greedy choice as a one-hot row), or ``action_mean`` and ``action_log_std``
  ``[N, D]`` (Box actions: the Gaussian policy; a SAC player's is squashed by tanh into the action
  bounds, ``low + (tanh(u) + 1) (high - low) / 2``),
* ``value`` ``[N]`` (a DQN player: the best legal action's Q value; a SAC player: its critics' value),
* ``state_h_out``, ``state_c_out`` (LSTM players: the state for the next step),
* ``action`` ``[N, D]`` (Box actions, last): the greedy action as the env takes it, inside the bounds: a PPO
  player's mean clipped to them (the env clips what it is given), a SAC player's mean squashed into them.

The observation normaliser, when the policy has one, is inside the network. ONNX needs the
``onnx`` package (``pip install sparring[export]``); TorchScript needs only torch.
"""
from __future__ import annotations

import copy
import os
import warnings
from typing import List, Optional, Tuple, cast

import gymnasium as gym
import torch

from sparring.config.optional import require
from sparring.config.schema import ConfigError
from sparring.policy import distributions as D
from sparring.policy.base import Policy

FORMATS = ('onnx', 'torchscript')
EXTENSIONS = dict(onnx='.onnx', torchscript='.pt')  # what each format's files are usually called
ONNX_OPSET = 17


class ExportedPolicy(torch.nn.Module):
    """A policy's network with plain tensors in and out (see the module docstring for the names)."""

    low: torch.Tensor  # a Box player's action bounds (buffers)
    high: torch.Tensor

    def __init__(self, policy: Policy) -> None:
        super().__init__()
        if not hasattr(policy, 'net'):
            raise ConfigError(f'export: {type(policy).__name__} has no network to export (a bot?); expected a '
                              f'trained PPO or DQN player')
        # A copy, frozen: the export must not touch the policy's own parameters.
        self.net = copy.deepcopy(policy.net).cpu().requires_grad_(False)  # a file that runs anywhere
        # A network that computes what it exports itself (SAC's); else a DQN player's gives Q values.
        self.own_outputs = hasattr(policy.net, 'export_outputs')
        self.q_values = not self.own_outputs and not hasattr(policy.net, 'prepare')
        self.recurrent = bool(getattr(policy, 'recurrent', False))
        self.continuous = isinstance(policy.action_space, gym.spaces.Box)
        self.observation_space = policy.observation_space
        self.num_actions = 0 if self.continuous else int(cast(gym.spaces.Discrete, policy.action_space).n)
        if self.continuous:  # the bounds, for the greedy action as the env takes it
            box = cast(gym.spaces.Box, policy.action_space)
            self.register_buffer('low', torch.as_tensor(box.low.reshape(-1), dtype=torch.float32))
            self.register_buffer('high', torch.as_tensor(box.high.reshape(-1), dtype=torch.float32))

    def input_names(self) -> List[str]:
        names = ['obs'] + ([] if self.continuous else ['action_mask'])
        return names + (['state_h', 'state_c'] if self.recurrent else [])

    def output_names(self) -> List[str]:
        names = ['action_mean', 'action_log_std'] if self.continuous else ['action_probs']
        return (names + ['value'] + (['state_h_out', 'state_c_out'] if self.recurrent else [])
                + (['action'] if self.continuous else []))

    def forward(self, obs: torch.Tensor, *rest: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        outputs = self._outputs(obs, *rest)
        if not self.continuous:
            return outputs
        mean = outputs[0]
        if self.own_outputs:  # a SAC player's mean is before its tanh squash into the bounds
            action = self.low + (torch.tanh(mean) + 1.0) * (self.high - self.low) / 2.0
        else:  # a PPO player's Gaussian lives on the whole line; the env clips its draws to the bounds
            action = torch.minimum(torch.maximum(mean, self.low), self.high)
        return outputs + (action,)

    def _outputs(self, obs: torch.Tensor, *rest: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        mask = None if self.continuous else rest[0]
        state = tuple(rest[-2:]) if self.recurrent else None
        if self.own_outputs:
            return tuple(self.net.export_outputs(obs, mask))
        if self.q_values:
            return self._greedy(self.net(obs), cast(torch.Tensor, mask))  # discrete actions: a mask
        prepared = self.net.prepare(obs)
        if self.recurrent:
            head, value, (h, c) = self.net.model.step(prepared, state)
            extra: Tuple[torch.Tensor, ...] = (h, c)
        else:
            head, value = self.net.model(prepared)
            extra = ()
        if self.continuous:
            log_std = self.net.model.log_std.expand_as(head)
            return (head, log_std, value) + extra
        return (D.categorical_log_probs(head, mask).exp(), value) + extra

    @staticmethod
    def _greedy(q: torch.Tensor, mask: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        usable = mask | ~mask.any(-1, keepdim=True)  # a row with no legal action counts all as legal
        masked = torch.where(usable, q, torch.full_like(q, float('-inf')))
        greedy = masked.argmax(-1)
        probs = torch.nn.functional.one_hot(greedy, q.shape[-1]).to(q.dtype)
        return probs, masked.max(-1).values

    def example_inputs(self, batch: int = 2) -> Tuple[torch.Tensor, ...]:
        space = self.observation_space
        if isinstance(space, gym.spaces.Discrete):
            obs = torch.zeros(batch, dtype=torch.int64)
        else:
            obs = torch.zeros(batch, *cast(Tuple[int, ...], space.shape), dtype=torch.float32)
        inputs = [obs]
        if not self.continuous:
            inputs.append(torch.ones(batch, self.num_actions, dtype=torch.bool))
        if self.recurrent:
            hidden = self.net.model.hidden_size
            inputs += [torch.zeros(batch, hidden), torch.zeros(batch, hidden)]
        return tuple(inputs)


def export_policy(policy: Policy, path: str, fmt: str = 'onnx') -> dict:
    """Write ``policy``'s network to ``path`` in format ``fmt``; returns what was written (names, shapes)."""
    if fmt not in FORMATS:
        raise ConfigError(f'export: --format must be one of {", ".join(FORMATS)}, got {fmt!r}')
    if not os.path.splitext(path)[1]:
        raise ConfigError(f'export: --out {path!r} has no extension; expected a file name such as '
                          f'{path.rstrip(os.sep) or "player"}{EXTENSIONS[fmt]} for --format {fmt}')
    module = ExportedPolicy(policy)
    module.eval()
    inputs = module.example_inputs()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with warnings.catch_warnings():
        # Tracing fixes Python-level branches (e.g. whether the normaliser has seen data): intended here.
        warnings.simplefilter('ignore', category=torch.jit.TracerWarning)
        # torch marks TorchScript and its ONNX exporter deprecated; both still write files that load without it.
        warnings.simplefilter('ignore', category=DeprecationWarning)
        if fmt == 'torchscript':
            traced = torch.jit.trace(module, inputs, check_trace=False)
            torch.jit.save(traced, path)
        else:
            require('onnx', 'ONNX export', 'export')
            axes = {name: {0: 'batch'} for name in module.input_names() + module.output_names()}
            torch.onnx.export(module, inputs, path, input_names=module.input_names(),
                              output_names=module.output_names(), dynamic_axes=axes, opset_version=ONNX_OPSET,
                              dynamo=False)
    return dict(path=path, format=fmt, inputs=module.input_names(), outputs=module.output_names(),
                observation_shape=list(policy.observation_space.shape or ()), recurrent=module.recurrent)


def export_player(run_dir: str, out: str, fmt: str = 'onnx', player: Optional[str] = None,
                  snapshot: Optional[str] = None, trust_code: bool = False) -> dict:
    """Export a run's player (the first active player by default) to ``out``. ``trust_code``: import the run's own modules even from inside its directory (see :func:`load_player`)."""
    from sparring.framework.player_loader import TrainedRun
    run = TrainedRun(run_dir, trust_code)
    pid = run.resolve(player, snapshot)
    info = export_policy(run.policy(pid), out, fmt)
    info.update(run=run_dir, player=pid, env=run.cfg.env.type)
    return info
