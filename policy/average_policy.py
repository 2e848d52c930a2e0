"""An NFSP-style average policy: a second network fitted by supervised learning to the policy's own recent play.

``policy.average=dict(enabled=True, ...)``. After every update the steps where the policy chose an
action (``train_mask``: its own moves, both seats in self-play) of the last ``window`` chunks are the
training set; ``steps`` gradient steps of ``batch_size`` samples drawn uniformly from it minimise
the cross-entropy ``-log pi_avg(a | s)`` over the legal actions. Sampling state-action pairs from the
play of a sequence of policies estimates their *realisation-weighted* mixture (each iterate weighted
by how often it reaches the state), which is the behaviour strategy of "pick an iterate, follow it",
so in a two-player zero-sum game the average of self-play iterates that circle an equilibrium is
closer to it than any one of them (Heinrich and Silver 2016; Kuhn's theorem).

With ``answer=True`` the average is the policy's *answer*: ``action_probabilities`` (what exact
analysis scores) reads it, while the policy still acts and learns with its current iterate. Its
parameters travel with the policy's (under ``average.``), so a snapshot answers with its average too.
The sample window is not checkpointed: a resumed run refills it from its next chunks.
"""
from __future__ import annotations

from collections import deque
from typing import Dict, Optional

import numpy as np
import torch

from sparring.config.schema import in_range, of_type
from sparring.policy import distributions as D
from sparring.policy.ppo_host import PPOHost

PARAM_PREFIX = 'average.'

AVERAGE_DEFAULTS = dict(
    enabled=False,  # fit an average-policy network to the policy's own recent play
    window=20,  # chunks whose acting steps form the training set
    steps=8,  # gradient steps per update
    batch_size=512,  # samples per gradient step
    lr=1e-3,  # its Adam learning rate
    answer=True,  # action_probabilities (exact analysis, the run's answer) reads the average
)

AVERAGE_CONSTRAINTS = {
    'average.enabled': of_type(bool),
    'average.window': in_range(1, None),
    'average.steps': in_range(1, None),
    'average.batch_size': in_range(1, None),
    'average.lr': in_range(0.0, None, open_lo=True),
    'average.answer': of_type(bool),
}


class AveragePolicy:
    """The average network, its optimiser and its window of samples (one ``(obs, action, mask)`` per chunk)."""

    def __init__(self, cfg: dict, model: torch.nn.Module, generator: torch.Generator) -> None:
        self.cfg = cfg
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=cfg['lr'])
        self.generator = generator
        self.window: deque = deque(maxlen=int(cfg['window']))

    def add(self, chunk: Dict[str, np.ndarray]) -> int:
        """Keep the chunk's acting steps; returns how many there were."""
        acting = chunk['train_mask'] if 'train_mask' in chunk else np.ones(chunk['action'].shape, bool)
        mask = chunk.get('action_mask')
        sample = (torch.as_tensor(chunk['obs'][acting]).float(), torch.as_tensor(chunk['action'][acting]).long(),
                  None if mask is None else torch.as_tensor(mask[acting]))
        if len(sample[1]):
            self.window.append(sample)
        return int(len(sample[1]))

    def log_probs(self, obs: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
        head = self.model(obs)[0]
        return D.categorical_log_probs(head, mask)

    def fit(self, device: torch.device) -> Dict[str, float]:
        """``steps`` gradient steps of cross-entropy on samples drawn from the window; their mean loss."""
        if not self.window:
            return {}
        obs = torch.cat([s[0] for s in self.window])
        actions = torch.cat([s[1] for s in self.window])
        masks = None if self.window[0][2] is None else torch.cat([s[2] for s in self.window])
        total: float | torch.Tensor = 0.0  # a tensor after the first step: read back once, at the end
        for _ in range(self.cfg['steps']):
            rows = torch.randint(len(actions), (self.cfg['batch_size'],), generator=self.generator)
            mask = None if masks is None else masks[rows].to(device)
            log_probs = self.log_probs(obs[rows].to(device), mask)
            loss = -D.categorical_log_prob(log_probs, actions[rows].to(device)).mean()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            total += loss.detach()
        return dict(average_loss=float(total) / self.cfg['steps'], average_samples=int(len(actions)))

    @torch.no_grad()
    def probabilities(self, obs: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
        return self.log_probs(obs, mask).exp()

    # -- parameters and checkpoints -------------------------------------------------------------
    def params(self) -> Dict[str, torch.Tensor]:
        return {PARAM_PREFIX + k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()}

    @staticmethod
    def split(params: Dict[str, torch.Tensor]):
        """(the policy's own parameters, the average's without the prefix) of a parameter dict."""
        own = {k: v for k, v in params.items() if not k.startswith(PARAM_PREFIX)}
        average = {k[len(PARAM_PREFIX):]: v for k, v in params.items() if k.startswith(PARAM_PREFIX)}
        return own, average

    def state_dict(self) -> dict:
        return dict(optimizer=self.optimizer.state_dict())

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state['optimizer'])


class AveragePolicySteps(PPOHost):
    """Mixed into :class:`PPOPolicy`: builds, trains, answers with and carries the average network.
    Needs from the policy: ``cfg``, ``model``, ``net``, ``continuous``, ``recurrent``, ``generator``, ``placement``."""

    def _init_average(self, make_model) -> None:
        cfg = self.cfg['average']
        self.average = None
        if not cfg['enabled']:
            return
        if self.continuous or self.recurrent:
            raise TypeError('policy.average needs a feed-forward model with Discrete actions (it fits a categorical '
                            'distribution to the chosen actions)')
        self.average = AveragePolicy(cfg, make_model(), self.generator)

    def _learn_average(self, chunk: Dict[str, np.ndarray]) -> Dict[str, float]:
        if self.average is None:
            return {}
        with torch.no_grad():  # fitted on what the network sees (normalised observations where obs_norm is on)
            prepared = self.net.prepare(self._obs_tensor(chunk['obs'])).cpu().numpy()
        self.average.add(dict(chunk, obs=prepared))
        return self.average.fit(self.placement.device)

    def _answer_probabilities(self, obs: torch.Tensor, mask: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        """The average's probabilities when it is the answer, else None (the current iterate answers)."""
        if self.average is None or not self.average.cfg['answer']:
            return None
        return self.average.probabilities(self.net.prepare(obs), mask)

    def _with_average_params(self, params: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        return params if self.average is None else dict(params, **self.average.params())

    def _load_average_params(self, params: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """The policy's own parameters out of ``params``, the average's loaded (kept as they are if absent)."""
        own, average = AveragePolicy.split(params)
        if self.average is not None and average:
            self.average.model.load_state_dict(average)
        return own

    def _average_state(self) -> dict:
        return {} if self.average is None else dict(average=self.placement.to_host(self.average.state_dict()))

    def _load_average_state(self, state: dict) -> None:
        if self.average is not None:
            self.average.load_state_dict(state['average'])

    def _move_average(self, placement) -> None:
        if self.average is not None:
            placement.module(self.average.model)
            placement.optimizer(self.average.optimizer)
