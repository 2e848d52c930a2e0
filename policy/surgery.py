"""Surgery on a trained PPO player: a network for a new config or env that computes the old function.

OpenAI Five trained one model for ten months while its network and observations changed: each
change was an offline *surgery* turning the old parameters into new ones for the new shape,
computing the same function where the change allows. :func:`transplant` does it for PPO with
the MLP or the LSTM actor-critic, all changes at once, from a policy of the old config and spaces
into a freshly built policy of the new ones:

==========================  ============================================================  ======
change                      how                                                           result
==========================  ============================================================  ======
widen a hidden layer or     ``widen='zero'``: new units with random incoming and zero     exact
the LSTM core               outgoing weights; ``'split'`` (Net2WiderNet): copies of old
                            units sharing their outgoing weights (halves, or jittered
                            fractions summing to 1 so the copies can drift apart)
add observation features    zero input weights; observation-normaliser statistics for     exact
                            them neutral (mean 0, variance 1) or measured on new-env
                            observations
add actions                 logits = the mean of the old logits + ``new_action_offset``,  ~e^offset
                            so each new action's probability is at most e^offset; or a
                            ``new_action_prior`` probability, calibrated on observations  measured
remove observation features replaced by their mean on recorded observations, folded into  measured
                            the first layer's biases
remove actions              their logits are dropped; the others renormalise              measured
==========================  ============================================================  ======

The Adam state moves with the parameters: every unchanged slice keeps its moments; new slices
start with a zero first moment and their tensor's mean second moment (a zero second moment
would make their first steps about three times the learning rate). :func:`compare` measures
what changed on observations: the largest change in any action probability and in the value.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

import gymnasium as gym
import numpy as np
import torch

from sparring.config.compile import merge_class_section
from sparring.config.schema import in_range, one_of
from sparring.policy.base import Policy
from sparring.policy.feature_map import (FeatureMap, SurgeryError, action_map, flat_size, observation_map)

if TYPE_CHECKING:  # surgery takes PPO-style policies (checked by duck typing at run time); PPOPolicy is the type
    from sparring.policy.ppo import PPOPolicy

# Model keys surgery may change, per model type; any other difference is refused.
CHANGEABLE_MODEL_KEYS = {
    'mlp': ('hidden_sizes', 'policy_head_gain', 'init_log_std'),
    'lstm': ('encoder_sizes', 'hidden_size', 'policy_head_gain', 'init_log_std', 'bptt_len'),
}
LSTM_GATES = 4  # LSTMCell rows: input, forget, cell and output gates, each hidden_size long


class SurgeryOptions:
    """How :func:`transplant` makes its choices (a config section, checked like any other)."""

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            widen='zero',  # 'zero': new units with zero outgoing weights; 'split': Net2WiderNet copies
            split_jitter=0.0,  # 'split' only: outgoing fractions 1/k jittered by up to this (still summing to 1)
            new_action_offset=-30.0,  # a new action's logit: the old logits' mean + this (probability <= e^offset)
            new_action_prior=None,  # instead: the mean probability of each new action, calibrated on observations
            seed=0,  # which units 'split' copies, and nothing else
        )

    config_constraints = {
        'widen': one_of('zero', 'split'),
        'split_jitter': in_range(0.0, 1.0, open_hi=True),
        'new_action_offset': in_range(None, 0.0),
        'new_action_prior': in_range(0.0, 1.0, open_lo=True, open_hi=True, allow_none=True),
        'seed': in_range(0, 2 ** 32 - 1),
    }


def resolve_options(options: Optional[dict] = None) -> dict:
    """``options`` over :class:`SurgeryOptions` defaults; unknown keys and bad values raise ConfigError."""
    return merge_class_section(SurgeryOptions, dict(options or {}), 'surgery', validate=False)


@dataclasses.dataclass
class SurgeryResult:
    changes: List[str]  # one line per changed axis, for the report
    obs_map: FeatureMap
    action_map: FeatureMap
    obs_fill: np.ndarray  # [old features] raw values standing in for removed features (for adapters)


# -- the model's layout --------------------------------------------------------------------------
# An axis is a named space of units: 'obs' (flattened observation features), 'actions', 'value',
# and the hidden axes of each model type. A layer is (state-dict prefix, output axis, input axis,
# weight name, bias names).

Layer = Tuple[str, str, str, str, Tuple[str, ...]]


def _mlp_layout(model_cfg: dict) -> Tuple[List[Layer], Dict[str, int]]:
    """Actor and critic trunks (``actor.i``, ``critic.i``; a shared trunk has only ``actor.*``), two heads."""
    sizes = list(model_cfg['hidden_sizes'])
    critic = 'actor' if model_cfg['shared_trunk'] else 'critic'
    layers: List[Layer] = []
    hidden: Dict[str, int] = {}
    for trunk, axis in (('actor_trunk', 'actor'), ('critic_trunk', critic)):
        previous = 'obs'
        for i, size in enumerate(sizes):
            layers.append((f'model.{trunk}.{2 * i}', f'{axis}.{i}', previous, 'weight', ('bias',)))  # Linear, act, ...
            hidden[f'{axis}.{i}'] = int(size)
            previous = f'{axis}.{i}'
    layers.append(('model.policy_head', 'actions', f'actor.{len(sizes) - 1}', 'weight', ('bias',)))
    layers.append(('model.value_head', 'value', f'{critic}.{len(sizes) - 1}', 'weight', ('bias',)))
    return layers, hidden


def _lstm_layout(model_cfg: dict) -> Tuple[List[Layer], Dict[str, int]]:
    """Encoder (``encoder.i``), the LSTM core (``core``; its gate rows ``core.gates``), two heads."""
    layers: List[Layer] = []
    hidden: Dict[str, int] = {}
    previous = 'obs'
    for i, size in enumerate(model_cfg['encoder_sizes']):
        layers.append((f'model.encoder.{2 * i}', f'encoder.{i}', previous, 'weight', ('bias',)))
        hidden[f'encoder.{i}'] = int(size)
        previous = f'encoder.{i}'
    hidden['core'] = int(model_cfg['hidden_size'])
    layers.append(('model.core', 'core.gates', previous, 'weight_ih', ('bias_ih', 'bias_hh')))
    layers.append(('model.core', 'core.gates', 'core', 'weight_hh', ()))
    layers.append(('model.policy_head', 'actions', 'core', 'weight', ('bias',)))
    layers.append(('model.value_head', 'value', 'core', 'weight', ('bias',)))
    return layers, hidden


LAYOUTS = {'mlp': _mlp_layout, 'lstm': _lstm_layout}


def _layout(policy: PPOPolicy) -> Tuple[List[Layer], Dict[str, int]]:
    return LAYOUTS[policy.cfg['model']['type']](policy.cfg['model'])


def _param_axes(layers: List[Layer]) -> Dict[str, Tuple[str, ...]]:
    """The axes of every dimension of every parameter, by state-dict key."""
    axes: Dict[str, Tuple[str, ...]] = {'model.log_std': ('actions',)}
    for prefix, out_axis, in_axis, weight, biases in layers:
        axes[f'{prefix}.{weight}'] = (out_axis, in_axis)
        for bias in biases:
            axes[f'{prefix}.{bias}'] = (out_axis,)
    return axes


def _check_compatible(old: PPOPolicy, new: PPOPolicy) -> None:
    for label, policy in (('old', old), ('new', new)):
        if not all(hasattr(policy, attr) for attr in ('net', 'model', 'optimizer')):
            raise SurgeryError(f'surgery: the {label} policy {type(policy).__name__} is not a PPO-style policy with '
                               f'net, model and optimizer')
        kind = policy.cfg['model']['type']
        if kind not in LAYOUTS:
            raise SurgeryError(f'surgery: model type {kind!r} of the {label} policy is not supported; supported: '
                               f'{", ".join(LAYOUTS)}')
    old_model, new_model = old.cfg['model'], new.cfg['model']
    changeable = CHANGEABLE_MODEL_KEYS[old_model['type']]
    for key in sorted(set(old_model) | set(new_model)):
        if key not in changeable and old_model.get(key) != new_model.get(key):
            raise SurgeryError(f'surgery: policy.model.{key} changes from {old_model.get(key)!r} to '
                               f'{new_model.get(key)!r}; surgery can change {", ".join(changeable)} only')
    old_hidden, new_hidden = _layout(old)[1], _layout(new)[1]
    if old_hidden.keys() != new_hidden.keys():
        raise SurgeryError(f'surgery: the hidden layers {sorted(old_hidden)} -> {sorted(new_hidden)} differ in number; '
                           f'surgery widens layers, it does not add or remove them')
    if bool(old.cfg['obs_norm']) != bool(new.cfg['obs_norm']):
        raise SurgeryError(f'surgery: policy.obs_norm changes from {old.cfg["obs_norm"]} to {new.cfg["obs_norm"]}; '
                           f'surgery keeps observation normalisation as it is')
    if old.continuous != new.continuous:
        raise SurgeryError(f'surgery: action space {old.action_space} -> {new.action_space} switches between discrete '
                           f'and continuous actions')


def _axis_maps(old: PPOPolicy, new: PPOPolicy, obs_map: FeatureMap, act_map: FeatureMap,
               opts: dict) -> Dict[str, FeatureMap]:
    maps = {'obs': obs_map, 'actions': act_map, 'value': FeatureMap.identity(1, 'value')}
    old_hidden, new_hidden = _layout(old)[1], _layout(new)[1]
    for i, axis in enumerate(new_hidden):
        # Seeded per axis: the same options give the same splits, whatever else changed.
        rng = np.random.default_rng([opts['seed'], i])
        maps[axis] = FeatureMap.widened(old_hidden[axis], new_hidden[axis], opts['widen'], rng, opts['split_jitter'],
                                        name=f'hidden layer {axis}')
    if 'core' in maps:
        maps['core.gates'] = FeatureMap.blocks(maps['core'], LSTM_GATES, name='LSTM gates')
    return maps


# -- the operation -------------------------------------------------------------------------------

def transplant(old: PPOPolicy, new: PPOPolicy, obs_map: Optional[FeatureMap] = None,
               act_map: Optional[FeatureMap] = None,
               options: Optional[dict] = None, observations: Optional[np.ndarray] = None,
               action_mask: Optional[np.ndarray] = None, new_observations: Optional[np.ndarray] = None,
               names: Optional[Dict[str, Sequence[str]]] = None) -> SurgeryResult:
    """Write into ``new`` (freshly built for the new config and spaces) ``old``'s parameters,
    normaliser statistics, optimiser state, version and sampling RNG, reshaped (see the module
    docstring).

    ``obs_map`` / ``act_map`` default to :func:`observation_map` / :func:`action_map` of the two
    policies' spaces. ``observations`` (old spaces, with ``action_mask`` if the env has masks)
    supply the means that stand in for removed features and calibrate ``new_action_prior``;
    ``new_observations`` (new spaces) supply the normaliser statistics of added features.
    ``names`` (``{'obs': [...], 'actions': [...]}`` of the new spaces) label the report's changes.
    """
    opts = resolve_options(options)
    _check_compatible(old, new)
    obs_map = obs_map or observation_map(old.observation_space, new.observation_space)
    act_map = act_map or action_map(old.action_space, new.action_space)
    for label, fmap, before, after in (('observation', obs_map, old.observation_space, new.observation_space),
                                       ('action', act_map, old.action_space, new.action_space)):
        if (fmap.old_size, fmap.new_size) != (flat_size(before), flat_size(after)):
            raise SurgeryError(f'{label} map {fmap.old_size} -> {fmap.new_size} entries does not fit the spaces '
                               f'{before} -> {after}')
    if isinstance(new.observation_space, gym.spaces.Discrete) and not obs_map.is_identity:
        raise SurgeryError('surgery: a Discrete (one-hot) observation space cannot change')
    if old.continuous and not act_map.is_identity:
        raise SurgeryError(f'surgery: continuous actions {old.action_space} -> {new.action_space} cannot change')
    maps = _axis_maps(old, new, obs_map, act_map, opts)
    old_params, params = old.get_params(), new.get_params()
    raw_fill, input_fill = _removed_feature_fill(old, obs_map, observations)
    offset = _new_action_offset(old, act_map, opts, observations, action_mask)

    layers = _layout(new)[0]
    for prefix, out_axis, in_axis, weight_name, bias_names in layers:
        weight, biases = _linear(old_params, params, prefix, weight_name, bias_names, maps[out_axis], maps[in_axis],
                                 input_fill if in_axis == 'obs' else None)
        if out_axis == 'actions' and len(act_map.added):
            kept = act_map.source >= 0
            weight[~kept] = weight[kept].mean(0)
            biases[0][~kept] = biases[0][kept].mean() + offset
        params[f'{prefix}.{weight_name}'] = weight
        params.update({f'{prefix}.{name}': bias for name, bias in zip(bias_names, biases)})
    if 'model.log_std' in params:
        params['model.log_std'] = old_params['model.log_std'].clone()
    if 'normalizer.mean' in params:
        _move_normalizer(old_params, params, obs_map, new.observation_space, new_observations)
    # Through the policy's own state dict, so whatever else it keeps (KL-penalty beta, lr
    # multiplier ...) carries over; what depends on the parameters' shapes is moved.
    old_state, fresh_state = old.state_dict(), new.state_dict()
    state = dict(old_state, params=params)
    state['optimizer'] = _moved_optimizer_state(old, new, maps, layers, old_state['optimizer'],
                                                fresh_state['optimizer'])
    if 'grad_clipper' in old_state and 'grad_clipper' in fresh_state:
        state['grad_clipper'] = dict(old_state['grad_clipper'], second_moments=_moved_per_parameter(
            old, new, maps, layers, old_state['grad_clipper']['second_moments']))
    else:
        state.pop('grad_clipper', None)
    # A kept previous chunk (value replay) holds observations of the old space: start without it.
    state.pop('value_replay_batch', None)
    new.load_state_dict(state)

    derived = {'core.gates'}  # follows 'core'
    names = names or {}
    changes = [f'{axis}: {fmap.describe(names.get(axis))}' for axis, fmap in maps.items()
               if not fmap.is_identity and axis not in derived]
    if len(obs_map.removed):
        changes.append(f'removed observation features {obs_map.removed.tolist()} stand in as their means '
                       f'{np.round(raw_fill[obs_map.removed], 4).tolist()}'
                       + ('' if observations is not None else ' (no observations given: zeros)'))
    if len(act_map.added):
        changes.append(f'new actions {act_map.added.tolist()}: logit = mean old logit {offset:+.3f}')
    return SurgeryResult(changes, obs_map, act_map, raw_fill)


def _linear(old_params: dict, fresh: dict, prefix: str, weight_name: str, bias_names: Tuple[str, ...],
            rows: FeatureMap, cols: FeatureMap, removed_input: Optional[torch.Tensor]):
    """A layer's new weight and biases: kept and copied units take the old rows with their columns
    re-indexed (new inputs get zero weights, split inputs their fraction); new units keep their
    fresh initialisation. Removed inputs are folded into the first bias at their stand-in value."""
    w_old = old_params[f'{prefix}.{weight_name}']
    weight = fresh[f'{prefix}.{weight_name}'].clone()
    kept = torch.as_tensor(rows.source >= 0)
    source = torch.as_tensor(rows.source[rows.source >= 0])
    old_rows = w_old.index_select(0, source)
    weight[kept] = cols.gather(old_rows, 1, 0.0) * torch.as_tensor(cols.scale, dtype=weight.dtype)
    biases = []
    for i, name in enumerate(bias_names):
        bias = fresh[f'{prefix}.{name}'].clone()
        old_bias = old_params[f'{prefix}.{name}'].index_select(0, source)
        if i == 0 and len(cols.removed):
            if removed_input is None:
                raise SurgeryError(f'{cols.name}: removing hidden units is not supported')
            old_bias = old_bias + old_rows[:, cols.removed] @ removed_input[cols.removed].to(old_rows.dtype)
        bias[kept] = old_bias
        biases.append(bias)
    return weight, biases


def _prepared(policy: PPOPolicy, obs: np.ndarray) -> torch.Tensor:
    """Observations as the first layer sees them (normalised, flattened)."""
    with torch.no_grad():
        tensor = policy.placement.tensor(np.asarray(obs, np.float32))
        return policy.net.prepare(tensor).reshape(len(tensor), -1).double().cpu()


def _removed_feature_fill(old: PPOPolicy, obs_map: FeatureMap, observations: Optional[np.ndarray]):
    """(raw stand-in values, first-layer-input stand-in values) for every old feature: the means on
    ``observations``, else the normaliser's mean (zeros without one)."""
    if observations is not None and len(observations):
        raw = np.asarray(observations, np.float64).reshape(len(observations), -1).mean(0)
        prepared = _prepared(old, observations).mean(0)
        return raw.astype(np.float32), prepared.float()
    normalizer = getattr(old.net, 'normalizer', None)
    raw = normalizer.mean.reshape(-1).cpu().numpy().astype(np.float32) if normalizer is not None else \
        np.zeros(obs_map.old_size, np.float32)
    return raw, torch.zeros(obs_map.old_size)


def _new_action_offset(old: PPOPolicy, act_map: FeatureMap, opts: dict, observations, action_mask) -> float:
    """The offset of new actions' logits over the old logits' mean (see the module docstring)."""
    added = len(act_map.added)
    prior = opts['new_action_prior']
    if not added or prior is None:
        return float(opts['new_action_offset'])
    if added * prior >= 1.0:
        raise SurgeryError(f'surgery.new_action_prior: {added} new actions x {prior} >= 1; expected a total below 1')
    if observations is None or not len(observations):
        # Calibrated for a uniform old policy: e^c / (A + k e^c) = p.
        kept = int((act_map.source >= 0).sum())
        return float(np.log(prior * kept / (1.0 - added * prior)))
    with torch.no_grad():
        prepared = old.net.prepare(old.placement.tensor(np.asarray(observations, np.float32)))
        logits = old.model(prepared)[0].double().cpu()
    logits = logits[:, torch.as_tensor(act_map.source[act_map.source >= 0])]
    if action_mask is not None:
        mask = torch.as_tensor(np.asarray(action_mask)[:, act_map.source[act_map.source >= 0]], dtype=torch.bool)
        rows = mask.any(1)
        logits, mask = logits[rows], mask[rows]
        norm = torch.logsumexp(logits.masked_fill(~mask, -torch.inf), 1)
        mean = logits.mean(1)
    else:
        norm, mean = torch.logsumexp(logits, 1), logits.mean(1)

    def mean_prob(c: float) -> float:  # each new action's probability, averaged over the observations
        new_logit = mean + c
        total = torch.logaddexp(norm, new_logit + np.log(added))
        return float((new_logit - total).exp().mean())

    lo, hi = -100.0, 100.0  # mean_prob rises with c: bisect
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mean_prob(mid) < prior else (lo, mid)
    return 0.5 * (lo + hi)


def _move_normalizer(old_params: dict, params: dict, obs_map: FeatureMap, space: gym.Space,
                     new_observations: Optional[np.ndarray]) -> None:
    mean = obs_map.gather(old_params['normalizer.mean'].reshape(-1), 0, 0.0)
    var = obs_map.gather(old_params['normalizer.var'].reshape(-1), 0, 1.0)
    added = torch.as_tensor(obs_map.added)
    if new_observations is not None and len(new_observations) and len(added):
        # Any statistics keep the function (the new features' weights are zero); measured ones
        # normalise the new features sensibly from the first update on.
        flat = torch.as_tensor(np.asarray(new_observations, np.float64).reshape(len(new_observations), -1))
        mean[added] = flat[:, added].mean(0).to(mean.dtype)
        var[added] = flat[:, added].var(0, unbiased=False).clamp_min(1e-8).to(var.dtype)
    shape = space.shape
    assert shape is not None  # observation normalisation is for Box spaces
    params['normalizer.mean'] = mean.reshape(shape)
    params['normalizer.var'] = var.reshape(shape)
    params['normalizer.count'] = old_params['normalizer.count'].clone()


def _move_slices(name: str, key: str, value, maps: Dict[str, FeatureMap], axes: Dict[str, Tuple[str, ...]]):
    """One per-parameter statistic moved with its parameter: unchanged slices kept; new slices
    zero for first moments, the tensor's mean for second moments (a scale updates can trust)."""
    if not (torch.is_tensor(value) and value.dim() > 0):
        return value.clone() if torch.is_tensor(value) else value
    fill = value.mean() if key.endswith('_sq') or key == 'second_moment' else 0.0
    for dim, axis in enumerate(axes[name]):
        value = maps[axis].gather(value, dim, fill)
    return value


def _moved_optimizer_state(old: PPOPolicy, new: PPOPolicy, maps: Dict[str, FeatureMap], layers: List[Layer],
                           old_optimizer: dict, fresh_optimizer: dict) -> dict:
    """The new optimiser's state dict (its own hyper-parameters) with ``old``'s moments moved."""
    axes = _param_axes(layers)
    old_index = {name: i for i, (name, _) in enumerate(old.net.named_parameters())}
    moved = {}
    for j, (name, param) in enumerate(new.net.named_parameters()):
        entry = old_optimizer['state'].get(old_index.get(name, -1))
        if entry:
            moved[j] = {key: _move_slices(name, key, value, maps, axes) for key, value in entry.items()}
            for key, value in moved[j].items():
                if torch.is_tensor(value) and value.dim() > 0 and value.shape != param.shape:
                    raise SurgeryError(f'surgery: optimiser state {key!r} of {name} has shape {tuple(value.shape)}, '
                                       f'the parameter {tuple(param.shape)}')
    return dict(fresh_optimizer, state=moved)


def _moved_per_parameter(old: PPOPolicy, new: PPOPolicy, maps: Dict[str, FeatureMap], layers: List[Layer],
                         values: List[torch.Tensor]) -> List[torch.Tensor]:
    """A list with one second-moment tensor per parameter (in parameter order), moved."""
    axes = _param_axes(layers)
    by_name = dict(zip((name for name, _ in old.net.named_parameters()), values))
    return [_move_slices(name, 'second_moment', by_name[name], maps, axes) if name in by_name
            else torch.zeros_like(param) for name, param in new.net.named_parameters()]


# -- measuring the change ------------------------------------------------------------------------

def _outputs(policy: Policy, obs: np.ndarray, mask: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
    """(action probabilities, or Gaussian means for continuous actions; values) per observation.

    A recurrent policy reads ``obs`` as sequences ``[T, B, ...]`` from its initial state."""
    def one_step(o, m, state):
        if getattr(policy, 'continuous', False):
            head = policy.act(o, state, deterministic=True).action.reshape(len(o), -1)
        else:
            head = policy.action_probabilities(o, m, state)
        return head.astype(np.float64), policy.value(o, state).astype(np.float64)

    if not getattr(policy, 'recurrent', False):
        return one_step(obs, mask, None)
    state, heads, values = policy.initial_state(obs.shape[1]), [], []
    for t in range(len(obs)):
        m = None if mask is None else mask[t]
        head, value = one_step(obs[t], m, state)
        heads.append(head)
        values.append(value)
        state = policy.act(obs[t], state, deterministic=True, action_mask=m).state
    return np.concatenate(heads), np.concatenate(values)


def compare(old: Policy, new: Policy, old_obs: np.ndarray, new_obs: np.ndarray, act_map: FeatureMap,
            old_mask: Optional[np.ndarray] = None, new_mask: Optional[np.ndarray] = None) -> Dict[str, float]:
    """How far ``new`` on ``new_obs`` is from ``old`` on the paired ``old_obs`` (recurrent policies:
    sequences ``[T, B, ...]`` played from the initial state).

    ``max_prob_change``: the largest change of any kept action's probability; ``max_total_variation``:
    the largest total-variation distance between the two action distributions (new and removed
    actions included); ``max_value_change``. Continuous actions: ``max_mean_action_change``.
    """
    steps_shape = np.shape(old_obs)[:2 if getattr(old, 'recurrent', False) else 1]
    report: Dict[str, float] = dict(observations=int(np.prod(steps_shape)))
    if report['observations'] == 0:
        return report
    head_old, value_old = _outputs(old, old_obs, old_mask)
    head_new, value_new = _outputs(new, new_obs, new_mask)
    value_change = np.abs(value_new - value_old)
    report.update(max_value_change=float(value_change.max()), mean_value_change=float(value_change.mean()))
    if getattr(old, 'continuous', False):
        report['max_mean_action_change'] = float(np.abs(head_new - head_old).max())
        return report
    kept = act_map.source >= 0
    change = np.abs(head_new[:, kept] - head_old[:, act_map.source[kept]])
    total_variation = 0.5 * (change.sum(1) + head_new[:, ~kept].sum(1) + head_old[:, act_map.removed].sum(1))
    report.update(max_prob_change=float(change.max()), max_total_variation=float(total_variation.max()),
                  max_new_action_prob=float(head_new[:, ~kept].sum(1).max()) if (~kept).any() else 0.0)
    return report


def new_space_observations(old_obs: np.ndarray, obs_map: FeatureMap, shape: Tuple[int, ...],
                           fill: float = 0.0, batch_dims: int = 1) -> np.ndarray:
    """Old observations ``[*batch, *old_shape]`` carried into the new space: kept features copied,
    new ones ``fill``."""
    batch = np.shape(old_obs)[:batch_dims]
    flat = torch.as_tensor(np.asarray(old_obs, np.float32).reshape(int(np.prod(batch)), -1))
    return obs_map.gather(flat, 1, fill).numpy().reshape(*batch, *shape)
