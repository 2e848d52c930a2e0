"""Proximal Policy Optimisation, feed-forward or recurrent, with its objective chosen once from the config.

``learn.objective`` names the policy loss, an object from the registry in :mod:`sparring.policy.objectives`:
``'clip'`` (default: the clipped surrogate, optional ``target_kl`` early stop), ``'kl_penalty'`` (the
MuJoCo recipe: adaptive KL penalty, early stop at 4 * kl_target, value replay), ``'mmd'`` (magnetic
mirror descent for two-player zero-sum games) and ``'search'`` (expert iteration: towards the visits of
the search the player collected its moves by). Each file there says what its objective does; this
class calls the chosen one at fixed points of the update and never asks which one it is.
``policy.average`` adds an NFSP-style average network fitted beside any objective
(:mod:`sparring.policy.average_policy`).

Shared: GAE(lambda) with truncated episodes bootstrapped, per-minibatch advantage
normalisation, minibatch epochs, clipped value loss, entropy bonus, gradient clipping (global norm
and/or OpenAI Five's per-element clip, ``learn.grad_clip='five'``), linear annealing of learning rate
and clip range, optional running observation normalisation, the value fitted on the previous chunk
too (``learn.value_replay``). Categorical heads for Discrete actions (with action masks), a diagonal
Gaussian with state-independent log-std for Box actions. A recurrent model (``lstm``) makes the policy
recurrent: it acts from a state the caller carries, and learns on whole truncated-BPTT windows
recomputed from the states the collector recorded.
"""
from __future__ import annotations

from typing import Any, Dict, NamedTuple, Optional, Tuple, cast

import gymnasium as gym
import numpy as np
import torch

from sparring.config.registry import MODEL_REGISTRY, POLICY_REGISTRY
from sparring.policy import distributions as D
from sparring.policy import functional as F
from sparring.policy.average_policy import make_average
from sparring.policy.augment import check_mirror_fits, with_mirror
from sparring.policy.base import ActOutput, Policy
from sparring.policy.chunk_spec import ChunkSpaces, ChunkSpec, state_fields
from sparring.policy.device import Placement, acting_device
from sparring.policy.grad_clip import SecondMomentClipper
from sparring.policy.gradient_step import GradientStep, read_rows
from sparring.policy import graphed_steps
from sparring.policy.normalizer import RunningNormalizer, observation_normalizer
from sparring.policy.objectives import make_objective
from sparring.policy.objectives.base import Minibatch, PolicyParts
from sparring.policy.objectives.stats import STEP_STATS, UpdateStats
from sparring.policy.ppo_config import PPO_CONSTRAINTS, ppo_default_config, validate_ppo_config
from sparring.policy.threads import torch_threads
from sparring.policy.train_batch import TrainBatch, step_batch, window_batch

ADAM_BETAS = (0.9, 0.999)  # torch's defaults, named: the gradient clipper reads the second one


def step_means(rows: list, updates: int) -> list:
    """Each ``STEP_STATS`` figure of an update's minibatch rows, summed in step order and divided by
    ``updates`` (a refused step's row counts as zeros)."""
    sums = [0.0] * len(STEP_STATS)
    for row in read_rows(rows, len(STEP_STATS)):
        for i, val in enumerate(row):
            sums[i] += val
    return [total / updates for total in sums]


class NetworkOutput(NamedTuple):
    """What PPO's network says for a batch of observations, as host arrays: all acting needs before the draw."""
    head: np.ndarray  # [N, A] logits, or [N, *action] a Gaussian's mean
    value: np.ndarray  # [N]
    state: Any = None  # the recurrent state after this step (a tuple of [N, ...] arrays), None if feed-forward
    log_std: Optional[np.ndarray] = None  # a Gaussian head's state-independent log-std, [*action]


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
    #: the value loss is a term of the policy's loss (a subclass that fits the value apart sets False)
    value_in_policy_loss = True

    @classmethod
    def default_config(cls) -> dict:
        return ppo_default_config()

    config_constraints = PPO_CONSTRAINTS

    @classmethod
    def validate_config(cls, section: dict) -> None:
        validate_ppo_config(section)

    def __init__(self, cfg: dict, observation_space: gym.Space, action_space: gym.Space, seed: int = 0) -> None:
        super().__init__(cfg, observation_space, action_space, seed)
        torch.manual_seed(seed)  # parameter initialisation is part of the run's determinism
        model = MODEL_REGISTRY.get(cfg['model']['type'])(cfg['model'], observation_space, action_space)
        self.net = _Network(model, observation_normalizer(cfg['obs_norm'], observation_space))
        self.model = model
        self.recurrent = bool(getattr(model, 'recurrent', False))
        if self.recurrent:
            self.bptt_len = int(model.bptt_len)
        self.continuous = isinstance(action_space, gym.spaces.Box)
        learn = cfg['learn']
        self.mirror = learn['mirror']
        n_actions = None if self.continuous else int(cast(gym.spaces.Discrete, action_space).n)
        check_mirror_fits(self.mirror, observation_space.shape, n_actions, self.recurrent)
        self.lr_schedule = F.LinearSchedule(learn['lr'], 0.0 if learn['anneal_lr'] else learn['lr'])
        self.clip_schedule = F.LinearSchedule(learn['clip_range'],
                                              0.0 if learn['anneal_clip_range'] else learn['clip_range'])
        self.grad_clipper = None
        self.skipped_updates = 0  # steps refused because the loss or a gradient was not finite
        if learn['grad_clip'] == 'five':
            self.grad_clipper = SecondMomentClipper(self.net.parameters(), learn['grad_clip_sigmas'],
                                                    beta2=ADAM_BETAS[1])
        self.objective = make_objective(PolicyParts(learn=learn, net=self.net, model=model, forward=self._forward,
                                                     continuous=self.continuous, recurrent=self.recurrent))
        replay = learn['value_replay']
        self.replays_value = self.objective.replays_value if replay is None else bool(replay)
        self.value_replay_batch: Optional[TrainBatch] = None  # the previous chunk, when the value replays it
        self.generator = torch.Generator().manual_seed(seed)
        self.average = make_average(cfg['average'], lambda: MODEL_REGISTRY.get(cfg['model']['type'])(
            cfg['model'], observation_space, action_space), self.generator, self.continuous, self.recurrent)
        if self.continuous:
            self._action_shape = cast(gym.spaces.Box, action_space).shape  # continuous: a Box
        self.to_device(acting_device(cfg))

    @property
    def learns_from_search(self) -> bool:
        """Whether chunks must carry a search's visits: the collector then searches (worker/run_kind.py asks)."""
        return self.objective.learns_from_search

    def chunk_spec(self, spaces: ChunkSpaces) -> ChunkSpec:
        """Every policy's fields, the objective's own (the search's visits and labels), and a recurrent model's
        state at the start of each BPTT window."""
        spec = super().chunk_spec(spaces).plus(*self.objective.chunk_fields(spaces))
        if not self.recurrent:
            return spec
        return spec.plus(*state_fields(self.initial_state(1)), window_len=self.bptt_len)

    # -- acting -------------------------------------------------------------------------------
    def initial_state(self, batch_size: int) -> Any:
        return self.model.initial_state(batch_size) if self.recurrent else None

    def _obs_tensor(self, obs: np.ndarray) -> torch.Tensor:
        tensor = self.placement.tensor(obs)
        return tensor.float() if tensor.dtype == torch.float64 else tensor

    def _step(self, obs: np.ndarray, state: Any):
        """(head, value, next state or None) for one step of a batch of observations."""
        prepared = self.net.prepare(self._obs_tensor(obs))
        if not self.recurrent:
            head, value = self.model(prepared)
            return head, value, None
        if state is None:
            raise ValueError('PPO with a recurrent model: pass state=policy.initial_state(batch) on the first '
                             'step and the returned ActOutput.state after that')
        parts = tuple(self.placement.tensor(part) for part in state)
        if any(part.shape[0] != prepared.shape[0] for part in parts):
            raise ValueError(f'PPO: recurrent state rows {[tuple(p.shape) for p in parts]} do not match the '
                             f'{prepared.shape[0]} observations')
        return self.model.step(prepared, parts)

    @torch.inference_mode()
    def network_output(self, obs: np.ndarray, state: Any = None) -> NetworkOutput:
        """The forward half of :meth:`act` for a batch of observations (and recurrent ``state``), on the host:
        what :meth:`draw` needs to act, computed where the network is (a forward-pass worker's batch)."""
        head, value, next_state = self._step(obs, state)
        host = self.placement.numpy
        state = None if next_state is None else tuple(host(part) for part in next_state)
        return NetworkOutput(host(head), host(value), state, host(self.model.log_std) if self.continuous else None)

    @torch.inference_mode()
    def act(self, obs: np.ndarray, state: Any = None, deterministic: bool = False,
            action_mask: Optional[np.ndarray] = None) -> ActOutput:
        head, value, next_state = self._step(obs, state)
        action, log_prob = self.draw(head, self.model.log_std if self.continuous else None, deterministic,
                                     action_mask)
        host = self.placement.numpy
        next_state = None if next_state is None else tuple(host(part) for part in next_state)
        return ActOutput(host(action), host(log_prob), host(value), next_state)

    @torch.inference_mode()
    def greedy(self, obs: np.ndarray, state: Any = None,
               action_mask: Optional[np.ndarray] = None) -> Tuple[np.ndarray, Any]:
        """:meth:`act`'s deterministic actions from the policy's half of the network alone (no value, no
        log-probability): what an evaluation needs, at about a third of ``act``'s cost on a small MLP."""
        if self.recurrent:
            return super().greedy(obs, state, action_mask)
        prepared = self.net.prepare(self._obs_tensor(obs))
        # The policy's half of the network: the model's own where it has one, else the first of its two answers.
        policy_output = getattr(self.model, 'policy_output', None)
        head = policy_output(prepared) if policy_output is not None else self.model(prepared)[0]
        action, _ = self.draw(head, self.model.log_std if self.continuous else None, True, action_mask)
        return self.placement.numpy(action), None

    def draw(self, head: torch.Tensor, log_std: Optional[torch.Tensor], deterministic: bool = False,
             action_mask: Optional[np.ndarray] = None) -> Tuple[torch.Tensor, torch.Tensor]:
        """``(action, log_prob)`` drawn with the policy's generator from its network's output ``head`` (and a
        Gaussian's ``log_std``): the sampling half of :meth:`act`, which a rollout worker whose forward pass ran
        on a forward-pass worker does with the same generator."""
        if self.continuous:
            assert log_std is not None, 'a Gaussian head is drawn with its log_std'
            action = head if deterministic else D.gaussian_sample(head, log_std, self.generator)
            log_prob = D.gaussian_log_prob(head, log_std, action)
            return action.reshape(action.shape[0], *self._action_shape), log_prob
        mask = None if action_mask is None else self.placement.tensor(action_mask, dtype=torch.bool)
        log_probs = D.categorical_log_probs(head, mask)
        action = log_probs.argmax(-1) if deterministic else D.categorical_sample(log_probs, self.generator)
        return action, D.categorical_log_prob(log_probs, action)

    @torch.inference_mode()
    def action_probabilities(self, obs: np.ndarray, action_mask: Optional[np.ndarray] = None,
                             state: Any = None) -> np.ndarray:
        if self.continuous:
            raise TypeError('action_probabilities: the policy has a continuous (Box) action space')
        mask = None if action_mask is None else self.placement.tensor(action_mask, dtype=torch.bool)
        if self.average.answers:  # the NFSP-style average answers for the policy (policy.average.answer)
            return self.placement.numpy(self.average.probabilities(self.net.prepare(self._obs_tensor(obs)), mask))
        head, _, _ = self._step(obs, state)
        return self.placement.numpy(D.categorical_log_probs(head, mask).exp())

    @torch.inference_mode()
    def probabilities_and_value(self, obs: np.ndarray, action_mask: Optional[np.ndarray] = None):
        if self.recurrent or self.continuous:
            return super().probabilities_and_value(obs, action_mask)
        obs_t = self._obs_tensor(obs)
        mask = None if action_mask is None else self.placement.tensor(action_mask, dtype=torch.bool)
        head, value = self.model(self.net.prepare(obs_t))
        if self.average.answers:  # the NFSP-style average answers for the policy (policy.average.answer)
            probs = self.average.probabilities(self.net.prepare(obs_t), mask)
        else:
            probs = D.categorical_log_probs(head, mask).exp()
        return self.placement.numpy(probs), self.placement.numpy(value)

    @torch.inference_mode()
    def value(self, obs: np.ndarray, state: Any = None) -> np.ndarray:
        if self.recurrent:
            return self.placement.numpy(self._step(obs, state)[1])
        return self.placement.numpy(self.model.value(self.net.prepare(self._obs_tensor(obs))))

    # -- learning -----------------------------------------------------------------------------
    def _forward(self, batch: TrainBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """(heads, values) laid out like the batch's fields, under the current parameters."""
        obs = self.net.prepare(batch.obs)
        if batch.windowed:
            head, value, _ = self.model.unroll(obs, batch.state, batch.starts)
            return head, value
        return self.model(obs)

    def _policy_terms(self, head: torch.Tensor, actions: torch.Tensor, mask: Optional[torch.Tensor]):
        """(log-prob of the taken actions, entropy) for flat heads ``[N, ...]``."""
        if self.continuous:
            log_prob = D.gaussian_log_prob(head, self.model.log_std, actions.reshape(head.shape))
            return log_prob, D.gaussian_entropy(self.model.log_std, log_prob.shape)
        log_probs = D.categorical_log_probs(head, mask)
        return D.categorical_log_prob(log_probs, actions), D.categorical_entropy(log_probs)

    def _train_batch(self, chunk: Dict[str, np.ndarray]) -> TrainBatch:
        learn = self.cfg['learn']
        if learn['off_policy'] == 'vtrace':
            log_ratio, value, next_value = self._current_view(chunk)
            advantages, returns = F.vtrace(chunk['reward'], value, next_value, chunk['terminated'], chunk['truncated'],
                                           log_ratio, learn['gamma'], learn['vtrace_rho_bar'], learn['vtrace_c_bar'],
                                           lam=learn['gae_lambda'], weight_advantages=False)
            # The advantages carry no importance weight: the clipped surrogate's ratio pi/mu (against the
            # recorded log-probabilities) is that weight, and its clip is the truncation. Weighting them by rho
            # as well counted the correction twice: on CartPole 8 versions stale (seeds 0-15), a mean return of
            # 348 +- 22 with the weight, 379 +- 12 without, 368 +- 36 on-policy (benchmarks/vtrace_staleness.py).
            # The value loss's clip is around the values this update starts from, not a stale chunk's.
            chunk = dict(chunk, value=value.astype(np.float32))
        else:
            advantages, returns = F.gae(chunk['reward'], chunk['value'], chunk['next_value'], chunk['terminated'],
                                        chunk['truncated'], learn['gamma'], learn['gae_lambda'])
        returns = self.objective.returns(chunk, returns)
        chunk = self.objective.policy_targets(chunk)
        if self.recurrent:
            return window_batch(chunk, advantages, returns, self.bptt_len)
        batch = step_batch(chunk, advantages, returns)
        return with_mirror(batch, self.mirror) if self.mirror else batch

    @torch.no_grad()
    def _current_view(self, chunk: Dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What V-trace needs of a chunk under the current parameters, all ``[T, B]``: the log-ratio of the
        taken actions' probabilities now to those recorded (0 where no action was chosen), the values now, and
        the next states' values now (within an episode the next row's; the recorded bootstrap value where an
        episode ended or the chunk does, whose observation the chunk does not hold)."""
        T, B = np.shape(chunk['reward'])
        flat = lambda x: self.placement.tensor(np.asarray(x).reshape(T * B, *np.shape(x)[2:]))  # noqa: E731
        head, value = self.model(self.net.prepare(self._obs_tensor(np.asarray(chunk['obs']).reshape(
            T * B, *np.shape(chunk['obs'])[2:]))))
        mask = flat(chunk['action_mask']).bool() if 'action_mask' in chunk else None
        if mask is not None:  # rows where the seat could not move: any legal action will do, the ratio is unused
            mask = mask | ~mask.any(dim=-1, keepdim=True)
        log_prob, _ = self._policy_terms(head, flat(chunk['action']), mask)
        log_ratio = self.placement.numpy(log_prob).reshape(T, B).astype(np.float64) - chunk['log_prob']
        acting = chunk.get('train_mask')
        if acting is not None:
            log_ratio = np.where(acting, log_ratio, 0.0)
        value = self.placement.numpy(value).reshape(T, B).astype(np.float64)
        ended = np.logical_or(chunk['terminated'], chunk['truncated'])
        following = np.concatenate([value[1:], np.asarray(chunk['next_value'], dtype=np.float64)[-1:]])
        next_value = np.where(ended, chunk['next_value'], following)
        return log_ratio, value, next_value

    def learn(self, chunk: Dict[str, np.ndarray], progress: float = 0.0) -> Dict[str, float]:
        with torch_threads(self.cfg['learn']['threads']):
            stats = self._learn(chunk, progress)
            stats.average = self.average.learn(chunk, self._prepared_numpy, self.placement.device)
            return stats.as_dict()

    @torch.no_grad()
    def _prepared_numpy(self, obs: np.ndarray) -> np.ndarray:
        """Observations as the network sees them (normalised where obs_norm is on), on the host."""
        return self.net.prepare(self._obs_tensor(obs)).cpu().numpy()

    def _learn(self, chunk: Dict[str, np.ndarray], progress: float) -> UpdateStats:
        """One PPO update: epochs of shuffled minibatches of the chunk, each one gradient step on the objective's
        policy loss plus the value loss minus the entropy bonus."""
        learn, objective = self.cfg['learn'], self.objective
        fresh = self.placement.move(self._train_batch(chunk))
        batch = objective.training_batch(fresh)
        if batch.num_steps == 0:
            raise ValueError('PPO.learn: the chunk holds no trainable step (train_mask is all False)')
        lr = self.lr_schedule(progress) * objective.lr_multiplier
        # A clip range annealed to exactly 0 would freeze the policy: keep a tiny floor.
        clip_range = max(self.clip_schedule(progress), 1e-8)
        for group in self.optimizer.param_groups:
            group['lr'] = lr
        objective.before_update(batch, progress)
        replay = self.value_replay_batch if self.replays_value and self.value_in_policy_loss else None

        units = batch.num_units
        size = max(1, units // learn['num_minibatches'])
        starts = range(0, units - size + 1, size)
        graphed = self._graphed_minibatches(batch, replay, size, lr, clip_range)
        # Each minibatch's figures stay tensors (None: a refused step) and are read back once, at the end.
        rows: list = []
        clip_fractions: list = []
        consumed, stopped_early = 0, False
        for _ in range(learn['epochs']):
            order = torch.randperm(units, generator=self.generator)
            replays = self._replay_minibatches(replay, len(starts)) if replay is not None else [None] * len(starts)
            epoch_rows = []
            for start, replay_part in zip(starts, replays):
                part = order[start:start + size]
                row, steps = (graphed.step(part) if graphed is not None
                              else self._update(batch.take(part), replay_part, clip_range))
                epoch_rows.append(row)
                clip_fractions.append(self._gradient_step().last_grad_clip_fraction if row is not None else 0.0)
                consumed += steps
            rows += epoch_rows
            if objective.stops_early(batch, epoch_rows):
                stopped_early = True
                break

        if graphed is not None:
            self.skipped_updates += graphed.end()
        value_fit = self._after_policy_epochs(batch, progress)
        if self.net.normalizer is not None:
            # After the update, so the chunk's log-probs were computed with the statistics it used.
            self.net.normalizer.update(fresh.kept.obs)
        self._version += 1
        objective_stats = objective.after_update(batch, fresh)
        if self.replays_value:
            self.value_replay_batch = batch
        updates = max(len(rows), 1)
        policy_loss, value_loss, entropy, approx_kl, clip_fraction = step_means(rows, updates)
        predicted, target = self.placement.numpy(batch.kept.value), self.placement.numpy(batch.kept.ret)
        return UpdateStats(
            policy_loss=policy_loss, value_loss=value_loss, entropy=entropy, approx_kl=approx_kl,
            clip_fraction=clip_fraction,
            grad_clip_fraction=None if self.grad_clipper is None else sum(clip_fractions) / updates,
            objective=objective_stats, skipped_updates=self.skipped_updates, lr=lr, clip_range=clip_range,
            gradient_steps=len(rows), samples=batch.num_steps, samples_consumed=consumed,
            early_stop=float(stopped_early), explained_variance=F.explained_variance(predicted, target),
            value_fit=value_fit)

    def _after_policy_epochs(self, batch: TrainBatch, progress: float) -> Dict[str, float]:
        """Training after the policy's epochs, before the normaliser moves; returns its statistics.

        Nothing here: the value is fitted within the epochs. A subclass fitting it apart does so here,
        while ``value_replay_batch`` still holds the previous chunk.
        """
        return {}

    def _replay_minibatches(self, replay: TrainBatch, count: int) -> list:
        """The previous chunk split into ``count`` random minibatches of units, one per gradient step."""
        order = torch.randperm(replay.num_units, generator=self.generator)
        size = max(1, replay.num_units // count)
        return [replay.take(order[(i * size) % replay.num_units:][:size]) for i in range(count)]

    def _gradient_step(self) -> GradientStep:
        """The step over the current optimiser (a subclass may build its own after this constructor)."""
        cached = getattr(self, '_gradient_step_cache', None)
        if cached is None or cached.optimizer is not self.optimizer:
            cached = self._gradient_step_cache = GradientStep(self.net.parameters(), self.optimizer,
                                                              self.cfg['learn']['max_grad_norm'], self.grad_clipper)
        return cached

    def _graphed_minibatches(self, batch: TrainBatch, replay: Optional[TrainBatch], size: int, lr: float,
                             clip_range: float) -> Optional[graphed_steps.GraphedMinibatches]:
        """What replays this update's minibatch steps as a CUDA graph (``learn.cuda_graph``), ready for ``batch``;
        None where they are taken one by one: off CUDA, and for steps a graph cannot hold."""
        on = self.cfg['learn']['cuda_graph'] and graphed_steps.capturable(self.placement.device)
        runner = getattr(self, '_graph_runner', None)
        if (not on or (runner is not None and runner.failed) or replay is not None or batch.windowed
                or (batch.acts is not None and not self.objective.acting_by_advantage)
                or self.net.normalizer is not None
                or self.grad_clipper is not None or not self.objective.graph_safe
                or graphed_steps.hooked(self._gradient_step().params)):
            return None
        if runner is None or runner.gradient_step is not self._gradient_step():
            runner = self._graph_runner = graphed_steps.GraphedMinibatches(self._gradient_step(), self._update)
        runner.begin(batch, size, lr, clip_range)
        return runner

    def _update(self, part: TrainBatch, replay: Optional[TrainBatch], clip_range: float, captured: bool = False):
        """One gradient step on a minibatch; returns (its ``STEP_STATS`` as one tensor, or None if the step
        was refused as not finite; steps it trained on). ``captured``: the step is being captured as a CUDA graph
        (``clip_range`` is then a 0-d tensor, and no rows are selected)."""
        learn = self.cfg['learn']
        head, value = self._forward(part)
        head, value = part.flatten_kept(head), part.flatten_kept(value)
        kept = part.kept
        mask = kept.mask
        log_prob, entropy = self._policy_terms(head, kept.action, mask)
        v_loss = self._value_loss(part, value, replay) if self.value_in_policy_loss else value.new_zeros(())
        acts = kept.acts if captured else None
        if acts is not None:  # captured: the policy terms where an action was chosen, as weights
            terms = graphed_steps.acting_by_advantage(acts, log_prob, entropy, kept.adv, kept.log_prob,
                                                      learn['normalize_advantage'])
            pg_loss, approx_kl, clip_frac = self.objective.policy_loss(
                Minibatch(part, head, mask, terms.log_prob, kept.log_prob, terms.adv, clip_range))
            approx_kl, clip_frac, entropy_mean = approx_kl * terms.scale, clip_frac * terms.scale, terms.entropy_mean
            return self._step_on(pg_loss, v_loss, entropy_mean, approx_kl, clip_frac, head)
        # The policy terms only where an action was chosen.
        log_prob, entropy, adv, old_log_prob = part.acting_steps(log_prob, entropy, kept.adv, kept.log_prob)
        if log_prob.numel() == 0:  # a minibatch of value-only steps
            pg_loss = approx_kl = clip_frac = entropy_mean = value.new_zeros(())
        else:
            if learn['normalize_advantage']:
                adv = F.normalize_advantages(adv)
            pg_loss, approx_kl, clip_frac = self.objective.policy_loss(
                Minibatch(part, head, mask, log_prob, old_log_prob, adv, clip_range))
            entropy_mean = entropy.mean()
        return self._step_on(pg_loss, v_loss, entropy_mean, approx_kl, clip_frac, head)

    def _step_on(self, pg_loss, v_loss, entropy_mean, approx_kl, clip_frac, head):
        """The gradient step on a minibatch's loss terms; (its figures, steps) as :meth:`_update` returns them."""
        learn = self.cfg['learn']
        loss = pg_loss + learn['value_coef'] * v_loss - learn['entropy_coef'] * entropy_mean
        if not self._gradient_step().step(loss):  # skipped and counted, never applied
            self.skipped_updates += 1
            return None, 0
        row = torch.stack([t.detach() for t in (pg_loss, v_loss, entropy_mean, approx_kl, clip_frac)])  # exact
        return row, int(head.shape[0])

    def _value_loss(self, part: TrainBatch, value: torch.Tensor, replay: Optional[TrainBatch]) -> torch.Tensor:
        """The value loss on a minibatch (``value`` its flat predictions), with the replayed chunk's part if any."""
        values, old_values, targets = value, part.kept.value, part.kept.ret
        if replay is not None:
            replay_value = replay.flatten_kept(self._forward(replay)[1])
            values = torch.cat([values, replay_value])
            old_values = torch.cat([old_values, replay.kept.value])
            targets = torch.cat([targets, replay.kept.ret])
        return F.value_loss(values, old_values, targets, self.cfg['learn']['value_clip_range'])

    def _make_optimizer(self) -> torch.optim.Optimizer:
        learn = self.cfg['learn']
        return torch.optim.Adam(self.net.parameters(), lr=learn['lr'], betas=ADAM_BETAS, eps=learn['adam_eps'])

    def trained_module(self) -> torch.nn.Module:
        return self.net

    def reset_optimizer(self) -> None:
        self.optimizer.state.clear()
        if self.grad_clipper is not None:
            self.grad_clipper.reset()
        self.value_replay_batch = None
        self.objective.reset()

    # -- parameters (out on the CPU; loading copies them onto the device) --------------------------
    def _move_to(self, placement: Placement) -> None:
        placement.module(self.net)
        self.average.to(placement)
        self.objective.to(placement)
        self._place_optimizer(placement)
        if self.grad_clipper is not None:
            self.grad_clipper.second_moments = placement.move(self.grad_clipper.second_moments)
        self.value_replay_batch = placement.move(self.value_replay_batch)

    def get_params(self) -> Dict[str, torch.Tensor]:
        return dict(self.placement.host_copy(dict(self.net.state_dict())), **self.average.params())

    def set_params(self, params: Dict[str, torch.Tensor], version: int) -> None:
        self.net.load_state_dict(self.average.load_params(params))  # copies each tensor onto the parameter's device
        self._version = int(version)

    def state_dict(self) -> Dict[str, Any]:
        host = self.placement.to_host
        state = dict(params=self.get_params(), optimizer=host(self.optimizer.state_dict()), version=self._version,
                     generator=self.generator.get_state(), **self.objective.state_dict(self.placement))
        if self.grad_clipper is not None:
            state['grad_clipper'] = host(self.grad_clipper.state_dict())
        if self.value_replay_batch is not None:
            state['value_replay_batch'] = host(self.value_replay_batch.state_dict())
        state.update(self.average.checkpoint(self.placement))
        return state

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.set_params(state['params'], state['version'])
        self.optimizer.load_state_dict(state['optimizer'])
        self.generator.set_state(state['generator'])
        if self.grad_clipper is not None:
            self.grad_clipper.load_state_dict(state['grad_clipper'])
        replay = state.get('value_replay_batch')
        self.value_replay_batch = None if replay is None else self.placement.move(TrainBatch.from_state_dict(replay))
        self.objective.load_state_dict(state, self.placement)
        self.average.load_checkpoint(state)
