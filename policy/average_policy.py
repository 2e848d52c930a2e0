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

:class:`~sparring.policy.ppo.PPOPolicy` owns one (:func:`make_average`): an :class:`AveragePolicy`, or a
:class:`NoAverage` that fits nothing and never answers, so the policy calls either the same way.
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Dict, Optional, Union

import numpy as np
import torch

from sparring.config.schema import in_range, of_type
from sparring.policy import distributions as D
from sparring.policy.base import built_on_first_use, place_if_built
from sparring.policy.device import Placement

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


def split_params(params: Dict[str, torch.Tensor]):
    """(the policy's own parameters, the average's without the prefix) of a parameter dict."""
    own = {k: v for k, v in params.items() if not k.startswith(PARAM_PREFIX)}
    average = {k[len(PARAM_PREFIX):]: v for k, v in params.items() if k.startswith(PARAM_PREFIX)}
    return own, average


class NoAverage:
    """``policy.average.enabled=False``: nothing to fit, no parameters or state of its own, never the answer."""

    answers = False  # whether action_probabilities reads the average instead of the current iterate

    def learn(self, chunk: Dict[str, np.ndarray], prepare: Callable[[np.ndarray], np.ndarray],
              device: torch.device) -> Dict[str, float]:
        return {}

    def probabilities(self, obs: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
        raise RuntimeError('the policy has no average network (policy.average.enabled is False): the current '
                           'iterate answers')

    def params(self) -> Dict[str, torch.Tensor]:
        return {}

    def load_params(self, params: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """The policy's own parameters out of ``params`` (an average's, if any, are not this policy's)."""
        return split_params(params)[0]

    def checkpoint(self, placement: Placement) -> dict:
        return {}

    def load_checkpoint(self, state: dict) -> None:
        pass

    def to(self, placement: Placement) -> None:
        pass


class AveragePolicy(NoAverage):
    """The average network, its optimiser and its window of samples (one ``(obs, action, mask)`` per chunk)."""

    def __init__(self, cfg: dict, model: torch.nn.Module, generator: torch.Generator) -> None:
        self.cfg = cfg
        self.model = model
        self.generator = generator
        self.window: deque = deque(maxlen=int(cfg['window']))

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        """The average network's Adam, built on first use like the policy's (:func:`built_on_first_use`)."""
        return built_on_first_use(self, '_optimizer', lambda: torch.optim.Adam(self.model.parameters(),
                                                                               lr=self.cfg['lr']))

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

    @property
    def answers(self) -> bool:  # type: ignore[override]
        return bool(self.cfg['answer'])

    def learn(self, chunk: Dict[str, np.ndarray], prepare: Callable[[np.ndarray], np.ndarray],
              device: torch.device) -> Dict[str, float]:
        """Add the chunk's acting steps (observations as the network sees them: ``prepare``) and fit."""
        self.add(dict(chunk, obs=prepare(chunk['obs'])))
        return self.fit(device)

    # -- parameters and checkpoints -------------------------------------------------------------
    def params(self) -> Dict[str, torch.Tensor]:
        return {PARAM_PREFIX + k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()}

    def load_params(self, params: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        """The policy's own parameters out of ``params``; the average's loaded (kept as they are if absent)."""
        own, average = split_params(params)
        if average:
            self.model.load_state_dict(average)
        return own

    def state_dict(self) -> dict:
        return dict(optimizer=self.optimizer.state_dict())

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state['optimizer'])

    def checkpoint(self, placement: Placement) -> dict:
        return dict(average=placement.to_host(self.state_dict()))

    def load_checkpoint(self, state: dict) -> None:
        self.load_state_dict(state['average'])

    def to(self, placement: Placement) -> None:
        placement.module(self.model)
        place_if_built(self, '_optimizer', placement)


def make_average(cfg: dict, make_model: Callable[[], torch.nn.Module], generator: torch.Generator,
                 continuous: bool, recurrent: bool) -> Union[AveragePolicy, NoAverage]:
    """The average policy ``cfg`` (the ``policy.average`` section) asks for; ``make_model`` builds its network."""
    if not cfg['enabled']:
        return NoAverage()
    if continuous or recurrent:
        raise TypeError('policy.average needs a feed-forward model with Discrete actions (it fits a categorical '
                        'distribution to the chosen actions)')
    return AveragePolicy(cfg, make_model(), generator)
