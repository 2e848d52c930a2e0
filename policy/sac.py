"""Soft Actor-Critic behind the ``Policy`` interface: Box actions (squashed Gaussian) and Discrete ones (with masks).

Twin critics with Polyak-averaged targets, the entropy temperature tuned automatically towards a
target entropy (``-|A|`` for Box actions; for Discrete ones ``target_entropy_ratio`` times each
state's largest entropy over its legal actions), and the replay buffers DQN learns from (uniform or
prioritised, saved in checkpoints). Maths in :mod:`sparring.policy.sac_loss`, networks in
:mod:`sparring.policy.sac_model`.

``learn(chunk, progress)`` pushes the chunk's transitions (between the policy's own decisions, as
DQN's) and, once ``learn.learning_starts`` transitions are stored, takes ``learn.updates_per_chunk``
gradient steps (None: one per transition pushed, the SAC paper's replay ratio). The steps are batched
for speed: every step's batch is drawn at once and moved to the device once, the three losses share
one backward pass (written by hand for Box actions, :mod:`sparring.policy.sac_grad`) and one (fused,
where torch has it) Adam step, the finite guard is a flag the optimiser reads instead of a host sync
(on the CPU, where a read is free, it skips the optimiser instead), and the figures are read back once
per chunk. As in the reference implementation, actor, critics and temperature are updated together
from the same parameters.

What acts (``get_params``: collectors, league snapshots and resets, exports) is the actor and the
observation normaliser; the critics, their targets, the temperature and the replay buffer stay with
the learner. Box actions are emitted in the action space's bounds (``low + (tanh(u) + 1) (high - low) / 2``),
so the space must be bounded.
"""
from __future__ import annotations

import copy
import math
import operator
from typing import Any, Dict, Mapping, Optional, cast

import gymnasium as gym
import numpy as np
import torch

from sparring.config.registry import MODEL_REGISTRY, POLICY_REGISTRY
from sparring.config.schema import ConfigError, in_range
from sparring.policy import distributions as D
from sparring.policy import functional as F
from sparring.policy import sac_grad as G
from sparring.policy import sac_loss as L
from sparring.policy.base import ActOutput, Policy
from sparring.policy.chunk_spec import ChunkField, ChunkSpaces, ChunkSpec, next_obs_field
from sparring.policy.device import Placement, acting_device, check_device_spec
from sparring.policy.normalizer import RunningNormalizer, observation_normalizer
from sparring.policy.replay_buffer import (REPLAY_CONSTRAINTS, check_batch_fits_replay, chunk_transitions,
                                           make_replay_buffer, replay_default_config)
from sparring.policy.transitions import Transitions
from sparring.policy.replay_opponents import UNTAGGED, OpponentLedger
from sparring.policy.sac_model import SACModel
from sparring.policy.threads import torch_threads


class SACNetwork(torch.nn.Module):
    """The model (actor and critics) plus the observation normaliser, so all travel in one state dict."""

    def __init__(self, model: SACModel, normalizer: Optional[RunningNormalizer]) -> None:
        super().__init__()
        self.model = model
        self.normalizer = normalizer

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        return self.model.encode(obs if self.normalizer is None else self.normalizer(obs.float()))

    def export_outputs(self, obs: torch.Tensor, mask: Optional[torch.Tensor]):
        """What ``sparring export`` writes: (pre-tanh mean, log-std, value) or (probabilities, value); the value is
        the critics' minimum at the mean action, or the soft state value (meaningful from a learner's checkpoint;
        a snapshot carries the actor only)."""
        features = self.features(obs)
        if self.model.continuous:
            mean, log_std = self.model.gaussian(features)
            return mean, log_std, self.model.q_values(features, torch.tanh(mean)).min(0).values
        probs, log_probs = L.masked_policy(self.model.logits(features), mask)
        q = self.model.q_values(features).min(0).values
        return probs, L.soft_state_value(probs, log_probs, q, 0.0)


class Temperature(torch.nn.Module):
    """``log alpha`` as a module's parameter, so a device move swaps it in place like the networks'."""

    def __init__(self, alpha: float, tuned: bool) -> None:
        super().__init__()
        self.log_alpha = torch.nn.Parameter(torch.tensor(math.log(alpha)), requires_grad=tuned)


MIX_SAMPLE = 65_536  # slots read for the opponent mix of a larger buffer
CRITIC_PREFIX = 'model.critics.'  # state-dict keys that stay with the learner (not in get_params)


@POLICY_REGISTRY.register('sac')
class SACPolicy(Policy):
    def chunk_spec(self, spaces: ChunkSpaces) -> ChunkSpec:
        """A chunk adds ``next_obs`` (the observation after each step, a finished episode's final one), and a battle
        chunk ``opponent`` and ``opponent_version`` (whom each move was against), stored with each transition (see
        :mod:`sparring.policy.replay_opponents`)."""
        spec = super().chunk_spec(spaces).plus(next_obs_field(spaces))
        if spaces.battle:
            spec = spec.plus(ChunkField('opponent', np.int64), ChunkField('opponent_version', np.int64))
        return spec

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            model=dict(type='sac_mlp'),
            device='cpu',  # the learner's: 'cpu', 'cuda', 'cuda:N' or 'auto' (CUDA where torch has it)
            obs_norm=False,  # running mean/variance normalisation of observations (replay keeps them raw)
            collect=dict(
                n_steps=8,  # rollout length T per env per iteration
                device='cpu',  # where collectors, evaluators and snapshots act (same choices)
            ),
            learn=dict(
                lr=3e-4,  # Adam's, for actor, critics and temperature alike (SAC paper)
                adam_eps=1e-8,  # Adam's epsilon
                batch_size=256,  # transitions per gradient step (SAC paper)
                updates_per_chunk=None,  # gradient steps per learned chunk; None: one per transition pushed
                learning_starts=100,  # transitions in the buffer before the first gradient step (SB3's default)
                gamma=0.99,  # discount per own decision
                n_step=1,  # rewards summed before bootstrapping (1: the SAC paper's one-step target)
                tau=0.005,  # Polyak rate of the target critics per gradient step (SAC paper)
                init_alpha=1.0,  # the entropy temperature at the start (SB3's 'auto' starts at 1)
                auto_alpha=True,  # tune alpha towards the target entropy (SAC v2); False keeps init_alpha
                target_entropy=None,  # Box actions: None means -|A| (SAC v2)
                target_entropy_ratio=0.98,  # Discrete: this fraction of log(legal actions) (Christodoulou 2019)
                threads=None,  # torch threads during the update (None: the process's setting)
            ),
            # SAC paper: a buffer of a million transitions
            replay=dict(replay_default_config(1_000_000),
                        # league runs: forget transitions against opponents that left the league or are more
                        # than this many snapshots old (see forget_opponents); None keeps them all (measured on
                        # continuous Pong: 1 forgot a third of the buffer for no clear gain in win rates)
                        max_opponent_age=None),
        )

    config_constraints = {
        'device': check_device_spec,
        'collect.device': check_device_spec,
        'collect.n_steps': in_range(1, None),
        'learn.lr': in_range(0.0, None, open_lo=True),
        'learn.adam_eps': in_range(0.0, None, open_lo=True),
        'learn.batch_size': in_range(1, None),
        'learn.updates_per_chunk': in_range(0, None, allow_none=True),
        'learn.learning_starts': in_range(0, None),
        'learn.gamma': in_range(0.0, 1.0),
        'learn.n_step': in_range(1, None),
        'learn.tau': in_range(0.0, 1.0, open_lo=True),
        'learn.init_alpha': in_range(0.0, None, open_lo=True),
        'learn.target_entropy_ratio': in_range(0.0, 1.0),
        'learn.threads': in_range(1, None, allow_none=True),
        **REPLAY_CONSTRAINTS,
        'replay.max_opponent_age': in_range(0, None, allow_none=True),
    }

    @classmethod
    def validate_config(cls, section: dict) -> None:
        if section['model']['type'] != 'sac_mlp':
            raise ConfigError(f'config key "policy.model.type": SAC builds its actor and critics from \'sac_mlp\', '
                              f'got {section["model"]["type"]!r}')
        check_batch_fits_replay(section)

    def __init__(self, cfg: dict, observation_space: gym.Space, action_space: gym.Space, seed: int = 0) -> None:
        super().__init__(cfg, observation_space, action_space, seed)
        self.continuous = isinstance(action_space, gym.spaces.Box)
        if self.continuous:
            box = cast(gym.spaces.Box, action_space)
            if not (np.isfinite(box.low).all() and np.isfinite(box.high).all()):
                raise TypeError(f'SAC squashes actions into the action space\'s bounds; {action_space} is unbounded')
            self._action_shape = box.shape
            self._low = torch.as_tensor(box.low.reshape(-1), dtype=torch.float32)
            self._half_range = torch.as_tensor((box.high - box.low).reshape(-1) / 2.0, dtype=torch.float32)
        elif not isinstance(action_space, gym.spaces.Discrete):
            raise TypeError(f'SAC needs a Box or Discrete action space, got {action_space}')
        torch.manual_seed(seed)  # parameter initialisation is part of the run's determinism
        model = cast(SACModel, MODEL_REGISTRY.get(cfg['model']['type'])(cfg['model'], observation_space, action_space))
        self.net = SACNetwork(model, observation_normalizer(cfg['obs_norm'], observation_space))
        self.model = model
        self.target_critics = self._copy_critics()
        learn = cfg['learn']
        self.temperature = Temperature(learn['init_alpha'], bool(learn['auto_alpha']))
        if self.continuous:
            entropy = learn['target_entropy']
            self.target_entropy = float(-model.action_dim if entropy is None else entropy)
        self.generator = torch.Generator().manual_seed(seed)
        self.replay = make_replay_buffer(cfg['replay'], seed=seed)  # arrays allocated on the first push
        self.opponents = OpponentLedger()  # the player ids behind the buffer's ``opponent`` codes (battle chunks)
        self.beta_schedule = F.LinearSchedule(cfg['replay']['beta_start'], cfg['replay']['beta_end'])
        self.gradient_steps = 0
        self._hand_gradients = G.supports(model)
        self.agent_steps = 0  # decisions of this policy that reached ``learn``
        self._skipped = torch.zeros(())  # steps refused because a loss or gradient was not finite
        self.to_device(acting_device(cfg))  # the replay buffer stays in host memory; sampled batches move

    def _copy_critics(self) -> torch.nn.Module:
        return copy.deepcopy(self.model.critics).requires_grad_(False)

    def _trained_parameters(self) -> list:
        params = list(self.net.parameters())
        return params + [self.log_alpha] if self.log_alpha.requires_grad else params

    def _make_optimizer(self) -> torch.optim.Optimizer:
        learn = self.cfg['learn']
        params = self._trained_parameters()
        try:  # one kernel for every parameter's Adam step (CPU and CUDA in torch >= 2.4)
            return torch.optim.Adam(params, lr=learn['lr'], eps=learn['adam_eps'], fused=True)
        except (RuntimeError, TypeError):
            return torch.optim.Adam(params, lr=learn['lr'], eps=learn['adam_eps'], foreach=True)

    @property
    def skipped_updates(self) -> int:
        return int(self._skipped.item())

    @property
    def log_alpha(self) -> torch.nn.Parameter:
        return self.temperature.log_alpha

    @property
    def alpha(self) -> float:
        return float(self.log_alpha.detach().exp())

    # -- acting -------------------------------------------------------------------------------
    def _obs_tensor(self, obs: np.ndarray) -> torch.Tensor:
        tensor = self.placement.tensor(obs)
        return tensor.float() if tensor.dtype == torch.float64 else tensor

    def _mask_tensor(self, action_mask: Optional[np.ndarray]) -> Optional[torch.Tensor]:
        return None if action_mask is None else self.placement.tensor(action_mask, dtype=torch.bool)

    def to_env_action(self, squashed: torch.Tensor) -> torch.Tensor:
        """Actions in [-1, 1] as the action space's values."""
        return self._low + (squashed + 1.0) * self._half_range

    def from_env_action(self, action: torch.Tensor) -> torch.Tensor:
        """The action space's values back in [-1, 1] (clamped: a stored action may sit on a bound)."""
        return ((action.reshape(action.shape[0], -1) - self._low) / self._half_range - 1.0).clamp(-1.0, 1.0)

    @torch.inference_mode()
    def act(self, obs: np.ndarray, state: Any = None, deterministic: bool = False,
            action_mask: Optional[np.ndarray] = None) -> ActOutput:
        features = self.net.features(self._obs_tensor(obs))
        if self.continuous:
            mean, log_std = self.model.gaussian(features)
            u = mean if deterministic else D.gaussian_sample(mean, log_std, self.generator)
            log_prob = L.squashed_log_prob(mean, log_std, u)
            action = self.to_env_action(torch.tanh(u)).reshape(u.shape[0], *self._action_shape)
        else:
            log_probs = D.categorical_log_probs(self.model.logits(features), self._mask_tensor(action_mask))
            action = log_probs.argmax(-1) if deterministic else D.categorical_sample(log_probs, self.generator)
            log_prob = D.categorical_log_prob(log_probs, action)
        host = self.placement.numpy
        # Acting copies hold the actor only (the critics stay with the learner): no value to give.
        return ActOutput(host(action), host(log_prob), np.zeros(len(log_prob), dtype=np.float32), None)

    @torch.inference_mode()
    def action_probabilities(self, obs: np.ndarray, action_mask: Optional[np.ndarray] = None,
                             state: Any = None) -> np.ndarray:
        if self.continuous:
            raise TypeError('action_probabilities: the policy has a continuous (Box) action space')
        logits = self.model.logits(self.net.features(self._obs_tensor(obs)))
        return self.placement.numpy(D.categorical_log_probs(logits, self._mask_tensor(action_mask)).exp())

    def value(self, obs: np.ndarray, state: Any = None) -> np.ndarray:
        """Zeros: SAC bootstraps from its own critics inside ``learn``, and acting copies have none."""
        return np.zeros(len(obs), dtype=np.float32)

    # -- learning -----------------------------------------------------------------------------
    def transitions(self, chunk: Dict[str, np.ndarray]) -> Transitions[np.ndarray]:
        learn = self.cfg['learn']
        data = chunk_transitions(chunk, learn['gamma'], learn['n_step'], 'SAC')
        data = data.replace(action=data.action.astype(np.float32 if self.continuous else np.int64))
        if 'train_mask' in chunk:  # a battle chunk: whom each move was against, when the chunk says so
            untagged = np.full(len(data.ret), UNTAGGED, np.int64)
            data = data.replace(**{key: untagged if tags is None else tags.astype(np.int64)
                                   for key, tags in (('opponent', data.opponent),
                                                     ('opponent_version', data.opponent_version))})
        return data

    def opponent_mix(self) -> Dict[str, float]:
        """The share of the buffer's transitions per opponent id (empty outside leagues); a large buffer's is
        read from every k-th slot (at most ``MIX_SAMPLE`` of them), so a report per chunk stays cheap."""
        if self.replay.storage is None or 'opponent' not in self.replay.storage:
            return {}
        size = len(self.replay)
        return self.opponents.mix(self.replay.storage['opponent'][:size:max(1, size // MIX_SAMPLE)])

    def remember_opponents(self, player_ids) -> None:
        """Names for the opponent codes of reports (a learner passes the opponents of a chunk's finished games)."""
        self.opponents.remember(player_ids)

    def forget_opponents(self, roster: Mapping[str, int]) -> int:
        """With ``replay.max_opponent_age`` set, drop the transitions against opponents not in ``roster`` (player
        id -> age in snapshots, see :mod:`sparring.policy.replay_opponents`) or older than that; returns how many."""
        max_age = self.cfg['replay']['max_opponent_age']
        if max_age is None or self.replay.storage is None or 'opponent' not in self.replay.storage:
            return 0
        codes = self.replay.storage['opponent'][:len(self.replay)]
        return self.replay.drop(self.opponents.stale(codes, roster, max_age))

    def learn(self, chunk: Dict[str, np.ndarray], progress: float = 0.0) -> Dict[str, float]:
        with torch_threads(self.cfg['learn']['threads']):
            return self._learn(chunk, progress)

    def _learn(self, chunk: Dict[str, np.ndarray], progress: float) -> Dict[str, float]:
        learn = self.cfg['learn']
        data = self.transitions(chunk)
        pushed = len(data.ret)
        if pushed:
            self.replay.push(data.columns())
            if self.net.normalizer is not None:
                self.net.normalizer.update(data.obs)
        decision = chunk.get('train_mask')
        self.agent_steps += int(np.size(chunk['reward']) if decision is None else np.count_nonzero(decision))
        ready = len(self.replay) >= max(learn['learning_starts'], 1)
        updates = (pushed if learn['updates_per_chunk'] is None else learn['updates_per_chunk']) if ready else 0
        beta = self.beta_schedule(progress)
        rows = self._updates(updates, beta) if updates else []
        self._version += 1
        means = torch.stack(rows).mean(0).tolist() if rows else [float('nan')] * len(L.STEP_STATS)
        stats = dict(zip(L.STEP_STATS, means))
        stats.update(alpha=self.alpha, beta=beta, replay_size=len(self.replay), gradient_steps=updates,
                     samples=pushed, samples_consumed=updates * learn['batch_size'],
                     skipped_updates=self.skipped_updates)  # so far
        return stats

    def _updates(self, updates: int, beta: float) -> list:
        """``updates`` gradient steps; their figures as tensors, read by the caller at once."""
        batch = self.cfg['learn']['batch_size']
        if self.replay.prioritized:  # priorities change after each step: draw each step's batch after the last
            rows = []
            for _ in range(updates):
                sample = self.replay.sample(batch, beta)
                stats, td_abs = self._step(self._batch(Transitions.of(sample.data)),
                                           self.placement.tensor(sample.weights))
                self.replay.update_priorities(sample.indices, self.placement.numpy(td_abs))
                rows.append(stats)
            return rows
        # Uniform: every step's batch drawn in one go and moved to the device once; steps take slices.
        drawn = self._batch(Transitions.of(self.replay.sample(updates * batch).data))
        return [self._step(drawn.map(operator.itemgetter(slice(i * batch, (i + 1) * batch))), None)[0]
                for i in range(updates)]

    def _batch(self, data: Transitions[np.ndarray]) -> Transitions[torch.Tensor]:
        batch = data.map(self.placement.tensor).replace(obs=self._obs_tensor(data.obs),
                                                         next_obs=self._obs_tensor(data.next_obs))
        if self.continuous:
            batch = batch.replace(action=self.from_env_action(batch.action))
        return batch

    def _step(self, batch: Transitions[torch.Tensor], weights: Optional[torch.Tensor]):
        learn = self.cfg['learn']
        features, next_features = self.net.features(batch.obs), self.net.features(batch.next_obs)
        params = self.optimizer.param_groups[0]['params']
        for p in params:
            p.grad = None
        if self.continuous:
            shape = (len(batch.ret), self.model.action_dim)
            # Drawn from the policy's CPU generator: the same numbers on any device.
            noise, next_noise = (torch.randn(shape, generator=self.generator) for _ in range(2))
            # The same losses and gradients by hand where sac_grad covers the networks (a third of the step's time).
            terms_of = G.continuous_step if self._hand_gradients else L.continuous_terms
            terms = terms_of(self.model, features, next_features, batch.action, batch.ret, batch.discount,
                             weights, self.log_alpha, self.target_entropy, self.target_critics,
                             noise.to(features.device), next_noise.to(features.device))
        else:
            mask = batch.mask
            target_entropy = L.discrete_target_entropy(mask, self.model.action_dim, learn['target_entropy_ratio'])
            terms = L.discrete_terms(self.model, features, next_features, batch.action, mask,
                                     batch.next_mask, batch.ret, batch.discount, weights,
                                     self.log_alpha, target_entropy.to(features.device), self.target_critics)
        if terms.loss.requires_grad:  # autograd's terms (the hand-written ones have their gradients already)
            terms.loss.backward()
        # A loss or gradient that is not finite skips the step.
        found_inf = (~torch.isfinite(terms.loss)).float()
        grads = [p.grad for p in params if p.grad is not None]
        torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, self._skipped.new_ones(()))
        if found_inf.device.type == 'cpu':
            # On the host the flag reads for free, and a step without it takes fused Adam's plain path (with
            # it, torch's CPU kernel reads it back and corrects the step count once per parameter tensor).
            self.optimizer.found_inf = None  # type: ignore[attr-defined]
            if not found_inf.item():
                self.optimizer.step()
        else:  # on an accelerator the optimiser reads the flag itself (GradScaler's hook): no host round trip
            self.optimizer.found_inf = found_inf  # type: ignore[attr-defined]
            self.optimizer.step()
        self._skipped += found_inf  # on the device: read once per chunk
        L.polyak_update(self.target_critics.parameters(), self.model.critics.parameters(), learn['tau'])
        self.gradient_steps += 1
        return terms.stats, terms.td_abs

    def trained_module(self) -> torch.nn.Module:
        return self.net

    def reset_optimizer(self) -> None:
        self.optimizer.state.clear()

    # -- parameters (out on the CPU; loading copies them onto the device) --------------------------
    def _move_to(self, placement: Placement) -> None:
        placement.module(self.net)
        placement.module(self.target_critics)
        placement.module(self.temperature)
        self._skipped = self._skipped.to(placement.device)
        if self.continuous:
            self._low, self._half_range = self._low.to(placement.device), self._half_range.to(placement.device)
        self._place_optimizer(placement)

    def get_params(self) -> Dict[str, torch.Tensor]:
        """What acting needs: the actor and the observation normaliser."""
        return self.placement.host_copy({k: v for k, v in self.net.state_dict().items()
                                         if not k.startswith(CRITIC_PREFIX)})

    def set_params(self, params: Dict[str, torch.Tensor], version: int) -> None:
        """New acting parameters (a league reset, a snapshot): the critics and the buffer stay as they are, unless
        ``params`` carry critics too (a checkpoint's ``params``, loaded by eval and export)."""
        missing, unexpected = self.net.load_state_dict(params, strict=False)
        wrong = [k for k in missing if not k.startswith(CRITIC_PREFIX)] + list(unexpected)
        if wrong:
            raise ValueError(f'SAC.set_params: parameters do not fit this actor (missing or unexpected: {wrong[:4]})')
        self._version = int(version)

    def state_dict(self) -> Dict[str, Any]:
        replay = self.replay.state_dict() if self.cfg['replay']['in_checkpoint'] else None
        host = self.placement.host_copy
        return dict(params=host(self.net.state_dict()), target_critics=host(self.target_critics.state_dict()),
                    log_alpha=host(self.log_alpha.detach()),
                    optimizer=self.placement.to_host(self.optimizer.state_dict()), version=self._version,
                    generator=self.generator.get_state(), gradient_steps=self.gradient_steps,
                    agent_steps=self.agent_steps, skipped_updates=self.skipped_updates, replay=replay,
                    opponents=self.opponents.state_dict())

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.net.load_state_dict(state['params'])
        self.target_critics.load_state_dict(state['target_critics'])
        with torch.no_grad():
            self.log_alpha.copy_(state['log_alpha'])
        self.optimizer.load_state_dict(state['optimizer'])
        self._version = int(state['version'])
        self.generator.set_state(state['generator'])
        self.gradient_steps = int(state['gradient_steps'])
        self.agent_steps = int(state['agent_steps'])
        self._skipped = torch.tensor(float(state['skipped_updates']), device=self.placement.device)
        if state['replay'] is not None:
            self.replay.load_state_dict(state['replay'])
        self.opponents.load_state_dict(state['opponents'])
