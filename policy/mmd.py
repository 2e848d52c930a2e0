"""Magnetic mirror descent (Sokota et al. 2022): the maths of PPO's ``'mmd'`` objective, as pure functions.

``learn.objective='mmd'``. Each update is one step of mirror descent with a *magnet*: the policy
moves towards higher advantage while a reverse-KL term keeps it near the policy the update started
from (the mirror-descent step size ``1 / mmd_kl_coef``) and another pulls it towards the magnet
(``magnet_coef``, the regularisation temperature alpha). Per acting step, with exact KLs over the
legal actions:

    loss = clipped surrogate  +  mmd_kl_coef * KL(pi || pi_old)  +  magnet_coef * KL(pi || magnet)

In a two-player zero-sum game the *last iterate* of this update converges (to the equilibrium of the
game regularised by alpha, the quantal response equilibrium for a uniform magnet), where plain
self-play cycles. Two magnets:

* ``'uniform'``: uniform over the legal actions, so the pull is ``-entropy + log(#legal)``;
  ``magnet_coef_final`` anneals alpha linearly over the run, moving the fixed point towards a Nash
  equilibrium of the unregularised game.
* ``'moving'``: a copy of the network that trails the policy: after every update its parameters move a
  fraction ``magnet_lr`` of the way to the policy's. The regularised equilibrium then drifts
  towards an unregularised one without an annealing schedule (MMD's "moving magnet").

The objective itself (the magnet network, alpha's schedule, its checkpoint) is
:class:`sparring.policy.objectives.mmd.MMDObjective`; the magnet network travels in the policy's state
dict (a resumed run keeps its magnet) and returns to the policy's parameters when the policy is reset (a
PSRO reset starts a fresh magnet too).
"""
from __future__ import annotations

from typing import Optional

import torch

from sparring.policy import functional as F


def reverse_kl(log_probs: torch.Tensor, ref_log_probs: Optional[torch.Tensor]) -> torch.Tensor:
    """Per row KL(pi || ref) over the actions pi may take; ``ref_log_probs`` None: the uniform distribution
    over those actions (the ones pi gives probability > 0, i.e. the legal ones under a mask)."""
    probs = log_probs.exp()
    legal = probs > 0
    if ref_log_probs is None:
        ref_log_probs = -torch.log(legal.sum(-1, keepdim=True).to(log_probs.dtype)).expand_as(log_probs)
    terms = probs * (log_probs - ref_log_probs)
    return torch.where(legal, terms, torch.zeros_like(terms)).sum(-1)


def mmd_policy_loss(log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor,
                    log_probs: torch.Tensor, old_log_probs: torch.Tensor, magnet_log_probs: Optional[torch.Tensor],
                    clip_range: float, kl_coef: float, magnet_coef: float):
    """(loss, mean KL(pi || pi_old), mean KL(pi || magnet)) of a minibatch of acting steps.

    ``log_prob`` / ``old_log_prob`` ``[N]``: the taken actions' log-probabilities now and when collected;
    ``log_probs`` / ``old_log_probs`` / ``magnet_log_probs`` ``[N, A]``: whole distributions now, at the start
    of the update and under the magnet (None: uniform over the legal actions).
    """
    surrogate, _, _ = F.clipped_surrogate_loss(log_prob, old_log_prob, advantages, clip_range)
    kl_old = reverse_kl(log_probs, old_log_probs).mean()
    kl_magnet = reverse_kl(log_probs, magnet_log_probs).mean()
    return surrogate + kl_coef * kl_old + magnet_coef * kl_magnet, kl_old, kl_magnet
