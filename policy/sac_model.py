"""SAC's networks (``policy.model.type='sac_mlp'``): an actor and a twin critic computed as one ensemble.

* Box actions: the actor gives a Gaussian mean and a state-dependent log-std (clamped to
  ``[LOG_STD_MIN, LOG_STD_MAX]``) per action dimension, squashed by tanh in the policy; each
  critic is Q(s, a) on the observation and the action (in [-1, 1]) joined.
* Discrete actions: the actor gives logits; each critic gives Q(s, .) for every action at once.

The critics are one module whose weights have a leading member axis ``[E, in, out]`` and whose
layers are batched matrix products, so the two Q networks cost one set of kernels, not two.
``forward(..., detached=True)`` computes with the weights detached: the actor's loss flows into
the actor only, which lets the three losses share one backward pass and one optimiser step.
Layers start as ``torch.nn.Linear`` does (uniform in +-1/sqrt(fan_in)), as in the reference code.
For the hand-written gradients of :mod:`sparring.policy.sac_grad`, the actor and the critics also run
forward keeping each layer's input (``saved``) and backward from those (``mlp_backward``,
``EnsembleMLP.backward``), without autograd; for ReLU and tanh hidden layers (``HAND_BACKWARD``).
Hidden activations run in place where the function has an in-place form (relu, tanh, elu): a gradient step
of 256-wide layers on a batch of 256 spends a fifth of its time allocating and writing activation copies
otherwise (measured on this machine's 2-core EPYC), and no backward pass needs the pre-activation values.
"""
from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional, Tuple

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from sparring.config.registry import MODEL_REGISTRY
from sparring.config.schema import in_range, one_of, sequence_of
from sparring.policy.model.mlp import encode_observation, flat_obs_dim

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # the reference implementations' bounds on the actor's log-std

ACTIVATION_FUNCTIONS = {'relu': torch.relu, 'tanh': torch.tanh, 'elu': nn.functional.elu, 'gelu': nn.functional.gelu}
# The in-place forms, applied to a layer's fresh output (which its matrix product's backward does not read).
INPLACE_ACTIVATIONS = {'relu': torch.relu_, 'tanh': torch.tanh_,
                       'elu': lambda x: nn.functional.elu(x, inplace=True), 'gelu': nn.functional.gelu}
INPLACE_MODULES: Dict[str, Callable[[], nn.Module]] = {
    'relu': lambda: nn.ReLU(inplace=True), 'tanh': nn.Tanh, 'elu': lambda: nn.ELU(inplace=True), 'gelu': nn.GELU}
# The activations' backward from their output (the next layer's saved input): (gradient, output) -> gradient.
HAND_BACKWARD: Dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    'relu': lambda grad, out: torch.ops.aten.threshold_backward(grad, out, 0),
    'tanh': torch.ops.aten.tanh_backward,
}


def _mlp(in_dim: int, sizes, out_dim: int, activation: str) -> nn.Sequential:
    layers, dim = [], in_dim
    for size in sizes:
        layers += [nn.Linear(dim, size), INPLACE_MODULES[activation]()]
        dim = size
    return nn.Sequential(*layers, nn.Linear(dim, out_dim))


def mlp_forward(layers: List[nn.Linear], activation: str, x: torch.Tensor, saved: List[torch.Tensor]) -> torch.Tensor:
    """What ``_mlp``'s Sequential computes (the same kernels), appending each linear layer's input to ``saved``."""
    act = INPLACE_ACTIVATIONS[activation]
    last = len(layers) - 1
    for i, layer in enumerate(layers):
        saved.append(x)
        x = torch.addmm(layer.bias, x, layer.weight.t())
        if i < last:
            x = act(x)
    return x


def mlp_backward(layers: List[nn.Linear], activation: str, saved: List[torch.Tensor], grad: torch.Tensor) -> None:
    """Write each layer's weight and bias gradient into ``.grad`` from the output's ``grad`` (the first layer's
    input gets none: it is the observation)."""
    act_backward = HAND_BACKWARD[activation]
    for i in range(len(layers) - 1, -1, -1):
        layer, x = layers[i], saved[i]
        layer.weight.grad = grad.t().mm(x)
        layer.bias.grad = grad.sum(0)
        if i:
            grad = act_backward(grad.mm(layer.weight), x)


class EnsembleMLP(nn.Module):
    """``members`` MLPs of the same shape evaluated together: ``[N, in]`` or ``[E, N, in]`` -> ``[E, N, out]``."""

    def __init__(self, members: int, in_dim: int, sizes, out_dim: int, activation: str) -> None:
        super().__init__()
        dims = [in_dim, *sizes, out_dim]
        self.members = members
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(dims[:-1], dims[1:]):
            bound = 1.0 / math.sqrt(fan_in)
            self.weights.append(nn.Parameter(torch.empty(members, fan_in, fan_out).uniform_(-bound, bound)))
            self.biases.append(nn.Parameter(torch.empty(members, 1, fan_out).uniform_(-bound, bound)))
        # The same parameters as a plain list of (weight, bias): a ParameterList's indexing and iteration run
        # through Python bookkeeping, ~27 times per SAC step. Device moves and state-dict loads change the
        # parameters' data in place, and a deep copy copies this list with the parameters it refers to.
        self.layers: List[Tuple[nn.Parameter, nn.Parameter]] = list(zip(self.weights, self.biases))
        self.activation = INPLACE_ACTIVATIONS[activation]

    def forward(self, x: torch.Tensor, detached: bool = False, saved: Optional[List[torch.Tensor]] = None) -> torch.Tensor:
        """``saved``: a list that receives each layer's input, for ``backward``."""
        if x.dim() == 2:
            x = x.unsqueeze(0).expand(self.members, *x.shape)
        last = len(self.layers) - 1
        for i, (weight, bias) in enumerate(self.layers):
            w, b = (weight.detach(), bias.detach()) if detached else (weight, bias)
            if saved is not None:
                saved.append(x)
            if i < last:
                x = self.activation(torch.baddbmm(b, x, w))
            elif w.shape[-1] == 1:
                # One output (Q(s, a)): a product and a sum over the last axis. As a batched matrix-vector product
                # it costs 4-5 times as much, forward and backward (the input's gradient an outer product).
                x = torch.sum(x * w.transpose(1, 2), -1, keepdim=True) + b
            else:
                x = torch.baddbmm(b, x, w)
        return x

    def backward(self, activation: str, saved: List[torch.Tensor], grad: torch.Tensor, weights: bool,
                 input_columns: Optional[slice] = None) -> Optional[torch.Tensor]:
        """From the gradient ``[E, N, out]`` of ``forward``'s output: write the weights' and biases' gradients into
        ``.grad`` (if ``weights``) and return the gradient of the input's ``input_columns`` summed over the members
        (None without them). The input is the 2-D one ``forward`` expanded over the members."""
        act_backward = HAND_BACKWARD[activation]
        last = len(self.layers) - 1
        for i in range(last, -1, -1):
            (w, b), x = self.layers[i], saved[i]
            if weights:
                if i == last and w.shape[-1] == 1:  # forward's product and sum
                    w.grad = (x * grad).sum(1, keepdim=True).transpose(1, 2)
                else:
                    w.grad = torch.bmm(x.transpose(1, 2), grad)
                b.grad = grad.sum(1, keepdim=True)
            if i:
                down = grad * w.transpose(1, 2) if i == last and w.shape[-1] == 1 else torch.bmm(grad, w.transpose(1, 2))
                grad = act_backward(down, x)
            elif input_columns is not None:
                return torch.bmm(grad, w[:, input_columns].transpose(1, 2)).sum(0)
        return None


@MODEL_REGISTRY.register('sac_mlp')
class SACModel(nn.Module):
    """The actor (``actor``) and the twin critic (``critics``) of one SAC player."""

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            hidden_sizes=[256, 256],  # of the actor and of each critic (SAC paper: two layers of 256)
            activation='relu',  # SAC paper and SB3
            num_critics=2,  # clipped double Q: the minimum over this many critics (TD3 / SAC v2)
        )

    config_constraints = {
        'hidden_sizes': sequence_of(in_range(1, None), min_len=1),
        'activation': one_of(*ACTIVATION_FUNCTIONS),
        'num_critics': in_range(1, None),
    }

    def __init__(self, cfg: dict, observation_space: gym.Space, action_space: gym.Space) -> None:
        super().__init__()
        self.observation_space = observation_space
        obs_dim = flat_obs_dim(observation_space)
        sizes = list(cfg['hidden_sizes'])
        self.activation = cfg['activation']
        if isinstance(action_space, gym.spaces.Box):
            self.continuous = True
            self.action_dim = int(np.prod(action_space.shape))
            self.actor = _mlp(obs_dim, sizes, 2 * self.action_dim, cfg['activation'])
            self.critics = EnsembleMLP(cfg['num_critics'], obs_dim + self.action_dim, sizes, 1, cfg['activation'])
        elif isinstance(action_space, gym.spaces.Discrete):
            self.continuous = False
            self.action_dim = int(action_space.n)
            self.actor = _mlp(obs_dim, sizes, self.action_dim, cfg['activation'])
            self.critics = EnsembleMLP(cfg['num_critics'], obs_dim, sizes, self.action_dim, cfg['activation'])
        else:
            raise TypeError(f'sac_mlp model: unsupported action space {action_space}; expected Box or Discrete')
        self.actor_layers: List[nn.Linear] = [layer for layer in self.actor if isinstance(layer, nn.Linear)]

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        return encode_observation(obs, self.observation_space)

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        """Discrete actions: the actor's logits ``[N, A]``."""
        return self.actor(features)

    def gaussian(self, features: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """Box actions: the actor's pre-tanh (mean, log-std), ``[N, D]`` each."""
        mean, log_std = self.actor(features).chunk(2, dim=-1)
        return mean, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def q_values(self, features: torch.Tensor, action: torch.Tensor | None = None,
                 detached: bool = False) -> torch.Tensor:
        """``[E, N]`` Q(s, a) of Box actions in [-1, 1], or ``[E, N, A]`` Q(s, .) of Discrete ones."""
        if self.continuous:
            assert action is not None  # Q(s, a) needs the action
            return self.critics(torch.cat([features, action], -1), detached).squeeze(-1)
        return self.critics(features, detached)
