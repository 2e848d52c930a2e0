"""PPO variants: KL-penalty PPO and OpenAI Five's gradient clip on Pendulum-v1, LSTM against MLP on cue recall.

* ``pendulum_kl``: ``objective='kl_penalty'`` (adaptive beta, hinge, early stop, value replay) on
  Pendulum-v1, the final evaluation return after 200k env steps (target: >= -250), with the
  beta and learning-rate multiplier the run ended with.
* ``pendulum_five``: the clipped objective with ``grad_clip='five'`` instead of the global-norm
  clip, same budget, for comparison with ``benchmarks/ppo_cartpole.py``'s Pendulum figures.
* ``memory``: cue recall (4 cues, 8 blank steps) with the LSTM and with an MLP, same budget
  (100k env steps, stop at a success rate of 0.95): env steps to 0.95 and the final success
  rate. The MLP cannot see the cue at the query, so it stays at chance (0.25).

Prints a table and writes ``benchmarks/results/ppo_variants.json``.

    .venv/bin/python benchmarks/ppo_variants.py [--seeds 0 1 2] [--only pendulum_kl|pendulum_five|memory] [--jobs 3]

``--jobs`` runs the seeds of a section in that many processes at once (one torch thread each).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import copy
import os
import platform
import tempfile
import time

import torch

from sparring.dizoo.classic_control.config.pendulum_ppo_kl import config as pendulum_kl_config
from sparring.dizoo.classic_control.config.pendulum_ppo import config as pendulum_config
from sparring.dizoo.memory.config.cue_recall_lstm import config as lstm_config
from sparring.dizoo.memory.config.cue_recall_mlp import config as mlp_config
from sparring.framework import serial_pipeline
from sparring.worker.checkpoint import CheckpointManager

from results_file import add_smoke, apply_smoke, merge_results, smoke_config

SUMMARY_KEYS = ('env_steps', 'wall_seconds', 'eval_mean', 'eval_std', 'reached_stop_value', 'stop_env_steps',
                'stop_seconds', 'collect_steps_per_second')


SMOKE = False  # --smoke: every run cut to a few hundred env steps (seeds run in this process)


def run(config: dict, seed: int, workdir: str, name: str, full_budget: bool = False) -> dict:
    torch.set_num_threads(1)
    config = smoke_config(config) if SMOKE else copy.deepcopy(config)
    if full_budget:  # report the return after the whole budget, not the first one over stop_value
        config['env']['stop_value'] = None
    config['train'] = dict(config.get('train', {}), progress_bar=False, tensorboard=False)
    summary = serial_pipeline(config, seed=seed, exp_name=os.path.join(workdir, f'{name}_seed{seed}'))
    out = {k: summary[k] for k in SUMMARY_KEYS}
    if config['policy']['learn'].get('objective') == 'kl_penalty':
        policy = CheckpointManager.load(summary['checkpoint'])['learner']['policy']
        out.update(final_kl_beta=policy['kl_beta'], final_lr_multiplier=policy['lr_multiplier'])
    return out


def five_clip_config() -> dict:
    config = copy.deepcopy(pendulum_config)
    config['exp_name'] = 'runs/pendulum_ppo_five'
    config['policy']['learn'].update(grad_clip='five', max_grad_norm=None, num_minibatches=32)  # as measured
    return config


def run_seeds(config: dict, seeds, workdir: str, name: str, jobs: int, full_budget: bool = False) -> dict:
    """``{seed: run(...)}``, ``jobs`` seeds at a time."""
    if jobs <= 1:
        return {seed: run(config, seed, workdir, name, full_budget) for seed in seeds}
    with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
        futures = {seed: pool.submit(run, config, seed, workdir, name, full_budget) for seed in seeds}
        return {seed: future.result() for seed, future in futures.items()}


def pendulum(name: str, config: dict, seeds, workdir: str, jobs: int) -> dict:
    runs = run_seeds(config, seeds, workdir, name, jobs, full_budget=True)
    for seed, r in runs.items():
        adapted = f'; beta {r["final_kl_beta"]:.3g}, lr x {r["final_lr_multiplier"]:.3g}' if 'final_kl_beta' in r else ''
        print(f'{name} seed {seed}: final eval {r["eval_mean"]:.1f} +- {r["eval_std"]:.1f} after {r["env_steps"]} '
              f'steps, {r["wall_seconds"]:.0f} s{adapted}')
    return dict(per_seed=runs, seeds_at_least_minus_250=sum(r['eval_mean'] >= -250 for r in runs.values()),
                mean_final_eval=sum(r['eval_mean'] for r in runs.values()) / len(runs))


def memory(seeds, workdir: str, jobs: int) -> dict:
    out = {}
    for name, config in (('lstm', lstm_config), ('mlp', mlp_config)):
        runs = run_seeds(config, seeds, workdir, f'cue_recall_{name}', jobs)
        for seed, r in runs.items():
            print(f'cue recall {name} seed {seed}: reached 0.95={r["reached_stop_value"]} at {r["stop_env_steps"]} '
                  f'steps; final success rate {r["eval_mean"]:.3f} after {r["env_steps"]} steps, '
                  f'{r["wall_seconds"]:.0f} s')
        out[name] = dict(per_seed=runs, solved_seeds=sum(r['reached_stop_value'] for r in runs.values()),
                         mean_final_success=sum(r['eval_mean'] for r in runs.values()) / len(runs))
    out['budget_env_steps'] = lstm_config['train']['max_env_steps']
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--only', choices=['pendulum_kl', 'pendulum_five', 'memory'], default=None)
    parser.add_argument('--jobs', type=int, default=1)
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, seeds=[0], jobs=1)
    global SMOKE
    SMOKE = args.smoke
    torch.set_num_threads(1)
    results = dict(machine=dict(cpus=os.cpu_count(), python=platform.python_version(), torch=torch.__version__))
    sections = dict(pendulum_kl=lambda workdir: pendulum('pendulum_kl', pendulum_kl_config, args.seeds, workdir,
                                                         args.jobs),
                    pendulum_five=lambda workdir: pendulum('pendulum_five', five_clip_config(), args.seeds, workdir,
                                                           args.jobs),
                    memory=lambda workdir: memory(args.seeds, workdir, args.jobs))
    with tempfile.TemporaryDirectory() as workdir:
        for name, measure in sections.items():
            if args.only in (None, name):
                # Wall times depend on what else the machine runs: the load is kept beside them.
                started, load = time.strftime('%Y-%m-%d %H:%M:%S'), os.getloadavg()
                results[name] = dict(measure(workdir), started=started, jobs=args.jobs,
                                     load_average_at_start=load, load_average_at_end=os.getloadavg())
    merge_results('ppo_variants', results)  # --only keeps the other sections' last figures


if __name__ == '__main__':
    main()
