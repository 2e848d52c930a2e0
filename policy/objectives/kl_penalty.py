"""The adaptive KL penalty (``learn.objective='kl_penalty'``, the MuJoCo recipe).

At the start of an update the heads of the whole batch (and a Gaussian's log-std) are kept as the
"old" policy, the centre of the trust region. Each minibatch's policy loss is ``-surrogate + beta *
KL + eta * max(0, KL - 2 kl_target)^2`` with the exact KL from that old policy; after every epoch
the whole batch's KL decides the early stop (past ``4 * kl_target``); after the update beta, and at
its bounds the learning-rate multiplier, adapt (by ``kl_adapt_factor``). The loss and the rule
themselves are pure functions in :mod:`sparring.policy.functional`. The value function is fitted on
the previous chunk too (``value_replay`` defaults on). beta and the multiplier are checkpointed.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import torch

from sparring.config.schema import ConfigError, in_range
from sparring.policy import distributions as D
from sparring.policy import functional as F
from sparring.policy.device import Placement
from sparring.policy.objectives.base import Minibatch, Objective, PolicyLoss, PolicyParts, keep_old_heads
from sparring.policy.train_batch import TrainBatch, present

# The epoch loop stops once the batch's KL passes this multiple of kl_target.
KL_EARLY_STOP_MULTIPLE = 4.0

# PPO's ``learn`` keys of this objective.
KL_PENALTY_DEFAULTS = dict(
    kl_target=0.01,  # 'kl_penalty': the KL per update that beta steers towards
    beta_init=1.0,  # 'kl_penalty': initial weight beta of the KL term
    eta=50.0,  # 'kl_penalty': weight of the hinge eta * max(0, KL - 2 kl_target)^2
    kl_adapt_factor=1.5,  # 'kl_penalty': beta (and at its bounds the lr) moves by this factor
)

KL_PENALTY_CONSTRAINTS = {
    'learn.kl_target': in_range(0.0, None, open_lo=True),
    'learn.beta_init': in_range(*F.KL_BETA_BOUNDS),
    'learn.eta': in_range(0.0, None),
    'learn.kl_adapt_factor': in_range(1.0, None, open_lo=True),
}


class KLPenaltyObjective(Objective):
    replays_value = True

    def __init__(self, parts: PolicyParts) -> None:
        super().__init__(parts)
        self.old_log_std: Optional[torch.Tensor] = None  # a Gaussian's, at the start of the update
        self.batch_kl: Optional[float] = None  # the whole batch's KL after the last epoch
        self.reset()

    @classmethod
    def check_config(cls, learn: dict) -> None:
        if learn['objective'] == 'kl_penalty' and learn['target_kl'] is not None:
            raise ConfigError('config key "policy.learn.target_kl" is the clip objective\'s early stop; with '
                              'objective=\'kl_penalty\' the epoch loop stops at 4 * kl_target: set "kl_target" '
                              'and leave target_kl None')

    def reset(self) -> None:
        """beta and the lr multiplier back to where they start."""
        self.kl_beta = float(self.learn['beta_init'])
        self.lr_multiplier = 1.0

    def before_update(self, batch: TrainBatch, progress: float) -> None:
        """The trust region is around the parameters this update starts from."""
        keep_old_heads(self.parts, batch)
        if self.parts.continuous:
            self.old_log_std = self.parts.model.log_std.detach().clone()

    def _kl(self, old_head: torch.Tensor, head: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
        """Per-step KL(policy at the start of the update || current policy)."""
        if self.parts.continuous:
            return D.gaussian_kl(old_head, self.old_log_std, head, self.parts.model.log_std)
        return D.categorical_kl(D.categorical_log_probs(old_head, mask), D.categorical_log_probs(head, mask))

    def policy_loss(self, mb: Minibatch) -> PolicyLoss:
        learn, part = self.learn, mb.part
        old_head, new_head = part.acting_steps(present(part.kept.old_head, 'old_head'), mb.head)
        kl_mask = None if mb.mask is None else part.acting_steps(mb.mask)[0]
        kl = self._kl(old_head, new_head, kl_mask)
        loss, _ = F.kl_penalty_loss(mb.log_prob, mb.old_log_prob, mb.adv, kl, self.kl_beta, learn['eta'],
                                    learn['kl_target'])
        approx_kl, clip_frac = F.ratio_statistics(mb.log_prob - mb.old_log_prob, mb.clip_range)
        return PolicyLoss(loss, approx_kl, clip_frac)

    @torch.no_grad()
    def _whole_batch_kl(self, batch: TrainBatch) -> float:
        head, _ = self.parts.forward(batch)
        kl = self._kl(present(batch.kept.old_head, 'old_head'), batch.flatten_kept(head), batch.kept.mask)
        (kl,) = batch.acting_steps(kl)
        return kl.mean().item() if kl.numel() else 0.0

    def stops_early(self, batch: TrainBatch, epoch_rows: list) -> bool:
        self.batch_kl = self._whole_batch_kl(batch)
        return self.batch_kl > KL_EARLY_STOP_MULTIPLE * self.learn['kl_target']

    def after_update(self, batch: TrainBatch, fresh: TrainBatch) -> Dict[str, float]:
        """Apply the adaptive rule with the KL the update ended with; returns the values it was made with."""
        assert self.batch_kl is not None  # set by every epoch, and there is at least one
        learn = self.learn
        stats = dict(kl=self.batch_kl, kl_beta=self.kl_beta, lr_multiplier=self.lr_multiplier)
        self.kl_beta, self.lr_multiplier = F.adapt_kl_penalty(self.batch_kl, learn['kl_target'], self.kl_beta,
                                                              self.lr_multiplier, learn['kl_adapt_factor'])
        batch.old_head = None  # not kept with a replayed batch
        return stats

    def state_dict(self, placement: Placement) -> Dict[str, Any]:
        return dict(kl_beta=self.kl_beta, lr_multiplier=self.lr_multiplier)

    def load_state_dict(self, state: Dict[str, Any], placement: Placement) -> None:
        self.kl_beta = float(state['kl_beta'])
        self.lr_multiplier = float(state['lr_multiplier'])
