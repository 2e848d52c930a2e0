"""Expert iteration's self-play against the network's roofline: evaluations per second, batch sizes, env steps/s.

The ready perfect-play config (``dizoo/board_games/config/connect_four_search.py``: 128 games, 50 simulations of
PUCT a move, guided by the player's CNN). Two sections, each measured in fresh processes:

* ``collect``: the player collecting ``--chunks`` chunks by self-play in one process (after one chunk of warm-up):
  env steps per second and per CPU second of collection; the network's evaluations (rows of its forward passes)
  per CPU second and per call, as a histogram of batch sizes; the share of the collection's CPU time inside those
  forward passes. Then, in the same process, the in-process forward roofline
  (:func:`~sparring.worker.inference_forward.forward_rows`, the run's torch threads) in rows per CPU second at the
  mean batch size seen and at powers of two, and the ratio of the collection's evaluations per CPU second to the
  roofline at its mean batch size. CPU seconds, because on a shared machine the wall clock also counts the
  other processes: one core's collection is one thread, and its CPU time is what it used.
* ``run``: whole serial runs of the ready config for ``--seconds`` of training (periodic evaluation and
  checkpoints off; the final evaluation cut to two games against the random bot and not counted): env steps per
  second and per CPU second of the process (the update's two threads included), and the network's evaluations per
  second over the run's wall time (learning included).

``--against TREE`` alternates every measurement between this checkout and another (e.g. a ``git worktree add`` of
the commit before; its ``.typecheck/sparring`` is imported), ``--repeats`` of each, and records both sides'
medians and their ratio. Take timings under the bench lock on a shared machine.

    PYTHONPATH=.typecheck python benchmarks/search_selfplay.py [--sections collect run] [--chunks 2] [--seconds 60]
                                                             [--against ../before --repeats 3] [--label NAME]
    PYTHONPATH=.typecheck python benchmarks/search_selfplay.py --smoke

Writes ``benchmarks/results/search_selfplay.json`` (entry ``--label``, default ``ready``).
"""
from __future__ import annotations

import argparse
import collections
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from results_file import add_smoke, apply_smoke, cpu_model, merge_results

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOFLINE_SIZES = (32, 64, 128, 256, 512, 1024)
ROOFLINE_SECONDS = 1.0  # per batch size
SMOKE = dict(collector_env_num=4, num_simulations=4, n_steps=4)


def _ready_config(smoke: bool) -> dict:
    from sparring.dizoo.board_games.config.connect_four_search import config as ready
    config = copy.deepcopy(ready)
    if smoke:
        config['env']['collector_env_num'] = SMOKE['collector_env_num']
        config['policy']['collect'] = dict(config['policy']['collect'], n_steps=SMOKE['n_steps'])
        config['battle']['collect_search'] = dict(config['battle']['collect_search'],
                                                  num_simulations=SMOKE['num_simulations'])
    return config


class CountingEvaluations:
    """Counts the rows of every ``probabilities_and_value`` call of PPO policies (the search's evaluations, and the
    one pass a move for the recorded log-probabilities and values) and the CPU seconds spent in them."""

    def __init__(self) -> None:
        from sparring.policy.ppo import PPOPolicy
        self.sizes: collections.Counter = collections.Counter()
        self.seconds = 0.0
        original = PPOPolicy.probabilities_and_value

        def counted(policy, obs, action_mask=None):
            started = time.process_time()
            out = original(policy, obs, action_mask)
            self.seconds += time.process_time() - started
            self.sizes[len(obs)] += 1
            return out
        PPOPolicy.probabilities_and_value = counted

    def reset(self) -> None:
        self.sizes.clear()
        self.seconds = 0.0

    @property
    def rows(self) -> int:
        return sum(size * calls for size, calls in self.sizes.items())

    @property
    def calls(self) -> int:
        return sum(self.sizes.values())

    def histogram(self) -> dict:
        """Calls and rows by batch size, in bins by powers of two (``65-128``: 65 to 128 rows)."""
        bins: dict = {}
        for size, calls in sorted(self.sizes.items()):
            high = 1 << max(0, (size - 1).bit_length())
            name = f'{high // 2 + 1}-{high}' if high > 1 else '1'
            entry = bins.setdefault(name, dict(calls=0, rows=0))
            entry['calls'] += calls
            entry['rows'] += size * calls
        return bins


def roofline(policy, sizes, seconds: float = ROOFLINE_SECONDS) -> dict:
    """Rows per CPU second of the in-process forward pass by batch size (random observations of the board's
    planes): CPU seconds, not wall seconds, so that other processes on a shared machine count less."""
    import numpy as np
    from sparring.worker.inference_forward import forward_rows
    rng = np.random.default_rng(0)
    out = {}
    for size in sizes:
        obs = rng.integers(-1, 2, (size, *policy.observation_space.shape)).astype(policy.observation_space.dtype)
        forward_rows(policy, obs)
        calls, started = 0, time.process_time()
        while time.process_time() - started < seconds:
            forward_rows(policy, obs)
            calls += 1
        out[str(size)] = round(size * calls / (time.process_time() - started))
    return out


def collect_child(chunks: int, smoke: bool) -> dict:
    """The ``collect`` section in this process (see the module docstring)."""
    from sparring.config import compile_config
    from sparring.config.registry import POLICY_REGISTRY
    from sparring.worker.battle_collector import BattleCollector
    from sparring.worker.env.battle import make_battle_env
    from sparring.worker.run_kind import collect_search, run_kind
    from sparring.worker.runtime import set_torch_threads
    cfg = compile_config(dict(_ready_config(smoke), exp_name=tempfile.mkdtemp(prefix='search_selfplay_')), save=False)
    set_torch_threads(cfg.torch_threads)
    obs_space, act_space = run_kind(cfg).spaces()
    policy = POLICY_REGISTRY.get('ppo')(cfg.policy, obs_space, act_space, seed=0)
    counting = CountingEvaluations()
    env = make_battle_env(cfg.env, cfg.env.collector_env_num, 0, training=True)
    collector = BattleCollector(env, policy, cfg.policy.collect.n_steps, lambda slot: ('self', policy),
                                player_id='self', search=collect_search(cfg, policy, 0))
    collector.collect()  # warm-up: the first games and the first passes
    counting.reset()
    load_start = os.getloadavg()
    started, cpu_started = time.perf_counter(), time.process_time()
    env_steps = sum(collector.collect().env_steps for _ in range(chunks))
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    load_end = os.getloadavg()
    collector.close()
    mean_batch = counting.rows / max(counting.calls, 1)
    roof = roofline(policy, sorted({max(1, round(mean_batch)), *ROOFLINE_SIZES}),
                    seconds=0.05 if smoke else ROOFLINE_SECONDS)
    per_cpu_second = counting.rows / cpu_seconds
    at_mean = roof[str(max(1, round(mean_batch)))]
    return dict(env_steps=env_steps, seconds=round(seconds, 3), cpu_seconds=round(cpu_seconds, 3),
                env_steps_per_second=round(env_steps / seconds, 1),
                env_steps_per_cpu_second=round(env_steps / cpu_seconds, 1),
                evaluations=counting.rows, calls=counting.calls, mean_batch=round(mean_batch, 1),
                batch_histogram=counting.histogram(), evaluations_per_second=round(counting.rows / seconds),
                evaluations_per_cpu_second=round(per_cpu_second), forward_share=round(counting.seconds / cpu_seconds, 3),
                roofline_rows_per_cpu_second=roof, roofline_at_mean_batch=at_mean,
                share_of_roofline=round(per_cpu_second / at_mean, 3),
                torch_threads=cfg.torch_threads, load_start=load_start, load_end=load_end)


def run_child(seconds: float, smoke: bool) -> dict:
    """The ``run`` section in this process (see the module docstring)."""
    from sparring.framework import serial_pipeline
    counting = CountingEvaluations()
    config = _ready_config(smoke)
    config['exp_name'] = os.path.join(tempfile.mkdtemp(prefix='search_selfplay_'), 'run')
    config['env'].update(evaluator_env_num=2, n_evaluator_episodes=2)
    config['battle']['eval_opponents'] = ['bot:random']
    config['train'] = dict(config['train'], max_wall_seconds=seconds, eval_every_iters=0, eval_in_background=False,
                           checkpoint_every_iters=0,
                           progress_bar=False, tensorboard=False)
    load_start = os.getloadavg()
    cpu_started = time.process_time()
    summary = serial_pipeline(config, seed=0)
    wall, cpu = summary['wall_seconds'], time.process_time() - cpu_started
    return dict(env_steps=summary['env_steps'], wall_seconds=round(wall, 2), cpu_seconds=round(cpu, 2),
                env_steps_per_second=round(summary['env_steps'] / wall, 1),
                env_steps_per_cpu_second=round(summary['env_steps'] / cpu, 1), rounds=summary['rounds'],
                evaluations_per_second=round(counting.rows / wall), mean_batch=round(counting.rows / max(counting.calls, 1), 1),
                load_start=load_start, load_end=os.getloadavg())


def child(root: str, section: str, args) -> dict:
    """One measurement of ``section`` in a fresh process importing the checkout at ``root``."""
    env = dict(os.environ, PYTHONPATH=os.path.join(root, '.typecheck'))
    amount = str(args.chunks if section == 'collect' else args.seconds)
    command = [sys.executable, os.path.abspath(__file__), '--child', section, amount] + (['--smoke'] if args.smoke else [])
    out = subprocess.run(command, env=env, cwd=root, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _line(name: str, section: str, figures: dict) -> str:
    if section == 'collect':
        return (f'{name:8s} collect: {figures["env_steps_per_second"]:6.0f} env steps/s '
                f'({figures["env_steps_per_cpu_second"]:.0f} per CPU second), {figures["evaluations_per_cpu_second"]} '
                f'evaluations per CPU second (mean batch {figures["mean_batch"]}), {figures["forward_share"]:.0%} of '
                f'the time in forward passes; roofline at that batch {figures["roofline_at_mean_batch"]} rows per CPU '
                f'second: {figures["share_of_roofline"]:.0%} of it (load {figures["load_end"][0]:.2f})')
    return (f'{name:8s} run: {figures["env_steps_per_second"]:6.0f} env steps/s over {figures["wall_seconds"]} s '
            f'({figures["env_steps_per_cpu_second"]:.0f} per CPU second), {figures["evaluations_per_second"]} '
            f'evaluations/s of the wall (load {figures["load_end"][0]:.2f})')


def measure(args) -> dict:
    roots = dict(this=HERE)
    if args.against:
        roots['against'] = os.path.abspath(args.against)
    out: dict = dict(cpu=cpu_model(), load_start=os.getloadavg(), repeats=args.repeats,
                     against=args.against, chunks=args.chunks, seconds=args.seconds)
    for section in args.sections:
        runs: dict = {name: [] for name in roots}
        for _ in range(args.repeats):
            for name, root in roots.items():
                figures = child(root, section, args)
                runs[name].append(figures)
                print(_line(name, section, figures), flush=True)
        medians = {name: statistics.median(r['env_steps_per_second'] for r in rs) for name, rs in runs.items()}
        cpu_medians = {name: statistics.median(r['env_steps_per_cpu_second'] for r in rs) for name, rs in runs.items()}
        entry = dict(runs=runs, median_env_steps_per_second=medians, median_env_steps_per_cpu_second=cpu_medians)
        if section == 'collect':
            entry['median_share_of_roofline'] = {name: statistics.median(r['share_of_roofline'] for r in rs)
                                                 for name, rs in runs.items()}
        if args.against:
            entry['ratio'] = round(medians['this'] / medians['against'], 3)
            entry['cpu_ratio'] = round(cpu_medians['this'] / cpu_medians['against'], 3)
            print(f'{section}: medians this {medians["this"]:.0f}, against {medians["against"]:.0f} env steps/s '
                  f'(ratio {entry["ratio"]:.3f}); per CPU second {cpu_medians["this"]:.0f} against '
                  f'{cpu_medians["against"]:.0f} (ratio {entry["cpu_ratio"]:.3f})', flush=True)
        out[section] = entry
    out['load_end'] = os.getloadavg()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sections', nargs='+', choices=('collect', 'run'), default=['collect', 'run'])
    parser.add_argument('--chunks', type=int, default=2, help='chunks of 32 moves of 128 games timed per collection')
    parser.add_argument('--seconds', type=float, default=60.0, help='training seconds of each run')
    parser.add_argument('--against', default=None, metavar='TREE', help='another checkout to alternate with')
    parser.add_argument('--repeats', type=int, default=1)
    parser.add_argument('--label', default='ready', help='the entry\'s name in the record')
    parser.add_argument('--child', nargs=2, default=None, help=argparse.SUPPRESS)
    add_smoke(parser)
    args = parser.parse_args()
    if args.child:
        section, amount = args.child
        figures = collect_child(int(amount), args.smoke) if section == 'collect' else run_child(float(amount), args.smoke)
        print(json.dumps(figures))
        return
    apply_smoke(args, chunks=1, seconds=2.0, repeats=1, against=None, label='smoke')
    merge_results('search_selfplay', {args.label: measure(args)})


if __name__ == '__main__':
    main()
