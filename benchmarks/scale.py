"""Scaling out: env steps/s and learner samples/s by collectors, learner replicas and launcher, side by side.

For each launcher (``local`` processes, ``ray`` actors on a Ray instance started for the run), each
collector count (1, 2, 4) and each replica count (1, 2), a connect-four league runs ``--seconds``
in parallel mode; the rates are measured in the steady state (from the fourth chunk to the end of
collection), so start-up is not counted. Learner samples/s are the samples that went through gradient
steps, summed over a player's replicas. CUDA next to CPU where a GPU exists (it says 'no GPU'
otherwise). Writes ``benchmarks/results/scale.json``.

    python benchmarks/scale.py --seconds 60
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_file import add_smoke, apply_smoke, merge_results


def league(exp: str, seconds: float, collectors: int, replicas: int, launcher: str, device: str = 'cpu') -> dict:
    return dict(
        exp_name=exp, seed=0,
        env=dict(type='connect_four', collector_env_num=16, evaluator_env_num=4, n_evaluator_episodes=8),
        policy=dict(type='ppo', device=device, model=dict(hidden_sizes=[256, 256]), collect=dict(n_steps=32),
                    learn=dict(epochs=4, num_minibatches=4, lr=3e-4)),
        league=dict(type='one_vs_one'),
        train=dict(max_env_steps=10 ** 9, max_wall_seconds=seconds, eval_every_iters=0, checkpoint_every_iters=0,
                   progress_bar=False, tensorboard=False),
        parallel=dict(collectors=collectors, evaluators=0, learner_replicas=replicas, launcher=launcher,
                      log_every_seconds=30.0, max_chunks_ahead=max(2, collectors)),
    )


def _learner_samples(commander) -> float:
    return sum(w.stats.get('samples_consumed', 0.0) for w in commander.sessions.workers.values() if w.role == 'learner')


def measure(workdir: str, seconds: float, collectors: int, replicas: int, launcher: str, device: str = 'cpu') -> dict:
    from sparring.framework.parallel import ParallelRun
    from sparring.framework.run_setup import prepare_config
    from sparring.worker.runtime import set_torch_threads
    name = f'{launcher}_c{collectors}_r{replicas}_{device.replace(":", "")}'
    cfg = prepare_config(league(os.path.join(workdir, name), seconds, collectors, replicas, launcher, device))
    set_torch_threads(cfg.torch_threads)
    run = ParallelRun(cfg)
    commander = run.commander
    try:
        run.start()
        while commander.coordinator.counters['chunks'] < 4 and commander.coordinator.phase == 'collect':
            run.step()
        t0, steps0, samples0 = time.monotonic(), commander.coordinator.env_steps, _learner_samples(commander)
        t1, steps1, samples1 = t0, steps0, samples0
        while not run.finished:
            run.step()
            if commander.coordinator.phase == 'collect':
                t1, steps1, samples1 = time.monotonic(), commander.coordinator.env_steps, _learner_samples(commander)
        run.close()
    finally:
        if not run.closed:
            run.close(abort='benchmark failed')
    span = max(t1 - t0, 1e-9)
    figures = dict(launcher=launcher, collectors=collectors, replicas=replicas, device=device,
                   env_steps_per_second=round((steps1 - steps0) / span, 1),
                   learner_samples_per_second=round((samples1 - samples0) / span, 1), seconds_measured=round(span, 1))
    print(figures, flush=True)
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=60.0)
    parser.add_argument('--collectors', default='1,2,4')
    parser.add_argument('--replicas', default='1,2')
    parser.add_argument('--launchers', default='local,ray')
    parser.add_argument('--repeats', type=int, default=1)
    add_smoke(parser)
    args = parser.parse_args(argv)
    apply_smoke(args, seconds=5.0, collectors='1', replicas='1', launchers='local')
    os.environ.setdefault('RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER', '0')  # a Ray instance of our own stays on 127.0.0.1
    workdir = tempfile.mkdtemp(prefix='scale_')
    rows = []
    # Launchers interleaved per setting (and the order alternated between repeats), so that a machine whose
    # load drifts during the run favours neither.
    for repeat in range(args.repeats):
        for collectors, replicas in itertools.product(map(int, args.collectors.split(',')),
                                                      map(int, args.replicas.split(','))):
            launchers = args.launchers.split(',')
            for launcher in launchers if repeat % 2 == 0 else launchers[::-1]:
                rows.append(dict(measure(workdir, args.seconds, collectors, replicas, launcher), repeat=repeat))
    gpu = 'no GPU' if not torch.cuda.is_available() else measure(workdir, args.seconds, 2, 1, 'local', 'cuda')
    ratios = {}
    for collectors, replicas in itertools.product(map(int, args.collectors.split(',')), map(int, args.replicas.split(','))):
        rates = {launcher: [r['env_steps_per_second'] for r in rows if r['launcher'] == launcher
                            and r['collectors'] == collectors and r['replicas'] == replicas]
                 for launcher in ('local', 'ray')}
        if rates['local'] and rates['ray']:  # medians over the repeats
            ratios[f'c{collectors}_r{replicas}'] = round(float(np.median(rates['ray']))
                                                         / max(float(np.median(rates['local'])), 1e-9), 3)
    result = dict(seconds=args.seconds, rows=rows, ray_over_local_env_steps=ratios, cuda=gpu,
                  load_average=os.getloadavg(), cpus=os.cpu_count())
    print('ray / local env steps/s:', ratios)
    merge_results('scale', {f'c{args.collectors}_r{args.replicas}_x{args.repeats}': result})
    return 0


if __name__ == '__main__':
    sys.exit(main())
