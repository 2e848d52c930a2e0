"""Proximal Policy Optimisation with the clipped surrogate objective.

Clipped surrogate, optionally clipped value loss, entropy bonus, GAE(lambda) with truncated
episodes bootstrapped, per-minibatch advantage normalisation, minibatch epochs, gradient-norm
clipping, linear annealing of learning rate and clip range, and optional running observation
normalisation. Categorical heads for Discrete actions (with action masks), a diagonal Gaussian
with state-independent log-std for Box actions.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np
import torch

from sparring.config.schema import in_range
from sparring.framework.registry import MODEL_REGISTRY, POLICY_REGISTRY
from sparring.policy import distributions as D
from sparring.policy import functional as F
from sparring.policy.base import ActOutput, Policy
from sparring.policy.normalizer import RunningNormalizer


class _Network(torch.nn.Module):
    """The model plus its observation normaliser, so both travel in one state dict."""

    def __init__(self, model: torch.nn.Module, normalizer: Optional[RunningNormalizer]) -> None:
        super().__init__()
        self.model = model
        self.normalizer = normalizer

    def prepare(self, obs: torch.Tensor) -> torch.Tensor:
        return obs if self.normalizer is None else self.normalizer(obs.float())


@POLICY_REGISTRY.register('ppo')
class PPOPolicy(Policy):
    @classmethod
    def default_config(cls) -> dict:
        return dict(
            model=dict(type='mlp'),
            obs_norm=False,  # running mean/variance normalisation of observations
            collect=dict(
                n_steps=128,  # rollout length T per env per iteration
            ),
            learn=dict(
                epochs=4,
                num_minibatches=4,
                lr=3e-4,
                anneal_lr=True,  # linearly to 0 over the run
                adam_eps=1e-5,
                clip_range=0.2,
                anneal_clip_range=False,  # linearly to 0 over the run
                value_clip_range=0.2,  # None: unclipped value loss
                value_coef=0.5,
                entropy_coef=0.0,
                gamma=0.99,
                gae_lambda=0.95,
                normalize_advantage=True,
                max_grad_norm=0.5,
                target_kl=None,  # stop the epoch loop early once approx-KL exceeds this
            ),
        )

    config_constraints = {
        'collect.n_steps': in_range(1, None),
        'learn.epochs': in_range(1, None),
        'learn.num_minibatches': in_range(1, None),
        'learn.lr': in_range(0.0, None, open_lo=True),
        'learn.adam_eps': in_range(0.0, None, open_lo=True),
        'learn.clip_range': in_range(0.0, None, open_lo=True),
        'learn.value_clip_range': in_range(0.0, None, open_lo=True, allow_none=True),
        'learn.value_coef': in_range(0.0, None),
        'learn.entropy_coef': in_range(0.0, None),
        'learn.gamma': in_range(0.0, 1.0),
        'learn.gae_lambda': in_range(0.0, 1.0),
        'learn.max_grad_norm': in_range(0.0, None, open_lo=True, allow_none=True),
        'learn.target_kl': in_range(0.0, None, open_lo=True, allow_none=True),
    }

    def __init__(self, cfg: dict, observation_space: gym.Space, action_space: gym.Space, seed: int = 0) -> None:
        super().__init__(cfg, observation_space, action_space, seed)
        torch.manual_seed(seed)  # parameter initialisation is part of the run's determinism
        model = MODEL_REGISTRY.get(cfg['model']['type'])(cfg['model'], observation_space, action_space)
        normalizer = None
        if cfg['obs_norm']:
            if not isinstance(observation_space, gym.spaces.Box):
                raise TypeError(f'policy.obs_norm needs a Box observation space, got {observation_space}')
            normalizer = RunningNormalizer(observation_space.shape)
        self.net = _Network(model, normalizer)
        self.model = model
        self.continuous = isinstance(action_space, gym.spaces.Box)
        learn = cfg['learn']
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=learn['lr'], eps=learn['adam_eps'])
        self.lr_schedule = F.LinearSchedule(learn['lr'], 0.0 if learn['anneal_lr'] else learn['lr'])
        self.clip_schedule = F.LinearSchedule(learn['clip_range'],
                                              0.0 if learn['anneal_clip_range'] else learn['clip_range'])
        self.generator = torch.Generator().manual_seed(seed)
        if self.continuous:
            self._action_shape = action_space.shape

    # -- acting -------------------------------------------------------------------------------
    def _obs_tensor(self, obs: np.ndarray) -> torch.Tensor:
        tensor = torch.as_tensor(obs)
        return tensor.float() if tensor.dtype == torch.float64 else tensor

    @torch.inference_mode()
    def act(self, obs: np.ndarray, state: Any = None, deterministic: bool = False,
            action_mask: Optional[np.ndarray] = None) -> ActOutput:
        head, value = self.model(self.net.prepare(self._obs_tensor(obs)))
        if self.continuous:
            if deterministic:
                action = head
            else:
                action = D.gaussian_sample(head, self.model.log_std, self.generator)
            log_prob = D.gaussian_log_prob(head, self.model.log_std, action)
            action = action.reshape(action.shape[0], *self._action_shape)
        else:
            mask = None if action_mask is None else torch.as_tensor(action_mask, dtype=torch.bool)
            log_probs = D.categorical_log_probs(head, mask)
            action = log_probs.argmax(-1) if deterministic else D.categorical_sample(log_probs, self.generator)
            log_prob = D.categorical_log_prob(log_probs, action)
        return ActOutput(action.numpy(), log_prob.numpy(), value.numpy(), None)

    @torch.inference_mode()
    def action_probabilities(self, obs: np.ndarray, action_mask: Optional[np.ndarray] = None,
                             state: Any = None) -> np.ndarray:
        if self.continuous:
            raise TypeError('action_probabilities: the policy has a continuous (Box) action space')
        head, _ = self.model(self.net.prepare(self._obs_tensor(obs)))
        mask = None if action_mask is None else torch.as_tensor(action_mask, dtype=torch.bool)
        return D.categorical_log_probs(head, mask).exp().numpy()

    @torch.inference_mode()
    def value(self, obs: np.ndarray, state: Any = None) -> np.ndarray:
        return self.model.value(self.net.prepare(self._obs_tensor(obs))).numpy()

    def _evaluate(self, obs: torch.Tensor, actions: torch.Tensor, mask: Optional[torch.Tensor]):
        """(log-prob of the taken actions, entropy, value) under the current parameters."""
        head, value = self.model(self.net.prepare(obs))
        if self.continuous:
            log_prob = D.gaussian_log_prob(head, self.model.log_std, actions.reshape(head.shape))
            entropy = D.gaussian_entropy(self.model.log_std, log_prob.shape)
        else:
            log_probs = D.categorical_log_probs(head, mask)
            log_prob = D.categorical_log_prob(log_probs, actions)
            entropy = D.categorical_entropy(log_probs)
        return log_prob, entropy, value

    # -- learning -----------------------------------------------------------------------------
    def learn(self, chunk: Dict[str, np.ndarray], progress: float = 0.0) -> Dict[str, float]:
        learn = self.cfg['learn']
        advantages, returns = F.gae(chunk['reward'], chunk['value'], chunk['next_value'], chunk['terminated'],
                                    chunk['truncated'], learn['gamma'], learn['gae_lambda'])
        # ``train_mask``: steps whose action is learnt from (e.g. not where a turn-based player
        # could not move). ``value_mask`` (a superset; default the same) also fits the value there,
        # since GAE passes through those steps' values.
        policy_mask = chunk.get('train_mask')
        keep = chunk.get('value_mask', policy_mask)
        flat = lambda x: torch.as_tensor(np.asarray(x)).reshape(-1, *np.shape(x)[2:])  # noqa: E731
        data = dict(obs=flat(chunk['obs']), action=flat(chunk['action']), log_prob=flat(chunk['log_prob']),
                    value=flat(chunk['value']), adv=flat(advantages), ret=flat(returns))
        if 'action_mask' in chunk:
            data['mask'] = flat(chunk['action_mask']).bool()
        if policy_mask is not None and keep is not policy_mask:
            data['acts'] = flat(policy_mask).bool()
        if keep is not None:
            index = torch.as_tensor(np.asarray(keep).reshape(-1), dtype=torch.bool)
            data = {k: v[index] for k, v in data.items()}
            if 'acts' in data and data['acts'].all():
                del data['acts']
        if data['obs'].dtype == torch.float64:
            data['obs'] = data['obs'].float()
        n = data['obs'].shape[0]
        if n == 0:
            raise ValueError('PPO.learn: the chunk holds no trainable step (train_mask is all False)')

        lr = self.lr_schedule(progress)
        clip_range = self.clip_schedule(progress)
        # A clip range annealed to exactly 0 would freeze the policy: keep a tiny floor.
        clip_range = max(clip_range, 1e-8)
        for group in self.optimizer.param_groups:
            group['lr'] = lr
        minibatch = max(1, n // learn['num_minibatches'])
        sums = dict(policy_loss=0.0, value_loss=0.0, entropy=0.0, approx_kl=0.0, clip_fraction=0.0)
        updates = 0
        stopped_early = False
        for _ in range(learn['epochs']):
            order = torch.randperm(n, generator=self.generator)
            epoch_kl, epoch_updates = 0.0, 0
            for start in range(0, n - minibatch + 1, minibatch):
                idx = order[start:start + minibatch]
                log_prob, entropy, value = self._evaluate(data['obs'][idx], data['action'][idx],
                                                          data['mask'][idx] if 'mask' in data else None)
                v_loss = F.value_loss(value, data['value'][idx], data['ret'][idx], learn['value_clip_range'])
                adv, old_log_prob = data['adv'][idx], data['log_prob'][idx]
                if 'acts' in data:  # the policy terms only where an action was chosen
                    acts = data['acts'][idx]
                    log_prob, entropy, adv, old_log_prob = log_prob[acts], entropy[acts], adv[acts], old_log_prob[acts]
                if log_prob.numel() == 0:  # a minibatch of value-only steps
                    pg_loss = approx_kl = clip_frac = entropy_mean = value.new_zeros(())
                else:
                    if learn['normalize_advantage']:
                        adv = F.normalize_advantages(adv)
                    pg_loss, approx_kl, clip_frac = F.clipped_surrogate_loss(log_prob, old_log_prob, adv,
                                                                             clip_range)
                    entropy_mean = entropy.mean()
                loss = pg_loss + learn['value_coef'] * v_loss - learn['entropy_coef'] * entropy_mean
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if learn['max_grad_norm'] is not None:
                    torch.nn.utils.clip_grad_norm_(self.net.parameters(), learn['max_grad_norm'])
                self.optimizer.step()
                for key, val in (('policy_loss', pg_loss), ('value_loss', v_loss), ('entropy', entropy_mean),
                                 ('approx_kl', approx_kl), ('clip_fraction', clip_frac)):
                    sums[key] += val.detach().item()
                updates += 1
                epoch_kl += approx_kl.item()
                epoch_updates += 1
            if learn['target_kl'] is not None and epoch_kl / max(epoch_updates, 1) > learn['target_kl']:
                stopped_early = True
                break
        if self.net.normalizer is not None:
            # After the update, so the chunk's log-probs were computed with the statistics it used.
            self.net.normalizer.update(data['obs'])
        self._version += 1
        stats = {k: v / max(updates, 1) for k, v in sums.items()}
        stats.update(lr=lr, clip_range=clip_range, gradient_steps=updates, samples=n,
                     samples_consumed=updates * minibatch,
                     early_stop=float(stopped_early),
                     explained_variance=F.explained_variance(data['value'].numpy(), data['ret'].numpy()))
        return stats

    def reset_optimizer(self) -> None:
        self.optimizer.state.clear()

    # -- parameters ---------------------------------------------------------------------------
    def get_params(self) -> Dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.net.state_dict().items()}

    def set_params(self, params: Dict[str, torch.Tensor], version: int) -> None:
        self.net.load_state_dict(params)
        self._version = int(version)

    def state_dict(self) -> Dict[str, Any]:
        return dict(params=self.get_params(), optimizer=self.optimizer.state_dict(), version=self._version,
                    generator=self.generator.get_state())

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.set_params(state['params'], state['version'])
        self.optimizer.load_state_dict(state['optimizer'])
        self.generator.set_state(state['generator'])
