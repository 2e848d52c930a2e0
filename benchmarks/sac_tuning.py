"""Variants of the ready Pendulum SAC config on the tuning seeds: env steps to -200, the return at the end, CPU per step.

Each variant is a list of ``--set`` overrides of ``pendulum_sac.py`` (see ``sac_vs_sb3.py``), run in fresh
one-thread child processes of ``sac_vs_sb3.py`` for ``--steps`` env steps (20k in the protocol) with the same
evaluations (8 greedy episodes every 1000 env steps), so one run gives both figures: the first evaluation at or
above -200 and the last one. The returns do not depend on the machine's load (one thread, seeded), so the runs
go ``--jobs`` at a time, niced, seeds interleaved (every variant's seed 0, then every variant's seed 1, ...).
CPU milliseconds per env step are each process's own CPU time over its env steps (evaluations included, a few
per cent): comparable between variants on one machine, not a wall-time figure.

Tune on seeds 0-7 only; 100-102 are the reported seeds. Figures are merged into
``benchmarks/results/sac_tuning.json`` after every run, under ``--results-key`` (default ``pendulum_tuning``),
so a stopped sweep keeps what it finished.

    .venv/bin/python benchmarks/sac_tuning.py [--variants default h128 ...] [--seeds 0 1 2 3 4 5 6 7] [--jobs 2]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from results_file import add_smoke, apply_smoke, cpu_model, merge_results  # noqa: E402
from sac_vs_sb3 import load, spawn_child  # noqa: E402

HIDDEN = 'policy.model.hidden_sizes'
LR = 'policy.learn.lr'
UPDATES = 'policy.learn.updates_per_chunk'  # the ready config's chunks hold 8 env steps
# Every variant names its widths and lr, so it means the same whatever the ready config holds now (the sweep of
# results/sac_tuning.json ran against the ready config of then, SAC's defaults, and chose 'h128_lr1e-3').
SAC_DEFAULTS = [f'{HIDDEN}=[256,256]', f'{LR}=3e-4']
VARIANTS = {
    'default': SAC_DEFAULTS,  # one gradient step per env step
    'h128': [f'{HIDDEN}=[128,128]', f'{LR}=3e-4'],
    'h64': [f'{HIDDEN}=[64,64]', f'{LR}=3e-4'],
    'h128_lr1e-3': [f'{HIDDEN}=[128,128]', f'{LR}=1e-3'],
    'h64_lr1e-3': [f'{HIDDEN}=[64,64]', f'{LR}=1e-3'],
    'h128_half_lr1e-3': [f'{HIDDEN}=[128,128]', f'{UPDATES}=4', f'{LR}=1e-3'],  # one gradient step per 2 env steps
    'h256_half_lr1e-3': [f'{HIDDEN}=[256,256]', f'{UPDATES}=4', f'{LR}=1e-3'],
    'h64_half_lr1e-3': [f'{HIDDEN}=[64,64]', f'{UPDATES}=4', f'{LR}=1e-3'],
}


def run_figures(result: dict) -> dict:
    """What the comparison needs from one child's result (its curve kept for the record)."""
    return dict(target_env_steps=result['target_env_steps'], final_eval=result['final_eval'],
                env_steps=result['env_steps'], cpu_seconds=result['cpu_seconds'],
                cpu_ms_per_env_step=1000.0 * result['cpu_seconds'] / result['env_steps'],
                curve=[(steps, round(mean, 1)) for steps, mean, *_ in result['curve']],
                load_before=result['load_before'], load_after=result['load_after'])


def variant_summary(runs: dict) -> dict:
    """Medians and worst cases over the seeds run so far (a run that never reached -200 counts as infinite)."""
    inf = float('inf')
    to_target = [r['target_env_steps'] or inf for r in runs.values()]
    finals = [r['final_eval'] for r in runs.values()]
    return dict(seeds=len(runs), reached=sum(t != inf for t in to_target),
                median_target_env_steps=statistics.median(to_target), worst_target_env_steps=max(to_target),
                median_final_eval=statistics.median(finals), worst_final_eval=min(finals),
                mean_final_eval=statistics.fmean(finals),
                median_cpu_ms_per_env_step=statistics.median(r['cpu_ms_per_env_step'] for r in runs.values()))


def previous_record(args) -> dict:
    """The sweep stored under ``--results-key`` if it ran at the same budget (to extend or resume it), else a new one."""
    path = os.path.join(HERE, 'results', 'sac_tuning.json')
    if os.path.exists(path):
        with open(path) as f:
            record = json.load(f).get(args.results_key)
        if record and (record['steps'], record['eval_every']) == (args.steps, args.eval_every):
            for name, entry in record['variants'].items():
                if entry['overrides'] != VARIANTS.get(name):
                    raise SystemExit(f'{args.results_key}: variant {name!r} was run with {entry["overrides"]}, '
                                     f'now defined as {VARIANTS.get(name)}; use another --results-key')
            return record
    return dict(cpu=cpu_model(), cores=os.cpu_count(), torch_threads=1, steps=args.steps,
                eval_every=args.eval_every, seeds=[], load_start=load(), variants={})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--variants', nargs='+', default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument('--seeds', type=int, nargs='+', default=list(range(8)))
    parser.add_argument('--steps', type=int, default=20_000)
    parser.add_argument('--eval-every', type=int, default=1000)
    parser.add_argument('--jobs', type=int, default=2, help='child processes at a time')
    parser.add_argument('--nice', type=int, default=10, help="the children's niceness increment")
    parser.add_argument('--workdir', default='/tmp/sparring_sac_tuning')
    parser.add_argument('--results-key', default='pendulum_tuning')
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, variants=['default'], seeds=[0], steps=300, eval_every=150, jobs=1,
                workdir=tempfile.mkdtemp(prefix='sparring-smoke-sac-tuning-'))
    if set(args.seeds) & {100, 101, 102}:
        parser.error('--seeds: 100-102 are the reported seeds; tune on others (0-7)')
    record = previous_record(args)
    for name in args.variants:
        record['variants'].setdefault(name, dict(overrides=VARIANTS[name], runs={}))
    record['seeds'] = sorted(set(record['seeds']) | set(args.seeds))
    lock = threading.Lock()

    def one(name: str, seed: int) -> None:
        result = spawn_child('sparring', 'pendulum', seed, args.steps, args.eval_every, False, args.workdir,
                             VARIANTS[name], nice=args.nice)
        figures = run_figures(result)
        with lock:
            entry = record['variants'][name]
            entry['runs'][str(seed)] = figures
            entry['summary'] = variant_summary(entry['runs'])
            record['load_end'] = load()
            merge_results('sac_tuning', {args.results_key: record})
        print(f'{time.strftime("%H:%M:%S")} {name} seed {seed}: target at {figures["target_env_steps"]}, '
              f'final {figures["final_eval"]:.0f}, {figures["cpu_ms_per_env_step"]:.2f} CPU ms/step '
              f'(load {figures["load_before"][0]})', flush=True)

    with ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(one, name, seed) for seed in args.seeds for name in args.variants
                   if str(seed) not in record['variants'][name]['runs']]  # a resumed sweep skips what it has
        for future in futures:
            future.result()
    for name in args.variants:
        print(name, record['variants'][name]['summary'])


if __name__ == '__main__':
    main()
