"""The ``Policy`` interface shared by collectors, learners and evaluators in every mode.

A policy acts on numpy batches (with an optional recurrent state and action mask), learns from
a columnar chunk, and carries *versioned* parameters: ``version`` counts the updates that
produced the current parameters, and every chunk a collector makes records it, which is how a
learner measures staleness. ``get_params``/``set_params`` move parameters (collectors, league
snapshots); ``state_dict``/``load_state_dict`` add optimiser and RNG state for checkpoints.
A policy computes on one device (:mod:`sparring.policy.device`): built on its acting device, moved
by a learner with :meth:`Policy.to_learner_device`; what it hands out is always on the CPU.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

import gymnasium as gym
import numpy as np
import torch

from sparring.policy.chunk_spec import ChunkSpaces, ChunkSpec, base_fields
from sparring.policy.device import Placement, learner_device


def built_on_first_use(holder: Any, name: str, make: Callable[[], torch.optim.Optimizer]) -> torch.optim.Optimizer:
    """``holder``'s optimiser kept as attribute ``name``, built by ``make`` the first time it is asked for.

    Building an optimiser imports torch's compiler (seconds), which a policy loaded only to act (``load_player``,
    a bot's opponent, an evaluator) never needs; so every optimiser of a policy (PPO's, separate-value PPO's
    value optimiser, the NFSP average network's) is built here, when the policy first learns or checkpoints.
    """
    optimizer = holder.__dict__.get(name)
    if optimizer is None:
        optimizer = make()
        setattr(holder, name, optimizer)
    return optimizer


def place_if_built(holder: Any, name: str, placement: Placement) -> None:
    """Move the state of ``holder``'s optimiser ``name`` with the parameters if it was built (one built later
    starts where the parameters then are)."""
    optimizer = holder.__dict__.get(name)
    if optimizer is not None:
        placement.optimizer(optimizer)


class ActOutput(NamedTuple):
    action: np.ndarray  # [B, ...] as sampled (Box actions unclipped; the env manager clips)
    log_prob: np.ndarray  # [B]
    value: np.ndarray  # [B]
    state: Any = None  # recurrent state after this step, None for feed-forward policies


class Policy:
    """Base class: subclasses implement ``act``, ``value``, ``learn`` and the parameter plumbing."""

    #: feed-forward policies ignore ``state``; recurrent ones return it in ``ActOutput.state``
    recurrent = False
    #: in a game whose seats have roles, the role this policy plays (set by whoever builds it for that role's
    #: spaces); None in a symmetric game
    role: Optional[str] = None

    @classmethod
    def default_config(cls) -> dict:
        return {}

    def __init__(self, cfg: dict, observation_space: gym.Space, action_space: gym.Space, seed: int = 0) -> None:
        self.cfg = cfg
        self.observation_space = observation_space
        self.action_space = action_space
        self.seed = seed
        self._version = 0
        self.placement = Placement()  # the CPU until a subclass moves what it built (``to_device``)

    # -- acting -------------------------------------------------------------------------------
    def initial_state(self, batch_size: int) -> Any:
        return None

    def act(self, obs: np.ndarray, state: Any = None, deterministic: bool = False,
            action_mask: Optional[np.ndarray] = None) -> ActOutput:
        raise NotImplementedError

    def greedy(self, obs: np.ndarray, state: Any = None,
               action_mask: Optional[np.ndarray] = None) -> Tuple[np.ndarray, Any]:
        """``(actions, next state)``: the actions ``act(..., deterministic=True)`` takes, all an evaluation needs.
        A policy that can leave out what acting to learn costs besides (values, log-probabilities) overrides it."""
        out = self.act(obs, state, deterministic=True, action_mask=action_mask)
        return out.action, out.state

    def value(self, obs: np.ndarray, state: Any = None) -> np.ndarray:
        raise NotImplementedError

    def action_probabilities(self, obs: np.ndarray, action_mask: Optional[np.ndarray] = None,
                             state: Any = None) -> np.ndarray:
        """``[B, A]`` probabilities of each discrete action (exact game-theoretic evaluation needs them)."""
        raise NotImplementedError(f'{type(self).__name__} does not expose action probabilities')

    def probabilities_and_value(self, obs: np.ndarray, action_mask: Optional[np.ndarray] = None):
        """``(action_probabilities, value)`` of a batch at once, as a search asks at every simulation; a
        policy whose two heads share a forward pass overrides this to run it once."""
        return self.action_probabilities(obs, action_mask=action_mask), self.value(obs)

    # -- learning -----------------------------------------------------------------------------
    def chunk_spec(self, spaces: ChunkSpaces) -> ChunkSpec:
        """The arrays :meth:`learn` reads from a chunk collected in ``spaces`` (:mod:`sparring.policy.chunk_spec`):
        the one place a policy declares them. Collectors record what it names, and learners refuse the rest.
        A subclass adds its own fields to its parent's."""
        return ChunkSpec(base_fields(spaces))

    def learn(self, chunk: Dict[str, np.ndarray], progress: float = 0.0) -> Dict[str, float]:
        """One update on a ``[T, B, ...]`` chunk; ``progress`` in [0, 1] drives annealing."""
        raise NotImplementedError

    def trained_module(self) -> torch.nn.Module:
        """Everything a learning policy trains, as one module: what the replicas of its learner keep equal."""
        raise NotImplementedError(f'{type(self).__name__} does not learn: it has no trained module')

    def reset_optimizer(self) -> None:
        """Forget optimiser state (moments), e.g. after the parameters were reset by the league."""

    def _make_optimizer(self) -> torch.optim.Optimizer:
        """The optimiser of a policy that learns (a subclass's), built by :attr:`optimizer` on first use."""
        raise NotImplementedError(f'{type(self).__name__} has no optimiser; it does not learn')

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The optimiser, built on first use (:func:`built_on_first_use`)."""
        return built_on_first_use(self, '_optimizer', self._make_optimizer)

    @optimizer.setter
    def optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        self._optimizer = optimizer

    def _place_optimizer(self, placement: Placement) -> None:
        """Move the optimiser's state with the parameters, if it was built (one not built yet starts where they are)."""
        place_if_built(self, '_optimizer', placement)

    # -- device -------------------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        return self.placement.device

    def to_device(self, device: torch.device) -> 'Policy':
        """Move everything this policy computes with to ``device``; returns the policy."""
        placement = Placement(device)
        if placement.device != self.placement.device:
            self._move_to(placement)
        self.placement = placement
        return self

    def to_learner_device(self) -> 'Policy':
        """Move to ``policy.device``, where a learner trains (acting copies stay where they were built)."""
        return self.to_device(learner_device(self.cfg))

    def _move_to(self, placement: Placement) -> None:
        """Subclasses move their networks, optimiser state and kept batches with ``placement``."""
        raise NotImplementedError(f'{type(self).__name__} runs on the CPU only; it cannot move to {placement.device}')

    # -- parameters ---------------------------------------------------------------------------
    @property
    def version(self) -> int:
        return self._version

    def get_params(self) -> Dict[str, torch.Tensor]:
        raise NotImplementedError

    def set_params(self, params: Dict[str, torch.Tensor], version: int) -> None:
        raise NotImplementedError

    def state_dict(self) -> Dict[str, Any]:
        raise NotImplementedError

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        raise NotImplementedError
