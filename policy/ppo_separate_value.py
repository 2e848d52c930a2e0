"""PPO with the value function trained apart, as the continuous-control write-up does.

``policy=dict(type='ppo_separate_value', ...)`` is :class:`PPOPolicy` (either objective) with two
optimisers instead of one. The policy's loss has no value term: its epochs and minibatches are
``learn.epochs`` / ``learn.num_minibatches`` (the write-up: 20 full-batch epochs, so
``num_minibatches=1``). After them the value function is fitted on its own, with its own
``value_lr``, for ``value_epochs`` epochs of minibatches of ``value_minibatch_size`` steps,
reshuffled every epoch, on the current chunk and (``value_replay``, on by default for the KL
objective) the previous one. Both learning rates may be scaled by the size of their network
(``lr_scale='hid2'``: divided by the square root of the trunk's second hidden width, the write-up's
``9e-4 / sqrt(hid2)`` and ``1e-2 / sqrt(hid2)``), and ``reward_scale`` multiplies the rewards
before GAE (the write-up's ``1 - gamma``, so the value targets are of the order of one reward).
The model needs separate policy and value trunks (``mlp`` without ``shared_trunk``, ``task_mlp``).
"""
from __future__ import annotations

import copy
import math
from typing import Dict, Optional

import gymnasium as gym
import numpy as np
import torch

from sparring.config.registry import MODEL_REGISTRY, POLICY_REGISTRY
from sparring.config.schema import ConfigError, in_range, one_of
from sparring.policy import functional as F
from sparring.policy.base import built_on_first_use, place_if_built
from sparring.policy.finite_step import finite_update
from sparring.policy.ppo import PPOPolicy
from sparring.policy.train_batch import TrainBatch

LR_SCALES = (None, 'hid2')


def scaled_lr(lr: float, hidden_sizes, rule: Optional[str]) -> float:
    """``lr`` as given (``rule=None``) or divided by the square root of the second hidden width ('hid2')."""
    if rule is None:
        return float(lr)
    if rule == 'hid2':
        if len(hidden_sizes) < 2:
            raise ConfigError(f'config key "policy.learn.lr_scale": \'hid2\' needs a network with at least two '
                              f'hidden layers, got widths {list(hidden_sizes)}')
        return float(lr) / math.sqrt(hidden_sizes[1])
    raise ConfigError(f'config key "policy.learn.lr_scale": expected one of {LR_SCALES}, got {rule!r}')


@POLICY_REGISTRY.register('ppo_separate_value')
class SeparateValuePPOPolicy(PPOPolicy):
    value_in_policy_loss = False

    @classmethod
    def default_config(cls) -> dict:
        cfg = copy.deepcopy(PPOPolicy.default_config())
        return dict(cfg, learn=dict(
            cfg['learn'],
            lr_scale=None,  # 'hid2': lr and value_lr divided by sqrt of their network's second hidden width
            value_lr=1e-3,  # the value function's Adam learning rate (annealed with lr when anneal_lr)
            value_epochs=10,  # passes of the value fit over each chunk (after the policy's epochs)
            value_minibatch_size=256,  # steps per value minibatch (the last partial one joins the others)
            reward_scale=1.0,  # rewards are multiplied by this before GAE (the write-up: 1 - gamma)
        ))

    config_constraints = {
        **PPOPolicy.config_constraints,
        'learn.lr_scale': one_of(*LR_SCALES),
        'learn.value_lr': in_range(0.0, None, open_lo=True),
        'learn.value_epochs': in_range(1, None),
        'learn.value_minibatch_size': in_range(1, None),
        'learn.reward_scale': in_range(0.0, None, open_lo=True),
    }

    @classmethod
    def validate_config(cls, section: dict) -> None:
        super().validate_config(section)
        model = section['model']
        if getattr(MODEL_REGISTRY.get(model['type']), 'recurrent', False):
            raise ConfigError(f'config key "policy.model.type": {model["type"]!r} is recurrent; '
                              f'\'ppo_separate_value\' fits the value on single steps and needs a feed-forward '
                              f'model (\'mlp\' or \'task_mlp\')')
        if model.get('shared_trunk'):
            raise ConfigError('config key "policy.model.shared_trunk": \'ppo_separate_value\' trains the value '
                              'function apart, so the policy and the value need separate trunks (False)')
        if section['learn']['grad_clip'] != 'none':
            raise ConfigError('config key "policy.learn.grad_clip": \'ppo_separate_value\' supports only '
                              '\'none\' (the per-element clip is kept for the joint PPO loss)')

    def __init__(self, cfg: dict, observation_space: gym.Space, action_space: gym.Space, seed: int = 0) -> None:
        super().__init__(cfg, observation_space, action_space, seed)
        model = self.model
        if getattr(model, 'critic_trunk', None) is None or model.critic_trunk is model.actor_trunk:
            raise ConfigError(f'policy.model: {type(model).__name__} has no value trunk of its own; '
                              f'\'ppo_separate_value\' needs one')
        learn = cfg['learn']
        value_params = list(model.critic_trunk.parameters()) + list(model.value_head.parameters())
        value_ids = {id(p) for p in value_params}
        policy_params = [p for p in self.net.parameters() if id(p) not in value_ids]
        self.lr = scaled_lr(learn['lr'], model.actor_sizes, learn['lr_scale'])
        self.value_lr = scaled_lr(learn['value_lr'], model.critic_sizes, learn['lr_scale'])
        self.policy_params = policy_params
        self.value_params = value_params
        self.lr_schedule = F.LinearSchedule(self.lr, 0.0 if learn['anneal_lr'] else self.lr)
        self.value_lr_schedule = F.LinearSchedule(self.value_lr, 0.0 if learn['anneal_lr'] else self.value_lr)

    def _make_optimizer(self) -> torch.optim.Optimizer:
        """The policy's Adam, over every parameter but the value function's."""
        return torch.optim.Adam(self.policy_params, lr=self.lr, eps=self.cfg['learn']['adam_eps'])

    @property
    def value_optimizer(self) -> torch.optim.Optimizer:
        """The value function's Adam, built on first use like the policy's (:func:`built_on_first_use`)."""
        return built_on_first_use(self, '_value_optimizer', lambda: torch.optim.Adam(
            self.value_params, lr=self.value_lr, eps=self.cfg['learn']['adam_eps']))

    def _train_batch(self, chunk: Dict[str, np.ndarray]) -> TrainBatch:
        scale = self.cfg['learn']['reward_scale']
        if scale != 1.0:
            chunk = dict(chunk, reward=np.asarray(chunk['reward'], dtype=np.float32) * np.float32(scale))
        return super()._train_batch(chunk)

    def _after_policy_epochs(self, batch: TrainBatch, progress: float) -> Dict[str, float]:
        """Fit the value function on this chunk (and the previous one): squared error, shuffled minibatches."""
        learn = self.cfg['learn']
        parts = [batch]
        if self.replays_value and self.value_replay_batch is not None:
            parts.append(self.value_replay_batch)
        obs = torch.cat([p.kept.obs for p in parts])
        old_value = torch.cat([p.kept.value for p in parts])
        target = torch.cat([p.kept.ret for p in parts])
        lr = self.value_lr_schedule(progress)
        for group in self.value_optimizer.param_groups:
            group['lr'] = lr
        n = obs.shape[0]
        count = max(1, n // learn['value_minibatch_size'])
        bounds = np.linspace(0, n, count + 1).astype(int)  # the remainder spread over the minibatches
        loss_sum, steps = 0.0, 0
        for _ in range(learn['value_epochs']):
            order = torch.randperm(n, generator=self.generator)
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                idx = order[lo:hi]
                value = self.model.value(self.net.prepare(obs[idx]))
                loss = F.value_loss(value, old_value[idx], target[idx], learn['value_clip_range'])
                self.value_optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if not finite_update(loss, self.value_params):  # skipped and counted, never applied
                    self.value_optimizer.zero_grad(set_to_none=True)
                    self.skipped_updates += 1
                    continue
                if learn['max_grad_norm'] is not None:
                    torch.nn.utils.clip_grad_norm_(self.value_params, learn['max_grad_norm'])
                self.value_optimizer.step()
                loss_sum += loss.item()
                steps += 1
        return dict(value_loss=loss_sum / max(steps, 1), value_gradient_steps=steps, value_samples=n, value_lr=lr)

    def reset_optimizer(self) -> None:
        super().reset_optimizer()
        self.value_optimizer.state.clear()

    def _move_to(self, placement) -> None:
        super()._move_to(placement)
        place_if_built(self, '_value_optimizer', placement)

    def state_dict(self) -> dict:
        return dict(super().state_dict(), value_optimizer=self.placement.to_host(self.value_optimizer.state_dict()))

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.value_optimizer.load_state_dict(state['value_optimizer'])
