"""Deep Q-learning behind the ``Policy`` interface: the same collectors, learner and pipelines as PPO.

Target network (hard copies or Polyak averaging), double DQN, a dueling head (a model option,
``q_mlp``), n-step returns, an epsilon-greedy schedule (by run progress or by the policy's own
steps), action masks (illegal actions are never chosen, nor maximised over in the target) and a
uniform or prioritised replay buffer.

``learn(chunk, progress)`` turns the chunk into n-step transitions per column between the
policy's own decisions (``train_mask`` rows in battle chunks; every row in single-agent ones),
pushes them into the replay buffer and takes ``learn.updates_per_chunk`` gradient steps. A
truncated episode is bootstrapped from its final observation, which the collectors put into
``next_obs`` because the policy's chunk spec names it. Epsilon is a buffer of the network, so
it travels with ``get_params`` to whoever acts (collectors, league snapshots). The replay buffer
is part of ``state_dict`` (so a resumed run keeps its memory) unless ``replay.in_checkpoint`` is
off.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, Optional

import gymnasium as gym
import numpy as np
import torch

from sparring.config.schema import ConfigError, in_range, one_of
from sparring.config.registry import MODEL_REGISTRY, POLICY_REGISTRY
from sparring.policy import distributions as D
from sparring.policy import functional as F
from sparring.policy.base import ActOutput, Policy
from sparring.policy.chunk_spec import ChunkSpaces, ChunkSpec, next_obs_field
from sparring.policy.device import Placement, acting_device, check_device_spec
from sparring.policy.finite_step import finite_update
from sparring.policy.replay_buffer import (REPLAY_CONSTRAINTS, check_batch_fits_replay, chunk_transitions,
                                           make_replay_buffer, replay_default_config)
from sparring.policy.transitions import Transitions


class _QNetwork(torch.nn.Module):
    """The Q model plus the exploration rate, so both travel in one state dict."""

    epsilon: torch.Tensor  # the buffer registered below

    def __init__(self, model: torch.nn.Module, epsilon: float) -> None:
        super().__init__()
        self.model = model
        self.register_buffer('epsilon', torch.tensor(float(epsilon)))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.model(obs)


@POLICY_REGISTRY.register('dqn')
class DQNPolicy(Policy):
    def chunk_spec(self, spaces: ChunkSpaces) -> ChunkSpec:
        """A chunk adds ``next_obs`` (the observation after each step, a finished episode's final one)."""
        return super().chunk_spec(spaces).plus(next_obs_field(spaces))

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            model=dict(type='q_mlp'),
            device='cpu',  # the learner's: 'cpu', 'cuda', 'cuda:N' or 'auto' (CUDA where torch has it)
            collect=dict(
                n_steps=8,  # rollout length T per env per iteration
                device='cpu',  # where collectors, evaluators and snapshots act (same choices)
                eps_start=1.0,  # epsilon-greedy's exploration rate at the start
                eps_end=0.05,  # epsilon-greedy's exploration rate after its decay
                eps_decay_fraction=0.1,  # epsilon reaches eps_end after this fraction of the run ...
                eps_decay_steps=None,  # ... or, when set, after this many of the policy's own steps
            ),
            learn=dict(
                lr=1e-3,  # Adam's learning rate
                anneal_lr=False,  # linearly to 0 over the run
                adam_eps=1e-8,  # Adam's epsilon
                batch_size=64,  # transitions per gradient step, drawn from the replay buffer
                updates_per_chunk=8,  # gradient steps per learned chunk
                learning_starts=1000,  # transitions in the buffer before the first gradient step
                gamma=0.99,  # the discount of future rewards
                n_step=3,  # rewards summed before bootstrapping (n-step returns)
                double=True,  # the online network picks the bootstrap action, the target values it
                target_update_every=250,  # gradient steps between target-network updates
                target_tau=1.0,  # 1: hard copy; < 1: Polyak averaging target += tau * (online - target)
                loss='huber',  # or 'mse'
                max_grad_norm=10.0,  # clip the global gradient norm to this
            ),
            replay=replay_default_config(100_000),
        )

    config_constraints = {
        'device': check_device_spec,
        'collect.device': check_device_spec,
        'collect.n_steps': in_range(1, None),
        'collect.eps_start': in_range(0.0, 1.0),
        'collect.eps_end': in_range(0.0, 1.0),
        'collect.eps_decay_fraction': in_range(0.0, 1.0),
        'collect.eps_decay_steps': in_range(1, None, allow_none=True),
        'learn.lr': in_range(0.0, None, open_lo=True),
        'learn.adam_eps': in_range(0.0, None, open_lo=True),
        'learn.batch_size': in_range(1, None),
        'learn.updates_per_chunk': in_range(0, None),
        'learn.learning_starts': in_range(0, None),
        'learn.gamma': in_range(0.0, 1.0),
        'learn.n_step': in_range(1, None),
        'learn.target_update_every': in_range(1, None),
        'learn.target_tau': in_range(0.0, 1.0, open_lo=True),
        'learn.loss': one_of('huber', 'mse'),
        'learn.max_grad_norm': in_range(0.0, None, open_lo=True, allow_none=True),
        **REPLAY_CONSTRAINTS,
    }

    @classmethod
    def validate_config(cls, section: dict) -> None:
        model_type = section['model']['type']
        if not getattr(MODEL_REGISTRY.get(model_type), 'outputs_q_values', False):
            q_models = [n for n in MODEL_REGISTRY.names() if getattr(MODEL_REGISTRY.get(n), 'outputs_q_values', False)]
            raise ConfigError(f'config key "policy.model.type": {model_type!r} does not output Q-values; DQN needs '
                              f'one of: {", ".join(q_models)}')
        check_batch_fits_replay(section)

    def __init__(self, cfg: dict, observation_space: gym.Space, action_space: gym.Space, seed: int = 0) -> None:
        super().__init__(cfg, observation_space, action_space, seed)
        if not isinstance(action_space, gym.spaces.Discrete):
            raise TypeError(f'DQN needs a Discrete action space, got {action_space}')
        torch.manual_seed(seed)  # parameter initialisation is part of the run's determinism
        model = MODEL_REGISTRY.get(cfg['model']['type'])(cfg['model'], observation_space, action_space)
        self.net = _QNetwork(model, cfg['collect']['eps_start'])
        self.target_net = copy.deepcopy(self.net).requires_grad_(False)
        self.num_actions = int(action_space.n)
        learn = cfg['learn']
        self.lr_schedule = F.LinearSchedule(learn['lr'], 0.0 if learn['anneal_lr'] else learn['lr'])
        self.beta_schedule = F.LinearSchedule(cfg['replay']['beta_start'], cfg['replay']['beta_end'])
        self.generator = torch.Generator().manual_seed(seed)
        # The buffer allocates its arrays on the first push: a frozen snapshot never does.
        self.replay = make_replay_buffer(cfg['replay'], seed=seed)
        self.gradient_steps = 0
        self.skipped_updates = 0  # steps refused because the loss or a gradient was not finite
        self.agent_steps = 0  # decisions of this policy that reached ``learn``
        self.to_device(acting_device(cfg))  # the replay buffer stays in host memory; sampled batches move

    # -- acting -------------------------------------------------------------------------------
    @property
    def epsilon(self) -> float:
        return float(self.net.epsilon)

    def _obs_tensor(self, obs: np.ndarray) -> torch.Tensor:
        tensor = self.placement.tensor(obs)
        return tensor.float() if tensor.dtype == torch.float64 else tensor

    def _mask_tensor(self, action_mask: Optional[np.ndarray]) -> Optional[torch.Tensor]:
        return None if action_mask is None else self.placement.tensor(action_mask, dtype=torch.bool)

    @torch.inference_mode()
    def act(self, obs: np.ndarray, state: Any = None, deterministic: bool = False,
            action_mask: Optional[np.ndarray] = None) -> ActOutput:
        q = self.net(self._obs_tensor(obs))
        mask = self._mask_tensor(action_mask)
        greedy = F.masked_argmax(q, mask)
        epsilon = 0.0 if deterministic else self.epsilon
        probs = F.epsilon_greedy_probs(greedy, self.num_actions, mask, epsilon)
        action = greedy if epsilon == 0.0 else D.categorical_sample(probs.log(), self.generator)
        log_prob = probs.gather(-1, action.unsqueeze(-1)).squeeze(-1).log()
        value = q.gather(-1, action.unsqueeze(-1)).squeeze(-1)
        host = self.placement.numpy
        return ActOutput(host(action), host(log_prob), host(value), None)

    @torch.inference_mode()
    def action_probabilities(self, obs: np.ndarray, action_mask: Optional[np.ndarray] = None,
                             state: Any = None) -> np.ndarray:
        """The greedy policy's probabilities (the policy evaluated, without exploration)."""
        mask = self._mask_tensor(action_mask)
        greedy = F.masked_argmax(self.net(self._obs_tensor(obs)), mask)
        return self.placement.numpy(F.epsilon_greedy_probs(greedy, self.num_actions, mask, 0.0))

    @torch.inference_mode()
    def value(self, obs: np.ndarray, state: Any = None) -> np.ndarray:
        return self.placement.numpy(self.net(self._obs_tensor(obs)).max(-1).values)

    # -- learning -----------------------------------------------------------------------------
    def transitions(self, chunk: Dict[str, np.ndarray]) -> Transitions[np.ndarray]:
        """The chunk's n-step transitions (see ``replay_buffer.chunk_transitions``) with only the fields DQN learns
        from (``next_mask`` only for masked actions; not the chosen move's mask nor the opponent tags): they are the
        buffer's layout in checkpoints."""
        learn = self.cfg['learn']
        data = chunk_transitions(chunk, learn['gamma'], learn['n_step'], 'DQN')
        return data.replace(action=data.action.astype(np.int64),  # gather's index type
                            mask=None, opponent=None, opponent_version=None)

    def _set_epsilon(self, progress: float) -> None:
        collect = self.cfg['collect']
        if collect['eps_decay_steps'] is not None:
            fraction = self.agent_steps / collect['eps_decay_steps']
        elif collect['eps_decay_fraction'] > 0:
            fraction = progress / collect['eps_decay_fraction']
        else:
            fraction = 1.0
        self.net.epsilon.fill_(F.LinearSchedule(collect['eps_start'], collect['eps_end'])(fraction))

    def compute_loss(self, data: Transitions[np.ndarray], weights: Optional[np.ndarray] = None):
        """(weighted TD loss, TD errors, Q of the taken actions) on a batch of transitions."""
        learn = self.cfg['learn']
        batch = data.map(self.placement.tensor).replace(obs=self._obs_tensor(data.obs),
                                                         next_obs=self._obs_tensor(data.next_obs))
        weight_tensor = None if weights is None else self.placement.tensor(weights)
        q = self.net(batch.obs)
        q_taken = q.gather(-1, batch.action.unsqueeze(-1)).squeeze(-1)
        with torch.no_grad():
            next_q_target = self.target_net(batch.next_obs)
            next_q_online = self.net(batch.next_obs) if learn['double'] else None
            boot = F.q_bootstrap(next_q_target, next_q_online, batch.next_mask)
            target = batch.ret + batch.discount * boot
        loss, td_error = F.td_loss(q_taken, target, weight_tensor, learn['loss'])
        return loss, td_error, q_taken.detach()

    def _update_target(self) -> None:
        tau = self.cfg['learn']['target_tau']
        with torch.no_grad():
            if tau >= 1.0:
                self.target_net.load_state_dict(self.net.state_dict())
                return
            for target, online in zip(self.target_net.parameters(), self.net.parameters()):
                target.lerp_(online, tau)

    def learn(self, chunk: Dict[str, np.ndarray], progress: float = 0.0) -> Dict[str, float]:
        learn = self.cfg['learn']
        data = self.transitions(chunk)
        pushed = len(data.ret)
        if pushed:
            self.replay.push(data.columns())
        decision = chunk.get('train_mask')
        self.agent_steps += int(np.size(chunk['reward']) if decision is None else np.count_nonzero(decision))
        lr = self.lr_schedule(progress)
        for group in self.optimizer.param_groups:
            group['lr'] = lr
        beta = self.beta_schedule(progress)
        ready = len(self.replay) >= max(learn['learning_starts'], 1)
        updates = learn['updates_per_chunk'] if ready else 0
        sums = dict(value_loss=0.0, q_mean=0.0, td_abs=0.0, is_weight=0.0)
        for _ in range(updates):
            sample = self.replay.sample(learn['batch_size'], beta)
            weights = sample.weights if self.replay.prioritized else None
            loss, td_error, q_taken = self.compute_loss(Transitions.of(sample.data), weights)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if not finite_update(loss, self.net.parameters()):  # skipped and counted, never applied
                self.optimizer.zero_grad(set_to_none=True)
                self.skipped_updates += 1
                continue
            if learn['max_grad_norm'] is not None:
                torch.nn.utils.clip_grad_norm_(self.net.parameters(), learn['max_grad_norm'])
            self.optimizer.step()
            self.replay.update_priorities(sample.indices, self.placement.numpy(td_error))
            self.gradient_steps += 1
            if self.gradient_steps % learn['target_update_every'] == 0:
                self._update_target()
            for key, val in (('value_loss', loss.item()), ('q_mean', q_taken.mean().item()),
                             ('td_abs', td_error.abs().mean().item()), ('is_weight', float(sample.weights.mean()))):
                sums[key] += val
        # After the updates: the next chunk is collected with the epsilon of the progress made.
        self._set_epsilon(progress)
        self._version += 1
        stats = {k: (v / updates if updates else float('nan')) for k, v in sums.items()}
        stats.update(lr=lr, epsilon=self.epsilon, beta=beta, replay_size=len(self.replay), gradient_steps=updates,
                     samples=pushed, samples_consumed=updates * learn['batch_size'],
                     skipped_updates=self.skipped_updates)  # so far
        return stats

    def trained_module(self) -> torch.nn.Module:
        return self.net

    def reset_optimizer(self) -> None:
        self.optimizer.state.clear()

    # -- parameters (out on the CPU; loading copies them onto the device) --------------------------
    def _move_to(self, placement: Placement) -> None:
        placement.module(self.net)
        placement.module(self.target_net)
        self._place_optimizer(placement)

    def _make_optimizer(self) -> torch.optim.Optimizer:
        learn = self.cfg['learn']
        return torch.optim.Adam(self.net.parameters(), lr=learn['lr'], eps=learn['adam_eps'])

    def get_params(self) -> Dict[str, torch.Tensor]:
        return self.placement.host_copy(dict(self.net.state_dict()))

    def set_params(self, params: Dict[str, torch.Tensor], version: int) -> None:
        """New acting parameters; the target network restarts from them too (e.g. a league reset)."""
        self.net.load_state_dict(params)
        self.target_net.load_state_dict(params)
        self._version = int(version)

    def state_dict(self) -> Dict[str, Any]:
        replay = self.replay.state_dict() if self.cfg['replay']['in_checkpoint'] else None
        return dict(params=self.get_params(), target_params=self.placement.host_copy(self.target_net.state_dict()),
                    optimizer=self.placement.to_host(self.optimizer.state_dict()), version=self._version,
                    generator=self.generator.get_state(), gradient_steps=self.gradient_steps,
                    agent_steps=self.agent_steps, replay=replay)

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.set_params(state['params'], state['version'])
        self.target_net.load_state_dict(state['target_params'])
        self.optimizer.load_state_dict(state['optimizer'])
        self.generator.set_state(state['generator'])
        self.gradient_steps = int(state['gradient_steps'])
        self.agent_steps = int(state['agent_steps'])
        if state['replay'] is not None:
            self.replay.load_state_dict(state['replay'])
