"""Shared by the league benchmarks: play a run's checkpointed player against bots on fixed seeds, and
start a results dict with the machine it ran on."""
from __future__ import annotations

import json
import os
import platform
import time
from typing import Dict, Sequence

import torch

from results_file import cpu_model, merge_results
from sparring.config import load_config
from sparring.worker.checkpoint import CheckpointManager
from sparring.config.registry import BOT_REGISTRY, POLICY_REGISTRY
from sparring.worker.battle_evaluator import BattleEvaluator
from sparring.worker.env.battle import make_battle_env

EVAL_SEED = 2024
EVAL_ENVS = 50


def evaluate_checkpoint(exp_dir: str, player_id: str, opponents: Sequence[str], games: int) -> Dict[str, dict]:
    """The newest checkpoint's ``player_id`` against each bot in ``opponents``, ``games`` games each.

    The envs and the bots are seeded the same on every call, and the player samples with the RNG
    state its checkpoint holds, so two players that compute the same function play the same games.
    """
    cfg = load_config(exp_dir)
    state = CheckpointManager.load(CheckpointManager(exp_dir).latest())
    make_env = lambda: make_battle_env(cfg.env, EVAL_ENVS, EVAL_SEED)  # noqa: E731
    probe = make_env()
    policy = POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, probe.observation_space, probe.action_space)
    policy.load_state_dict(state['learners'][player_id]['policy'])
    bots = [(name, BOT_REGISTRY.get(name)({}, probe.observation_space, probe.action_space, seed=EVAL_SEED + i))
            for i, name in enumerate(opponents)]
    probe.close()
    results = BattleEvaluator(make_env, games).evaluate(policy, bots)
    return {r.opponent_id: dict(r.summary(), score=r.score) for r in results}


def start_results(args) -> dict:
    """The results dict a benchmark fills: the machine (with its load, it is shared), start time, arguments."""
    torch.set_num_threads(1)
    return dict(machine=dict(cpus=os.cpu_count(), cpu_model=cpu_model(), python=platform.python_version(),
                             torch=torch.__version__, load_average=os.getloadavg()), started=time.strftime('%Y-%m-%d %H:%M:%S'),
                args=vars(args))


def outcome_text(summary: dict) -> str:
    return f'win {summary["win"]:.3f} draw {summary["draw"]:.3f} loss {summary["loss"]:.3f}'


def save_results(name: str, results: dict) -> str:
    """Into ``benchmarks/results/<name>.json`` (values JSON cannot hold become strings)."""
    return merge_results(name, json.loads(json.dumps(results, default=str)))
