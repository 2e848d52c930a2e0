"""The figures of one PPO update, typed: :class:`UpdateStats`, and the per-minibatch row they are read from.

``PPOPolicy.learn`` returns ``UpdateStats.as_dict()``: the names and the order the logs, TensorBoard and
the golden records have always read (the learner and the run loop take a plain dict from every policy).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional

# The figures a minibatch reports, in the order of the row ``PPOPolicy._update`` returns.
STEP_STATS = ('policy_loss', 'value_loss', 'entropy', 'approx_kl', 'clip_fraction')


@dataclass
class UpdateStats:
    """Means over the update's gradient steps (a refused step counts as zeros), then the update's own figures."""
    policy_loss: float
    value_loss: float
    entropy: float
    approx_kl: float
    clip_fraction: float
    grad_clip_fraction: Optional[float]  # OpenAI Five's per-element clip only: share of elements clipped
    objective: Dict[str, float]  # the objective's own (the KL penalty's kl, kl_beta, lr_multiplier; magnet_coef)
    skipped_updates: int  # so far: steps refused because the loss or a gradient was not finite
    lr: float
    clip_range: float
    gradient_steps: int
    samples: int  # steps trained on (the window's too, for expert iteration)
    samples_consumed: int  # samples through gradient steps (epochs count again)
    early_stop: float  # 1.0 when the epoch loop stopped early
    explained_variance: float
    value_fit: Dict[str, float] = field(default_factory=dict)  # a value fitted apart (its value_loss replaces above)
    average: Dict[str, float] = field(default_factory=dict)  # the average policy's fit (average_loss, average_samples)

    def as_dict(self) -> Dict[str, float]:
        stats: Dict[str, float] = dict(policy_loss=self.policy_loss, value_loss=self.value_loss, entropy=self.entropy,
                                       approx_kl=self.approx_kl, clip_fraction=self.clip_fraction)
        if self.grad_clip_fraction is not None:
            stats['grad_clip_fraction'] = self.grad_clip_fraction
        stats.update(self.objective)
        stats.update(skipped_updates=self.skipped_updates, lr=self.lr, clip_range=self.clip_range,
                     gradient_steps=self.gradient_steps, samples=self.samples, samples_consumed=self.samples_consumed,
                     early_stop=self.early_stop, explained_variance=self.explained_variance)
        stats.update(self.value_fit)
        stats.update(self.average)
        return stats
