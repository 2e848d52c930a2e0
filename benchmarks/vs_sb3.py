"""sparring against Stable-Baselines3, side by side: PPO on Pendulum-v1 and PPO update throughput.

Needs SB3 in the venv (``pip install -e .[bench]`` or ``pip install stable-baselines3``); installs nothing.
Every run is a fresh child process with one torch thread; for each seed the two libraries run back to
back (the order alternates by seed), so the machine's load falls on both alike. The load average is
printed and stored with every run. One-time costs of a fresh process (imports, including the
``torch._dynamo`` import of the first optimiser) are paid before either library's clock starts.
CartPole-v1 to 475 has a script of its own, with many seeds and a confidence interval:
``cartpole_vs_sb3.py``.

* ``pendulum``: Pendulum-v1 for 100k env steps, sparring's ready ``pendulum_ppo`` config (its budget set
  to 100k) against SB3 rl-zoo (4 envs x 1024 steps, 10 epochs, batch 64, lr 1e-3, gamma 0.9, gSDE);
  8 deterministic evaluation episodes at the end, and env steps per wall-second of the whole run.
* ``update``: samples per second of one PPO update on the same network, batch and update settings:
  the CartPole 64-64 MLP (batch 256, 20 epochs of one minibatch) and the connect-four CNN (one 4x4
  convolution of 64 channels, 256 hidden; batch 4096, 4 epochs of 8 minibatches); sparring's
  ``policy.learn`` against SB3's ``PPO.train()``, median of repeated updates.

    .venv/bin/python benchmarks/vs_sb3.py [--pendulum-seeds 0 1 2] [--only pendulum update]

``--smoke``: one Pendulum seed of 1,024 env steps, written to a temporary folder (the update rows have their own
smoke run, ``update_throughput.py --smoke``); without SB3 installed it runs sparring's side and says so.

Writes ``benchmarks/results/vs_sb3.json`` (through ``results_file``): every seed, medians and ratios (its
``cartpole`` entries were measured by this script's earlier CartPole protocol, before ``cartpole_vs_sb3.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from peer_runs import load, prepare_process  # noqa: E402
from results_file import add_smoke, apply_smoke, peer_missing  # noqa: E402

EVAL_EPISODES = 8
PENDULUM_STEPS = 100_000
SB3_PENDULUM = dict(n_steps=1024, gae_lambda=0.95, gamma=0.9, n_epochs=10, ent_coef=0.0, learning_rate=1e-3,
                    clip_range=0.2, use_sde=True, sde_sample_freq=4)
SB3_PENDULUM_ENVS = 4


def sparring_run(task: str, seed: int, workdir: str, steps: int) -> dict:
    import copy
    from sparring.dizoo.classic_control.config.pendulum_ppo import config
    from sparring.framework import serial_pipeline
    config = copy.deepcopy(config)
    config['train'] = dict(config.get('train', {}), progress_bar=False, tensorboard=False,
                           max_env_steps=steps)
    config['torch_threads'] = 1
    config['env']['stop_value'] = None
    summary = serial_pipeline(config, seed=seed, exp_name=os.path.join(workdir, f'sparring_{task}_{seed}'))
    return dict(eval_mean=summary['eval_mean'], eval_std=summary['eval_std'], env_steps=summary['env_steps'],
                seconds=summary['wall_seconds'], steps_per_second=summary['env_steps'] / summary['wall_seconds'])


def sb3_pendulum(seed: int, steps: int) -> dict:
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    started = time.perf_counter()
    env = make_vec_env('Pendulum-v1', n_envs=SB3_PENDULUM_ENVS, seed=seed)
    model = PPO('MlpPolicy', env, seed=seed, device='cpu', verbose=0, **SB3_PENDULUM)
    model.learn(steps)
    seconds = time.perf_counter() - started
    eval_env = make_vec_env('Pendulum-v1', n_envs=EVAL_EPISODES, seed=seed + 10_000)
    mean, std = evaluate_policy(model, eval_env, n_eval_episodes=EVAL_EPISODES, deterministic=True)
    return dict(eval_mean=float(mean), eval_std=float(std), env_steps=model.num_timesteps, seconds=seconds,
                steps_per_second=model.num_timesteps / seconds)


def child(library: str, task: str, seed: int, workdir: str, steps: int) -> dict:
    prepare_process()
    before = load()
    result = sparring_run(task, seed, workdir, steps) if library == 'sparring' else sb3_pendulum(seed, steps)
    return dict(result, load_before=before, load_after=load())


def run_child(library: str, task: str, seed: int, workdir: str, steps: int) -> dict:
    out = subprocess.run([sys.executable, os.path.abspath(__file__), '--child', library, task, str(seed), workdir,
                          str(steps)],
                         check=True, capture_output=True, text=True, cwd=HERE)
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the side-by-side runs ------------------------------------------------------------------------
def side_by_side(task: str, seeds, workdir: str, steps: int, libraries=('sparring', 'sb3')) -> dict:
    per_seed = {}
    for seed in seeds:
        order = libraries if seed % 2 == 0 else tuple(reversed(libraries))
        per_seed[seed] = {library: run_child(library, task, seed, workdir, steps) for library in order}
        print(f'{task} seed {seed}: ' + '  '.join(f'{lib} {_brief(task, r)} (load {r["load_before"][0]})'
                                                   for lib, r in per_seed[seed].items()), flush=True)
    if 'sb3' not in libraries:  # a smoke run without SB3: sparring's side alone, nothing to compare
        return dict(per_seed=per_seed)
    return dict(per_seed=per_seed, **_pendulum_summary(per_seed))


def _brief(task: str, r: dict) -> str:
    return f'{r["eval_mean"]:.0f} at {r["env_steps"]} steps, {r["steps_per_second"]:.0f} steps/s'


def _pendulum_summary(per_seed: dict) -> dict:
    def figures(lib):
        return dict(median_eval=statistics.median(r[lib]['eval_mean'] for r in per_seed.values()),
                    median_steps_per_second=statistics.median(r[lib]['steps_per_second'] for r in per_seed.values()))
    ours, theirs = figures('sparring'), figures('sb3')
    ratio = ours['median_steps_per_second'] / theirs['median_steps_per_second']
    return dict(sparring=ours, sb3=theirs, steps_per_second_ratio=ratio,
                target_met=ours['median_eval'] >= -150 and ratio >= 2.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--pendulum-seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--only', nargs='+', choices=['pendulum', 'update'], default=['pendulum', 'update'])
    parser.add_argument('--update-threads', type=int, nargs='+', default=[1],
                        help='torch threads of the update micro-benchmark (each count measured on its own)')
    parser.add_argument('--entry', default=None,
                        help='store the figures under this name in the JSON (default: as the top-level entries)')
    parser.add_argument('--pendulum-steps', type=int, default=PENDULUM_STEPS, help='env steps of each Pendulum run')
    parser.add_argument('--child', nargs=5, metavar=('LIBRARY', 'TASK', 'SEED', 'WORKDIR', 'STEPS'),
                        help=argparse.SUPPRESS)
    add_smoke(parser)
    args = apply_smoke(parser.parse_args(), pendulum_seeds=[0], only=['pendulum'], pendulum_steps=1024,
                       entry='smoke')
    if args.child:
        library, task, seed, workdir, steps = args.child
        print(json.dumps(child(library, task, int(seed), workdir, int(steps))))
        return
    import tempfile

    import torch
    from results_file import cpu_model, merge_results
    libraries = ('sparring', 'sb3')
    if peer_missing('stable_baselines3', 'SB3', "pip install -e '.[bench]'"):
        if not args.smoke:
            parser.error("needs Stable-Baselines3 for its side: pip install -e '.[bench]'")
        libraries = ('sparring',)
    sb3_version = None
    if 'sb3' in libraries:
        import stable_baselines3
        sb3_version = stable_baselines3.__version__
    results = dict(machine=dict(cpus=os.cpu_count(), cpu_model=cpu_model(), python=platform.python_version(),
                                torch=torch.__version__, stable_baselines3=sb3_version),
                   started=time.strftime('%Y-%m-%d %H:%M:%S'), load_at_start=load())
    print(f'load average at start: {results["load_at_start"]}', flush=True)
    with tempfile.TemporaryDirectory() as workdir:
        if 'pendulum' in args.only:
            results['pendulum'] = p = side_by_side('pendulum', args.pendulum_seeds, workdir, args.pendulum_steps,
                                                   libraries)
            if 'sb3' in libraries:
                print(f'Pendulum median eval at {args.pendulum_steps:,} env steps: sparring {p["sparring"]["median_eval"]:.0f}, SB3 '
                      f'{p["sb3"]["median_eval"]:.0f}; steps/s ratio {p["steps_per_second_ratio"]:.2f}', flush=True)
        if 'update' in args.only:
            from update_throughput import compare_updates
            results['update'] = compare_updates(run_in_child=_update_child, threads=args.update_threads)
    results['load_at_end'] = load()
    print(f'load average at end: {results["load_at_end"]}')
    merge_results('vs_sb3', {args.entry: dict(results, seeds=args.pendulum_seeds)} if args.entry else results)


def _update_child(name: str, threads: int) -> dict:
    out = subprocess.run([sys.executable, os.path.join(HERE, 'update_throughput.py'), name, str(threads)],
                         check=True, capture_output=True, text=True, cwd=HERE)
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == '__main__':
    main()
