"""Magnetic mirror descent (``learn.objective='mmd'``): the clipped surrogate plus two reverse-KL terms.

The maths (the loss, the reverse KL, the magnets, why the last iterate converges) is in
:mod:`sparring.policy.mmd`. This object keeps, before the epochs, the heads of the policy the update
starts from (and of a moving magnet) and this update's alpha (``magnet_coef``, annealed towards
``magnet_coef_final``); after them a moving magnet steps ``magnet_lr`` of the way to the policy. The
magnet network travels in the checkpoint (``magnet``) and returns to the policy's parameters on a reset.
Discrete actions only; a moving magnet needs a feed-forward model.
"""
from __future__ import annotations

import copy
from typing import Any, Dict

import torch

from sparring.config.schema import in_range, one_of
from sparring.policy import functional as F
from sparring.policy.device import Placement
from sparring.policy.mmd import mmd_policy_loss
from sparring.policy.objectives.base import (Minibatch, Objective, PolicyLoss, PolicyParts, categorical_dists,
                                             keep_old_heads)
from sparring.policy.train_batch import TrainBatch, present

MAGNETS = ('uniform', 'moving')

# PPO's ``learn`` keys of this objective (read only when ``learn.objective='mmd'``).
MMD_DEFAULTS = dict(
    mmd_kl_coef=1.0,  # weight of KL(pi || pi at the update's start): 1 / the mirror-descent step size
    magnet='uniform',  # 'uniform' over the legal actions, or 'moving' (a network trailing the policy)
    magnet_coef=0.05,  # weight alpha of KL(pi || magnet)
    magnet_coef_final=None,  # alpha annealed linearly to this over the run (None: constant)
    magnet_lr=0.05,  # moving magnet: fraction of the way to the policy per update
)

MMD_CONSTRAINTS = {
    'learn.mmd_kl_coef': in_range(0.0, None),
    'learn.magnet': one_of(*MAGNETS),
    'learn.magnet_coef': in_range(0.0, None),
    'learn.magnet_coef_final': in_range(0.0, None, allow_none=True),
    'learn.magnet_lr': in_range(0.0, 1.0),
}


class MMDObjective(Objective):
    def __init__(self, parts: PolicyParts) -> None:
        super().__init__(parts)
        learn = self.learn
        if parts.continuous:
            raise TypeError('policy.learn.objective=\'mmd\' needs a Discrete action space (its KL terms are exact '
                            'over the actions)')
        self.magnet_net = None
        if learn['magnet'] == 'moving':
            if parts.recurrent:
                raise TypeError('policy.learn.magnet=\'moving\' needs a feed-forward model (the magnet network '
                                'would need recurrent states of its own); use magnet=\'uniform\'')
            self.magnet_net = copy.deepcopy(parts.net).requires_grad_(False)
        self.current_magnet_coef = learn['magnet_coef']  # alpha of the update under way

    def _magnet_coef(self, progress: float) -> float:
        learn = self.learn
        final = learn['magnet_coef_final']
        return learn['magnet_coef'] if final is None else F.LinearSchedule(learn['magnet_coef'], final)(progress)

    @torch.no_grad()
    def before_update(self, batch: TrainBatch, progress: float) -> None:
        """The old policy's heads, the magnet's heads (a moving magnet) and this update's alpha."""
        keep_old_heads(self.parts, batch)
        if self.magnet_net is not None:
            obs = self.magnet_net.prepare(batch.obs)
            batch.magnet_head = self.magnet_net.model(obs)[0]
        self.current_magnet_coef = self._magnet_coef(progress)

    def policy_loss(self, mb: Minibatch) -> PolicyLoss:
        """(policy loss, KL to the old policy, clip fraction), as the PPO update logs them."""
        part = mb.part
        heads = [mb.head, present(part.kept.old_head, 'old_head')]
        if self.magnet_net is not None:
            heads.append(present(part.kept.magnet_head, 'magnet_head'))
        dists = categorical_dists(mb, *heads)
        magnet = dists[2] if len(dists) > 2 else None
        loss, kl_old, _ = mmd_policy_loss(mb.log_prob, mb.old_log_prob, mb.adv, dists[0], dists[1], magnet,
                                          mb.clip_range, self.learn['mmd_kl_coef'], self.current_magnet_coef)
        _, clip_frac = F.ratio_statistics(mb.log_prob - mb.old_log_prob, mb.clip_range)
        return PolicyLoss(loss, kl_old.detach(), clip_frac)

    @torch.no_grad()
    def after_update(self, batch: TrainBatch, fresh: TrainBatch) -> Dict[str, float]:
        """A moving magnet steps ``magnet_lr`` of the way to the policy."""
        if self.magnet_net is not None:
            rate = self.learn['magnet_lr']
            for magnet, live in zip(self.magnet_net.state_dict().values(), self.parts.net.state_dict().values()):
                if magnet.is_floating_point():
                    magnet.lerp_(live, rate)
                else:
                    magnet.copy_(live)
        batch.old_head = batch.magnet_head = None  # not kept with a replayed batch
        return dict(magnet_coef=self.current_magnet_coef)

    def reset(self) -> None:
        """The magnet back onto the policy (after a reset of the policy's parameters)."""
        if self.magnet_net is not None:
            self.magnet_net.load_state_dict(self.parts.net.state_dict())

    def state_dict(self, placement: Placement) -> Dict[str, Any]:
        state = super().state_dict(placement)
        if self.magnet_net is not None:
            state['magnet'] = placement.host_copy(dict(self.magnet_net.state_dict()))
        return state

    def load_state_dict(self, state: Dict[str, Any], placement: Placement) -> None:
        if self.magnet_net is not None:
            self.magnet_net.load_state_dict(state['magnet'])

    def to(self, placement: Placement) -> None:
        if self.magnet_net is not None:
            placement.module(self.magnet_net)
