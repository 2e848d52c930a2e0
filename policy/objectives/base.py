"""The interface of a PPO objective: the policy loss of a minibatch and the steps around an update.

:class:`~sparring.policy.ppo.PPOPolicy` owns one :class:`Objective`, chosen once from ``learn.objective``
(:mod:`sparring.policy.objectives`), and calls it at fixed points of its update loop:

    chunk_fields(spaces)              the chunk's fields the objective reads beyond PPO's own (its spec's share)
    returns(chunk, returns)           the value targets of a chunk (expert iteration blends the search's in)
    policy_targets(chunk)             the chunk whose policy targets the batch carries (expert iteration: the
                                      solver's moves where labelled)
    training_batch(fresh)             what the update trains on (expert iteration: a window of chunks)
    lr_multiplier                     a factor on the learning rate (the KL penalty adapts it)
    before_update(batch, progress)    e.g. keep the policy the update starts from
    policy_loss(minibatch)            (loss, approx-KL, clip fraction) of one minibatch
    stops_early(batch, epoch_rows)    after each epoch: stop the epoch loop?
    after_update(batch, fresh)        e.g. adapt beta, move the magnet; returns the objective's own figures
    reset()                           when the league resets the player's optimiser
    state_dict(placement) / load_state_dict(state, placement) / to(placement)

Everything an objective uses of the policy it is handed once, in :class:`PolicyParts`; it never reads the
policy's attributes. The defaults here are the plain update (no window, no extra state, the clip
objective's ``target_kl`` early stop); an objective overrides what it changes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

import numpy as np
import torch

from sparring.policy import distributions as D
from sparring.policy.chunk_spec import ChunkField, ChunkSpaces
from sparring.policy.device import Placement
from sparring.policy.gradient_step import read_rows
from sparring.policy.objectives.stats import STEP_STATS
from sparring.policy.train_batch import TrainBatch


@dataclass
class PolicyParts:
    """What an objective may use of the policy it trains, handed over once when the policy is built."""
    learn: dict  # the policy's compiled ``learn`` section
    net: Any  # ppo._Network: the model behind its observation normaliser (a moving magnet copies it)
    model: Any  # the registered model: an nn.Module whose extra members (log_std, unroll) vary by type
    forward: Callable[[TrainBatch], Tuple[torch.Tensor, torch.Tensor]]  # (heads, values) under the current parameters
    continuous: bool  # Box actions (a diagonal Gaussian), else Discrete (categorical)
    recurrent: bool  # the model is recurrent and trains on BPTT windows


@dataclass
class Minibatch:
    """One minibatch as the policy loss sees it: the heads over its kept steps, and the taken actions'
    log-probabilities and advantages where an action was chosen (``part.acting_steps``)."""
    part: TrainBatch
    head: torch.Tensor  # [kept steps, ...] under the current parameters
    mask: Optional[torch.Tensor]  # [kept steps, actions]: legal actions, or None
    log_prob: torch.Tensor  # [acting steps] now
    old_log_prob: torch.Tensor  # [acting steps] when collected
    adv: torch.Tensor  # [acting steps], normalised when learn.normalize_advantage
    clip_range: float  # a 0-d tensor where the step is captured as a CUDA graph: the arithmetic takes both


class PolicyLoss(NamedTuple):
    """A minibatch's policy loss (with gradient), and two figures for the logs only."""
    loss: torch.Tensor
    approx_kl: torch.Tensor
    clip_fraction: torch.Tensor


class Objective:
    """The plain update around an abstract policy loss; see the module docstring for the call order.

    A new objective subclasses this, overrides :meth:`policy_loss` and whatever else it changes, and is
    registered by its module in :mod:`sparring.policy.objectives` under the name ``learn.objective`` takes
    (with its own config keys and constraints beside it).

    Args:
        parts: what the objective may use of the policy it trains (:class:`PolicyParts`).
    """

    #: chunks must carry a search's visit distribution: the player collects its moves by a search
    learns_from_search = False
    #: the default of ``learn.value_replay`` (also fit the value on the previous chunk)
    replays_value = False
    #: a factor on the learning rate (the KL penalty adapts it; a plain objective keeps 1)
    lr_multiplier = 1.0
    #: its policy loss is tensor arithmetic alone (no host reads, no shapes that depend on values), so a
    #: minibatch step on CUDA can be captured as a graph (policy/graphed_steps.py)
    graph_safe = False
    #: its policy loss is a mean over steps of a term proportional to the advantage that vanishes at a ratio of
    #: 1 and an advantage of 0, so steps that did not act can stay in a captured minibatch with those values
    #: (graphed_steps.acting_by_advantage)
    acting_by_advantage = False

    def __init__(self, parts: PolicyParts) -> None:
        self.parts = parts
        self.learn = parts.learn

    @classmethod
    def check_config(cls, learn: dict) -> None:
        """Checks across keys of the compiled ``learn`` section; every registered objective's runs, whichever
        is chosen (so an objective can refuse its own keys under another one)."""

    # -- the update --------------------------------------------------------------------------------
    def chunk_fields(self, spaces: ChunkSpaces) -> Tuple[ChunkField, ...]:
        """The chunk's fields this objective reads beyond those of every PPO chunk (none for a plain one)."""
        return ()

    def returns(self, chunk: Dict[str, np.ndarray], returns: np.ndarray) -> np.ndarray:
        """The value targets of a chunk.

        Args:
            chunk: the chunk's fields by name (``[T, B, ...]`` arrays).
            returns: the targets from GAE (or V-trace), ``[T, B]``.

        Returns:
            The targets the value is fitted to (the default: ``returns`` unchanged).
        """
        return returns

    def policy_targets(self, chunk: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """The chunk whose policy targets the training batch carries (the default: ``chunk`` unchanged).

        Args:
            chunk: the chunk's fields by name.
        """
        return chunk

    def training_batch(self, fresh: TrainBatch) -> TrainBatch:
        """What the update trains on (the default: the fresh chunk's batch alone).

        Args:
            fresh: the batch of the chunk just collected.
        """
        return fresh

    def before_update(self, batch: TrainBatch, progress: float) -> None:
        """Called once before the epochs of an update (e.g. to keep the policy the update starts from).

        Args:
            batch: what the update trains on.
            progress: the fraction of the run's env-step budget spent, 0 to 1.
        """

    def policy_loss(self, mb: Minibatch) -> PolicyLoss:
        """The policy loss of one minibatch, with two figures for the logs.

        Args:
            mb: the minibatch's heads, log-probabilities and advantages (:class:`Minibatch`).

        Returns:
            ``(loss, approx_kl, clip_fraction)``; only ``loss`` carries gradient.
        """
        raise NotImplementedError

    def stops_early(self, batch: TrainBatch, epoch_rows: list) -> bool:
        """The clip objective's rule: stop once an epoch's mean approx-KL exceeds ``target_kl`` (if set)."""
        target = self.learn['target_kl']
        if target is None:
            return False
        approx_kl = STEP_STATS.index('approx_kl')
        epoch_kl = sum(r[approx_kl] for r in read_rows(epoch_rows, len(STEP_STATS)))
        return epoch_kl / max(len(epoch_rows), 1) > target

    def after_update(self, batch: TrainBatch, fresh: TrainBatch) -> Dict[str, float]:
        """Called once after the epochs of an update (e.g. to adapt the KL penalty's beta, or move the magnet).

        Args:
            batch: what the update trained on.
            fresh: the batch of the chunk just collected.

        Returns:
            The objective's own figures for the logs (``train/<name>``).
        """
        return {}

    def reset(self) -> None:
        """Forget the objective's adaptive state: the league reset the player's optimiser."""

    # -- checkpoints and devices ---------------------------------------------------------------------
    def state_dict(self, placement: Placement) -> Dict[str, Any]:
        """Entries of the policy's checkpoint. Every PPO checkpoint carries the KL penalty's adaptive state
        (the file format predates objectives as objects): an objective without one writes the values the
        penalty starts from, so checkpoints keep one layout."""
        return dict(kl_beta=float(self.learn['beta_init']), lr_multiplier=1.0)

    def load_state_dict(self, state: Dict[str, Any], placement: Placement) -> None:
        pass

    def to(self, placement: Placement) -> None:
        pass


@torch.no_grad()
def keep_old_heads(parts: PolicyParts, batch: TrainBatch) -> None:
    """The heads of the whole batch under the parameters the update starts from, as field ``old_head``."""
    batch.old_head = parts.forward(batch)[0]


def categorical_dists(mb: Minibatch, *heads: torch.Tensor) -> list:
    """The log-probabilities over the legal actions of each flat head, at the acting steps."""
    acting_mask = None if mb.mask is None else mb.part.acting_steps(mb.mask)[0]
    return [D.categorical_log_probs(h, acting_mask) for h in mb.part.acting_steps(*heads)]
