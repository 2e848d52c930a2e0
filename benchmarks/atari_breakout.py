"""Atari benchmark: PPO with the Nature CNN trains on Breakout end to end for 100k frames (25k agent steps).

The run is the first 100k frames of the ready config's 10M-agent-step run: its learning rate
and clip range are annealed over those 10M steps, so over the first 25k they stay within 0.25 %
of their initial values; the benchmark therefore holds them constant (``anneal_lr`` and
``anneal_clip_range`` off) rather than annealing them to zero over its short budget.
Reports env steps/s (collection alone and the whole run) and compares the trained policy's
score in whole games (raw score, no life-loss ends, no clipping) with a uniformly random
policy's on the same preprocessing, both greedy and sampled actions for the trained one.
Prints a table and writes ``benchmarks/results/atari_breakout.json``.

    .venv/bin/python benchmarks/atari_breakout.py [--seeds 0] [--frames 100000] [--games 16]
"""
from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import tempfile
import time

import torch

from sparring.dizoo.atari.config.breakout_ppo import config as breakout_config
from sparring.framework import serial_pipeline
from sparring.framework.checkpoint import CheckpointManager
from sparring.framework.registry import POLICY_REGISTRY
from sparring.framework.runtime import set_torch_threads
from sparring.policy.bot import RandomBot
from sparring.config import load_config
from sparring.worker.env.gym_env import evaluator_env_config
from sparring.worker.env.manager import make_env_manager
from sparring.worker.evaluator import Evaluator

from results_file import merge_results

EVAL_SEED = 12_345


class Sampling:
    """A policy seen by the evaluator as acting greedily, but sampling its actions (PPO's own play)."""

    def __init__(self, policy) -> None:
        self.policy = policy
        self.version = policy.version

    def act(self, obs, state=None, deterministic: bool = False, action_mask=None):
        return self.policy.act(obs, state, deterministic=False, action_mask=action_mask)


def whole_games(policy, games: int, seed: int) -> dict:
    """Raw scores of ``games`` whole games on the evaluation envs (8 in process)."""
    env_cfg = evaluator_env_config(breakout_config['env'])
    with make_env_manager(env_cfg, 8, seed) as env:
        started = time.perf_counter()
        result = Evaluator(env, policy, games).evaluate()
    return dict(mean=result.mean, std=result.std, min=result.min, max=result.max, games=games,
                agent_steps=result.env_steps, seconds=time.perf_counter() - started)


def train(seed: int, agent_steps: int, games: int, workdir: str) -> dict:
    config = copy.deepcopy(breakout_config)
    config['env']['n_evaluator_episodes'] = games
    config['policy']['learn'].update(anneal_lr=False, anneal_clip_range=False)  # see the module docstring
    config['train'] = dict(config['train'], max_env_steps=agent_steps, eval_every_iters=0, progress_bar=False,
                           tensorboard=False)
    exp = os.path.join(workdir, f'breakout_seed{seed}')
    summary = serial_pipeline(config, seed=seed, exp_name=exp)
    # The final policy again, from its checkpoint, to score its sampled actions too.
    cfg = load_config(exp)
    state = CheckpointManager.load(CheckpointManager(exp).latest())
    with make_env_manager(cfg.env, 1) as probe:
        policy = POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, probe.observation_space, probe.action_space, seed)
    policy.load_state_dict(state['learner']['policy'])
    return dict(agent_steps=summary['env_steps'], frames=4 * summary['env_steps'],
                wall_seconds=summary['wall_seconds'], train_iter=summary['train_iter'],
                collect_agent_steps_per_second=summary['collect_steps_per_second'],
                overall_agent_steps_per_second=summary['env_steps'] / summary['wall_seconds'],
                greedy=dict(mean=summary['eval_mean'], std=summary['eval_std'], games=games),
                sampled=whole_games(Sampling(policy), games, EVAL_SEED + seed))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0])
    parser.add_argument('--frames', type=int, default=100_000, help='emulator frames of training (4 per agent step)')
    parser.add_argument('--games', type=int, default=16, help='whole games per score')
    args = parser.parse_args()
    set_torch_threads(1)
    results = dict(machine=dict(cpus=os.cpu_count(), python=platform.python_version(), torch=torch.__version__,
                                load_average_at_start=os.getloadavg()),
                   started=time.strftime('%Y-%m-%d %H:%M:%S'), frames=args.frames, games_per_score=args.games)
    with make_env_manager(breakout_config['env'], 1) as probe:
        space = (probe.observation_space, probe.action_space)
    results['random_policy'] = whole_games(RandomBot({}, *space, seed=0), args.games, EVAL_SEED)
    print(f'random policy: {results["random_policy"]["mean"]:.2f} +- {results["random_policy"]["std"]:.2f} '
          f'over {args.games} whole games')
    with tempfile.TemporaryDirectory() as workdir:
        runs = {seed: train(seed, args.frames // 4, args.games, workdir) for seed in args.seeds}
    results['ppo'] = dict(per_seed=runs,
                          median_greedy=statistics.median(r['greedy']['mean'] for r in runs.values()),
                          median_sampled=statistics.median(r['sampled']['mean'] for r in runs.values()))
    for seed, r in runs.items():
        print(f'seed {seed}: {r["frames"]} frames in {r["wall_seconds"]:.0f} s; agent steps/s collecting '
              f'{r["collect_agent_steps_per_second"]:.0f}, overall {r["overall_agent_steps_per_second"]:.0f} '
              f'({4 * r["overall_agent_steps_per_second"]:.0f} frames/s); whole-game score greedy '
              f'{r["greedy"]["mean"]:.2f} +- {r["greedy"]["std"]:.2f}, sampled {r["sampled"]["mean"]:.2f} +- '
              f'{r["sampled"]["std"]:.2f} (random {results["random_policy"]["mean"]:.2f})')
    merge_results('atari_breakout', results)


if __name__ == '__main__':
    main()
