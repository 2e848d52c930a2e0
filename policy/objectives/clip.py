"""The clipped surrogate (``learn.objective='clip'``, the default): PPO as Schulman et al. wrote it.

The loss of a minibatch is ``-mean(min(r * A, clip(r, 1 - eps, 1 + eps) * A))`` with ``r`` the ratio of
the taken action's probability now to when it was collected (:func:`sparring.policy.functional.clipped_surrogate_loss`);
the epoch loop stops early once an epoch's mean approx-KL exceeds ``learn.target_kl`` (if set).
"""
from __future__ import annotations

from sparring.policy import functional as F
from sparring.policy.objectives.base import Minibatch, Objective, PolicyLoss


class ClipObjective(Objective):
    graph_safe = True
    acting_by_advantage = True

    def policy_loss(self, mb: Minibatch) -> PolicyLoss:
        return PolicyLoss(*F.clipped_surrogate_loss(mb.log_prob, mb.old_log_prob, mb.adv, mb.clip_range))
