"""Configs the tests share: the tiny tic-tac-toe league and the parallel block that keeps a test run short.

Tests import them (``from tests.configs import tiny_league_config, fast_parallel``) and override what they
test with keywords, so each test shows only how its config differs from the tiny one.
"""
from __future__ import annotations

import copy
import os
from typing import Any, Dict, Optional

# One self-play PPO player on tic-tac-toe, small enough for a test to run a few rounds in seconds.
TINY_LEAGUE: Dict[str, Any] = dict(
    env=dict(type='tictactoe', collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=4),
    policy=dict(type='ppo', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8),
                learn=dict(epochs=1, num_minibatches=1)),
    league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=4))),
    train=dict(max_env_steps=256, eval_every_iters=0, checkpoint_every_iters=0, progress_bar=False,
               tensorboard=False),
)

# A parallel run for a test: beats, saves and log lines often, short drains; patient with workers on a
# loaded machine (60 s before a silent one counts as gone).
FAST_PARALLEL: Dict[str, Any] = dict(
    collectors=1, evaluators=0, heartbeat_seconds=0.5, worker_timeout_seconds=60.0, save_every_seconds=0.5,
    log_every_seconds=1.0, drain_timeout_seconds=3.0, shutdown_seconds=30.0,
)


def merged(base: Dict[str, Any], overrides: Dict[str, Any]) -> Dict[str, Any]:
    """``overrides`` deep-merged over a copy of ``base``. A dict that names another ``type`` than the base's
    (``policy=dict(type='dqn', ...)`` over PPO) replaces it whole: the base's keys belong to the other type."""
    out = copy.deepcopy(base)
    for key, value in overrides.items():
        old = out.get(key)
        if isinstance(value, dict) and isinstance(old, dict) and value.get('type', old.get('type')) == old.get('type'):
            out[key] = merged(old, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def tiny_league_config(exp_name: Optional[os.PathLike | str] = None, **sections: Any) -> Dict[str, Any]:
    """``TINY_LEAGUE`` with ``sections`` (``policy=``, ``train=``, ``seed=``, ...) merged over it (see
    :func:`merged`); ``exp_name`` first when given, as a string."""
    head = {} if exp_name is None else dict(exp_name=str(exp_name))
    return merged(dict(head, **TINY_LEAGUE), sections)


def fast_parallel(**overrides: Any) -> Dict[str, Any]:
    """``FAST_PARALLEL`` with ``overrides``: the ``parallel`` section of a test's config."""
    return merged(FAST_PARALLEL, overrides)
