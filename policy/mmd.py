"""Magnetic mirror descent (Sokota et al. 2022) as a PPO objective, mixed into :class:`PPOPolicy`.

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

The magnet network travels in the policy's state dict (a resumed run keeps its magnet) and returns to
the policy's parameters when the policy is reset (a PSRO reset starts a fresh magnet too).
"""
from __future__ import annotations

import copy
from typing import Dict, Optional

import torch

from sparring.config.schema import in_range, one_of
from sparring.policy import distributions as D
from sparring.policy import functional as F
from sparring.policy.ppo_host import PPOHost
from sparring.policy.train_batch import TrainBatch

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


class MagnetSteps(PPOHost):
    """Needs from the policy: ``cfg``, ``net``, ``model``, ``continuous``, ``_forward(batch)``,
    ``_acting_steps(batch, *tensors)`` and, from :class:`KLPenaltySteps`, ``_keep_old_policy(batch)``."""

    def _init_magnet(self) -> None:
        learn = self.cfg['learn']
        self.mmd = learn['objective'] == 'mmd'
        self.magnet_net = None
        self.current_magnet_coef = learn['magnet_coef']
        if self.mmd and self.continuous:
            raise TypeError('policy.learn.objective=\'mmd\' needs a Discrete action space (its KL terms are exact '
                            'over the actions)')
        if self.mmd and learn['magnet'] == 'moving':
            if self.recurrent:
                raise TypeError('policy.learn.magnet=\'moving\' needs a feed-forward model (the magnet network '
                                'would need recurrent states of its own); use magnet=\'uniform\'')
            self.magnet_net = copy.deepcopy(self.net).requires_grad_(False)

    def _reset_magnet(self) -> None:
        """The magnet back onto the policy (after a reset of the policy's parameters)."""
        if self.magnet_net is not None:
            self.magnet_net.load_state_dict(self.net.state_dict())

    def _magnet_coef(self, progress: float) -> float:
        learn = self.cfg['learn']
        final = learn['magnet_coef_final']
        return learn['magnet_coef'] if final is None else F.LinearSchedule(learn['magnet_coef'], final)(progress)

    @torch.no_grad()
    def _keep_magnet(self, batch: TrainBatch, progress: float) -> None:
        """Before the epochs: the old policy's heads, the magnet's heads (a moving magnet) and this update's alpha."""
        self._keep_old_policy(batch)
        if self.magnet_net is not None:
            obs = self.magnet_net.prepare(batch.fields['obs'])
            batch.fields['magnet_head'] = self.magnet_net.model(obs)[0]
        self.current_magnet_coef = self._magnet_coef(progress)

    @torch.no_grad()
    def _move_magnet(self) -> Dict[str, float]:
        """After the epochs: a moving magnet steps ``magnet_lr`` of the way to the policy."""
        if self.magnet_net is not None:
            rate = self.cfg['learn']['magnet_lr']
            for magnet, live in zip(self.magnet_net.state_dict().values(), self.net.state_dict().values()):
                if magnet.is_floating_point():
                    magnet.lerp_(live, rate)
                else:
                    magnet.copy_(live)
        return dict(magnet_coef=self.current_magnet_coef)

    def _mmd_loss(self, part: TrainBatch, head: torch.Tensor, mask: Optional[torch.Tensor],
                  log_prob: torch.Tensor, old_log_prob: torch.Tensor, adv: torch.Tensor, clip_range: float):
        """(policy loss, KL to the old policy, clip fraction) of a minibatch, as the PPO update logs them."""
        learn = self.cfg['learn']
        all_steps = [head, part.steps('old_head')]
        if self.magnet_net is not None:
            all_steps.append(part.steps('magnet_head'))
        heads = self._acting_steps(part, *all_steps)
        acting_mask = None if mask is None else self._acting_steps(part, mask)[0]
        dists = [D.categorical_log_probs(h, acting_mask) for h in heads]
        magnet = dists[2] if len(dists) > 2 else None
        loss, kl_old, _ = mmd_policy_loss(log_prob, old_log_prob, adv, dists[0], dists[1], magnet, clip_range,
                                          learn['mmd_kl_coef'], self.current_magnet_coef)
        _, clip_frac = F.ratio_statistics(log_prob - old_log_prob, clip_range)
        return loss, kl_old.detach(), clip_frac

    def _magnet_state(self) -> Dict[str, object]:
        return {} if self.magnet_net is None else dict(magnet=self.placement.host_copy(dict(
            self.magnet_net.state_dict())))

    def _load_magnet_state(self, state: Dict[str, object]) -> None:
        if self.magnet_net is not None:
            self.magnet_net.load_state_dict(state['magnet'])
