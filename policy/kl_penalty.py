"""The adaptive KL-penalty objective's steps within a PPO update, mixed into :class:`PPOPolicy`.

At the start of an update the heads of the whole batch (and a Gaussian's log-std) are kept as the
"old" policy, the centre of the trust region. Each minibatch's policy loss is ``-surrogate + beta *
KL + eta * max(0, KL - 2 kl_target)^2`` with the exact KL from that old policy; after every epoch
the whole batch's KL decides the early stop; after the update beta, and at its bounds the
learning-rate multiplier, adapt. The loss and the rule themselves are pure functions in
:mod:`sparring.policy.functional`.
"""
from __future__ import annotations

from typing import Dict, Optional

import torch

from sparring.policy import distributions as D
from sparring.policy import functional as F
from sparring.policy.ppo_host import PPOHost
from sparring.policy.train_batch import TrainBatch

# The epoch loop stops once the batch's KL passes this multiple of kl_target.
KL_EARLY_STOP_MULTIPLE = 4.0


class KLPenaltySteps(PPOHost):
    """Needs from the policy: ``cfg``, ``model``, ``continuous``, ``kl_beta``, ``lr_multiplier``,
    ``_forward(batch)`` and ``_acting_steps(batch, *tensors)``."""

    kl_beta: float
    lr_multiplier: float

    def _keep_old_policy(self, batch: TrainBatch) -> None:
        with torch.no_grad():
            batch.fields['old_head'] = self._forward(batch)[0]
            if self.continuous:
                self._old_log_std = self.model.log_std.detach().clone()

    def _kl(self, old_head: torch.Tensor, head: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
        """Per-step KL(policy at the start of the update || current policy)."""
        if self.continuous:
            return D.gaussian_kl(old_head, self._old_log_std, head, self.model.log_std)
        return D.categorical_kl(D.categorical_log_probs(old_head, mask), D.categorical_log_probs(head, mask))

    @torch.no_grad()
    def _batch_kl(self, batch: TrainBatch) -> float:
        head, _ = self._forward(batch)
        mask = batch.steps('mask') if 'mask' in batch.fields else None
        kl = self._kl(batch.steps('old_head'), batch.flatten_kept(head), mask)
        (kl,) = self._acting_steps(batch, kl)
        return kl.mean().item() if kl.numel() else 0.0

    def _kl_stops_early(self, batch: TrainBatch) -> tuple[float, bool]:
        """(the whole batch's KL now, whether it is past the early stop)."""
        batch_kl = self._batch_kl(batch)
        return batch_kl, batch_kl > KL_EARLY_STOP_MULTIPLE * self.cfg['learn']['kl_target']

    def _kl_penalty_loss(self, part: TrainBatch, head: torch.Tensor, mask: Optional[torch.Tensor],
                         log_prob: torch.Tensor, old_log_prob: torch.Tensor, adv: torch.Tensor, clip_range: float):
        """(policy loss, approx-KL, clip fraction) of a minibatch; the last two only for the logs."""
        learn = self.cfg['learn']
        old_head, new_head = self._acting_steps(part, part.steps('old_head'), head)
        kl_mask = None if mask is None else self._acting_steps(part, mask)[0]
        kl = self._kl(old_head, new_head, kl_mask)
        loss, _ = F.kl_penalty_loss(log_prob, old_log_prob, adv, kl, self.kl_beta, learn['eta'], learn['kl_target'])
        approx_kl, clip_frac = F.ratio_statistics(log_prob - old_log_prob, clip_range)
        return loss, approx_kl, clip_frac

    def _adapt_kl_penalty(self, batch_kl: float) -> Dict[str, float]:
        """Apply the adaptive rule with the KL the update ended with; returns the values it was made with."""
        learn = self.cfg['learn']
        stats = dict(kl=batch_kl, kl_beta=self.kl_beta, lr_multiplier=self.lr_multiplier)
        self.kl_beta, self.lr_multiplier = F.adapt_kl_penalty(batch_kl, learn['kl_target'], self.kl_beta,
                                                              self.lr_multiplier, learn['kl_adapt_factor'])
        return stats
