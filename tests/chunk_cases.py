"""Every policy and objective a learner trains, with a chunk that honestly fits its spec and the ways to spoil one field.

Shared by the spec's own tests (tests/policy/test_chunk_spec.py) and the learners' (tests/worker/test_chunk_drops.py):
the cases are built from each policy's chunk spec, so a field a policy adds is covered without a line here.
"""
from typing import Callable, Dict, List, Tuple

import gymnasium as gym
import numpy as np

from sparring.config import compile_section
from sparring.config.registry import POLICY_REGISTRY
from sparring.policy.chunk_spec import PER_WINDOW, ChunkField, ChunkSpaces, ChunkSpec

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
DISCRETE = gym.spaces.Discrete(3)
BOX = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
T, B = 8, 4

SMALL = dict(model=dict(hidden_sizes=[8]), learn=dict(epochs=1, num_minibatches=1))
SAC_SMALL = dict(model=dict(hidden_sizes=[8]), learn=dict(batch_size=4, learning_starts=1, updates_per_chunk=1))
DQN_SMALL = dict(model=dict(hidden_sizes=[8]), learn=dict(batch_size=4, learning_starts=1, updates_per_chunk=1))

# name: (policy section, action space, battle chunks)
CASES: Dict[str, Tuple[dict, gym.Space, bool]] = {
    'ppo_clip': (dict(type='ppo', **SMALL), DISCRETE, True),
    'ppo_clip_single_agent': (dict(type='ppo', **SMALL), DISCRETE, False),
    'ppo_box': (dict(type='ppo', **SMALL), BOX, True),
    'ppo_kl_penalty': (dict(type='ppo', model=SMALL['model'], learn=dict(SMALL['learn'], objective='kl_penalty')),
                       BOX, False),
    'ppo_mmd': (dict(type='ppo', model=SMALL['model'], learn=dict(SMALL['learn'], objective='mmd')), DISCRETE, True),
    'ppo_search': (dict(type='ppo', model=SMALL['model'], learn=dict(SMALL['learn'], objective='search')),
                   DISCRETE, True),
    'ppo_vtrace': (dict(type='ppo', model=SMALL['model'], learn=dict(SMALL['learn'], off_policy='vtrace')),
                   DISCRETE, True),
    'ppo_recurrent': (dict(type='ppo', model=dict(type='lstm', hidden_size=8, encoder_sizes=[8], bptt_len=4),
                           learn=SMALL['learn']), DISCRETE, True),
    'sac_box': (dict(type='sac', **SAC_SMALL), BOX, False),
    'sac_discrete': (dict(type='sac', **SAC_SMALL), DISCRETE, True),
    'dqn': (dict(type='dqn', **DQN_SMALL), DISCRETE, True),
}


def make_policy(case: str, seed: int = 0):
    section, action_space, _ = CASES[case]
    cfg = compile_section('policy', section)
    return POLICY_REGISTRY.get(section['type'])(cfg, OBS, action_space, seed=seed)


def spec_of(case: str, policy=None) -> ChunkSpec:
    policy = policy or make_policy(case)
    return policy.chunk_spec(ChunkSpaces.of(policy, battle=CASES[case][2]))


def honest_array(field: ChunkField, rows: int, rng: np.random.Generator) -> np.ndarray:
    """Values a collector could have recorded for ``field``: in range, finite, masks all set."""
    shape = (rows, B, *field.shape)
    if field.dtype == np.bool_:
        return np.ones(shape, bool)
    if field.bounds is not None:
        return rng.integers(*field.bounds, shape).astype(field.dtype)
    if field.dtype.kind in 'iu':
        return rng.integers(0, 1000, shape).astype(field.dtype)
    if field.name in ('search_policy', 'policy_target'):  # distributions over the actions
        return np.full(shape, 1.0 / field.shape[-1], field.dtype)
    if field.name in ('policy_weight',):
        return np.ones(shape, field.dtype)
    return rng.uniform(-0.5, 0.5, shape).astype(field.dtype)


def honest_chunk(spec: ChunkSpec, seed: int = 0) -> Dict[str, np.ndarray]:
    """A chunk of every field of ``spec`` (optional ones too), ``[T, B, ...]`` and ``[T / window_len, B, ...]``."""
    rng = np.random.default_rng(seed)
    windows = T // spec.window_len if spec.window_len else 1
    data = {f.name: honest_array(f, windows if f.per == PER_WINDOW else T, rng) for f in spec}
    for name in ('terminated', 'truncated'):
        data[name][:] = False
    if 'log_prob' in data:  # a likely log-probability
        data['log_prob'][:] = -1.0
    for name in [n for n in data if n.startswith('window_state_')]:
        data[name][:] = 0.0
    return data


def spoilers(field: ChunkField) -> List[Tuple[str, Callable[[np.ndarray], np.ndarray]]]:
    """(how, spoil) for every way ``field`` can be wrong: its shape, its dtype, and non-finite values where that
    matters; the spoilt array keeps everything else right."""
    wrong_dtype = np.float64 if field.dtype.kind in 'fb' else np.float32
    out = [('shape', lambda a: np.repeat(a[..., None], 2, axis=-1)),  # e.g. a value of [T, B, 2]
           ('dtype', lambda a: a.astype(wrong_dtype))]
    if field.finite and field.dtype.kind == 'f':
        out.append(('nan', lambda a: np.where(np.arange(a.size).reshape(a.shape) == 0, np.nan, a).astype(a.dtype)))
        out.append(('inf', lambda a: np.full_like(a, np.inf)))
    if field.bounds is not None:
        out.append(('range', lambda a: np.full_like(a, field.bounds[1])))
    return out


def every_spoilt_field() -> List[Tuple[str, str, str]]:
    """(case, field, how) for every case, every field of its spec and every way to spoil it."""
    return [(case, f.name, how) for case in CASES for f in spec_of(case) for how, _ in spoilers(f)]


def spoilt_chunk(case: str, name: str, how: str, spec: ChunkSpec) -> Dict[str, np.ndarray]:
    data = honest_chunk(spec)
    data[name] = dict(spoilers(spec[name]))[how](data[name])
    return data


def learn_fails_once(monkeypatch, policy, error: Exception) -> None:
    """Make ``policy.learn`` raise ``error`` on its first call and learn as before after it (an update that breaks on
    one chunk)."""
    learn = policy.learn
    calls = []

    def failing_once(chunk, progress=0.0):
        calls.append(1)
        if len(calls) == 1:
            raise error
        return learn(chunk, progress)

    monkeypatch.setattr(policy, 'learn', failing_once)
