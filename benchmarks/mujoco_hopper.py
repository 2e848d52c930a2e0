"""MuJoCo benchmark: Hopper-v5 return after 300k env steps, clipped PPO against KL-penalty PPO.

Both variants run the ready Hopper config (Gaussian policy, observation normalisation, reward
scaling, 2048 steps per update) with the same budget; only ``policy.learn.objective`` differs.
The figure is the mean raw return of 16 deterministic evaluation episodes at the end.
Prints a table and writes ``benchmarks/results/mujoco_hopper.json``.

    .venv/bin/python benchmarks/mujoco_hopper.py [--seeds 0 1 2] [--steps 300000] [--only clip|kl_penalty]
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

from sparring.dizoo.mujoco.config.hopper_ppo import config as hopper_config
from sparring.framework import serial_pipeline

from results_file import add_smoke, apply_smoke, merge_results

OBJECTIVES = ('clip', 'kl_penalty')


def run(objective: str, seed: int, steps: int, workdir: str) -> dict:
    config = copy.deepcopy(hopper_config)
    config['policy']['learn']['objective'] = objective
    config['env'].update(n_evaluator_episodes=16, stop_value=None)
    config['train'] = dict(config['train'], max_env_steps=steps, eval_every_iters=0, progress_bar=False,
                           tensorboard=False)
    summary = serial_pipeline(config, seed=seed, exp_name=os.path.join(workdir, f'{objective}_seed{seed}'))
    return {k: summary[k] for k in ('env_steps', 'wall_seconds', 'eval_mean', 'eval_std', 'train_iter',
                                    'collect_steps_per_second')}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--steps', type=int, default=300_000)
    parser.add_argument('--only', choices=OBJECTIVES, default=None)
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, seeds=[0], steps=2048, only='clip')
    results = dict(machine=dict(cpus=os.cpu_count(), python=platform.python_version(), torch=torch.__version__,
                                load_average_at_start=os.getloadavg()),
                   started=time.strftime('%Y-%m-%d %H:%M:%S'), env_steps=args.steps)
    with tempfile.TemporaryDirectory() as workdir:
        for objective in OBJECTIVES if args.only is None else (args.only,):
            runs = {seed: run(objective, seed, args.steps, workdir) for seed in args.seeds}
            means = [r['eval_mean'] for r in runs.values()]
            results[objective] = dict(per_seed=runs, mean_return=statistics.mean(means),
                                      median_return=statistics.median(means))
            for seed, r in runs.items():
                print(f'Hopper-v5 {objective} seed {seed}: eval {r["eval_mean"]:.0f} +- {r["eval_std"]:.0f} after '
                      f'{r["env_steps"]} steps, {r["wall_seconds"]:.0f} s, collect {r["collect_steps_per_second"]:.0f} '
                      f'steps/s')
            print(f'Hopper-v5 {objective}: mean over seeds {results[objective]["mean_return"]:.0f}')
    merge_results('mujoco_hopper', results)  # --only keeps the other objective's last figures


if __name__ == '__main__':
    main()
