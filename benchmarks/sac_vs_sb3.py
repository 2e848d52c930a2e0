"""sparring's SAC against Stable-Baselines3's, side by side on Pendulum-v1 (and, behind ``--mujoco``, Hopper-v5).

Needs SB3 in the venv (``pip install stable-baselines3``); installs nothing. Every run is a fresh child process
with one torch thread; for each seed the two libraries run back to back (the order alternating by seed), so
the machine's load falls on both alike, and the load average is stored with every run.

* ``pendulum``: sparring's ready ``pendulum_sac`` config (128-128 networks at lr 1e-3, tuned on seeds 0-2 with
  ``sac_tuning.py``) against SB3 at rl-zoo's tuned
  hyperparameters for Pendulum-v1 (SB3's SAC defaults with lr 1e-3). Both evaluated with 8 deterministic
  episodes every ``--eval-every`` env steps; the figures: env steps, wall seconds and the process's CPU
  seconds (from building the envs and model to the end of that evaluation) when the mean first reaches
  -200, the mean at the end of the budget (``--steps``, 20k in the protocol), and env steps per second of
  the training alone. The CPU seconds are the load-robust figure: on a shared machine the wall clock also
  counts the other processes' turns.
* ``--mujoco``: Hopper-v5 for ``--mujoco-steps`` (100k in the protocol): the return at the end and env
  steps per second, sparring's ``hopper_sac`` against rl-zoo's Hopper settings (learning_starts 10k).

    .venv/bin/python benchmarks/sac_vs_sb3.py [--seeds 100 101 102] [--steps 20000] [--stop-at-target]

``--set dotted.key=value`` (repeatable) changes sparring's ready config for a run, without editing it (e.g.
``--set policy.model.hidden_sizes=[128,128]``); the overrides are stored with the figures. ``sac_tuning.py``
runs variants this way on the tuning seeds.

Each kind of run is stored under its own key (``--results-key``; by default ``pendulum_to_target``,
``pendulum_20k``, ``hopper_100k``), so a run of one kind keeps the figures of the others.

Hyperparameters are never tuned on the reported seeds (100-102); tune on 0-2. Writes
``benchmarks/results/sac_vs_sb3.json`` (through ``results_file``) with the CPU model and the load.
``--smoke``: one seed of 400 env steps, written to a temporary folder; without SB3 installed it runs sparring's
side alone and says so in one line.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from peer_runs import evaluate_greedy, load, prepare_process  # noqa: E402
from results_file import add_smoke, apply_smoke, cpu_model, merge_results, peer_missing  # noqa: E402

TARGET = -200.0
EVAL_EPISODES = 8
SB3_PENDULUM = dict(learning_rate=1e-3)  # rl-zoo sac.yml, Pendulum-v1 (the rest: SB3's defaults)
SB3_HOPPER = dict(learning_starts=10_000)  # rl-zoo sac.yml, Hopper


class Curve:
    """Evaluations as they come: (env steps, mean return, wall seconds since the start, CPU seconds since the start)."""

    def __init__(self, stop_at_target: bool) -> None:
        self.points: list = []
        self.train_seconds: list = []  # wall seconds at each evaluation, evaluations excluded
        self.stop_at_target = stop_at_target
        self.started, self.cpu_started = time.perf_counter(), time.process_time()
        self.eval_seconds = 0.0

    def add(self, env_steps: int, mean: float, eval_seconds: float) -> bool:
        """Record one evaluation; whether the run should stop now."""
        self.eval_seconds += eval_seconds
        wall = time.perf_counter() - self.started
        self.points.append((int(env_steps), float(mean), wall, time.process_time() - self.cpu_started))
        self.train_seconds.append(wall - self.eval_seconds)
        return self.stop_at_target and mean >= TARGET

    def result(self, env_steps: int) -> dict:
        reached = next((point for point in self.points if point[1] >= TARGET), None)
        seconds = time.perf_counter() - self.started
        # The pace between the last two evaluations (training only): once learning has started it is the speed
        # of the learning loop itself, without the faster steps before ``learning_starts``.
        late = None
        if len(self.points) >= 2:
            late = (self.points[-1][0] - self.points[-2][0]) / max(self.train_seconds[-1] - self.train_seconds[-2], 1e-9)
        return dict(curve=self.points, final_eval=self.points[-1][1] if self.points else None, env_steps=env_steps,
                    target_env_steps=reached[0] if reached else None, target_seconds=reached[2] if reached else None,
                    target_cpu_seconds=reached[3] if reached else None, seconds=seconds,
                    cpu_seconds=time.process_time() - self.cpu_started,
                    steps_per_second=env_steps / max(seconds - self.eval_seconds, 1e-9),
                    late_steps_per_second=late)


def ready_config(task: str, overrides: Sequence[str] = ()) -> tuple:
    """(sparring's ready config for ``task`` with the ``dotted.key=value`` ``overrides`` applied, a copy; the env id)."""
    from sparring.config.compile import apply_overrides, parse_override
    if task == 'pendulum':
        from sparring.dizoo.classic_control.config.pendulum_sac import config
        env_id = 'Pendulum-v1'
    else:
        from sparring.dizoo.mujoco.config.hopper_sac import config
        env_id = 'Hopper-v5'
    return apply_overrides(config, [parse_override(text) for text in overrides]), env_id


def sparring_run(task: str, seed: int, steps: int, eval_every: int, stop: bool, workdir: str,
                 overrides: Sequence[str] = ()) -> dict:
    """Our SAC stepped chunk by chunk through its collector and learner, evaluated like SB3's; ``overrides``:
    ``dotted.key=value`` texts applied to the ready config."""
    import torch

    from sparring.config import compile_config
    from sparring.config.registry import POLICY_REGISTRY
    from sparring.worker.collector import SampleCollector
    from sparring.worker.env.manager import make_env_manager
    from sparring.worker.learner import Learner
    config, env_id = ready_config(task, overrides)
    config['train'] = dict(config['train'], max_env_steps=steps, progress_bar=False, tensorboard=False)
    cfg = compile_config(config, exp_name=os.path.join(workdir, f'sparring_{task}_{seed}'), save=False)
    curve = Curve(stop)
    env = make_env_manager(cfg.env, cfg.env.collector_env_num, seed, cfg.import_names)
    policy = POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, env.observation_space, env.action_space, seed=seed)
    collector = SampleCollector(env, policy, cfg.policy.collect.n_steps)
    learner = Learner(policy, steps)
    next_eval = eval_every
    with torch.inference_mode(False):
        while learner.env_steps < steps:
            learner.train(collector.collect())
            if learner.env_steps >= next_eval or learner.env_steps >= steps:
                next_eval += eval_every
                began = time.perf_counter()
                mean = evaluate_greedy(lambda obs: policy.act(obs.astype('float32'), deterministic=True).action,
                                       env_id, EVAL_EPISODES, seed + 10_000)
                if curve.add(learner.env_steps, mean, time.perf_counter() - began):
                    break
    env.close()
    return curve.result(learner.env_steps)


def sb3_run(task: str, seed: int, steps: int, eval_every: int, stop: bool) -> dict:
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback

    env_id, hyper = ('Pendulum-v1', SB3_PENDULUM) if task == 'pendulum' else ('Hopper-v5', SB3_HOPPER)
    curve = Curve(stop)

    class EvaluateEvery(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.next_eval = eval_every

        def _on_step(self) -> bool:
            if self.num_timesteps < self.next_eval and self.num_timesteps < steps:
                return True
            self.next_eval += eval_every
            began = time.perf_counter()
            mean = evaluate_greedy(lambda obs: self.model.predict(obs, deterministic=True)[0], env_id, EVAL_EPISODES,
                                   seed + 10_000)
            return not curve.add(self.num_timesteps, mean, time.perf_counter() - began)

    model = SAC('MlpPolicy', env_id, seed=seed, device='cpu', verbose=0, **hyper)
    model.learn(steps, callback=EvaluateEvery())
    return curve.result(model.num_timesteps)


def child(library: str, task: str, seed: int, steps: int, eval_every: int, stop: bool, workdir: str,
          overrides: Sequence[str] = ()) -> dict:
    prepare_process()
    before = load()
    if library == 'sparring':
        result = sparring_run(task, seed, steps, eval_every, stop, workdir, overrides)
    else:
        result = sb3_run(task, seed, steps, eval_every, stop)
    return dict(result, load_before=before, load_after=load())


def spawn_child(library: str, task: str, seed: int, steps: int, eval_every: int, stop: bool, workdir: str,
                overrides: Sequence[str] = (), nice: int = 0) -> dict:
    """One run in a fresh process (``nice``: its niceness increment); its figures."""
    command = [sys.executable, os.path.abspath(__file__), '--child', library, task, str(seed), str(steps),
               str(eval_every), str(int(stop)), workdir]
    command += [arg for text in overrides for arg in ('--set', text)]
    out = subprocess.run(['nice', '-n', str(nice), *command] if nice else command,
                         check=True, capture_output=True, text=True, cwd=HERE)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_child(library: str, task: str, seed: int, args, workdir: str) -> dict:
    steps = args.steps if task == 'pendulum' else args.mujoco_steps
    eval_every = args.eval_every if task == 'pendulum' else args.mujoco_eval_every
    return spawn_child(library, task, seed, steps, eval_every, args.stop_at_target and task == 'pendulum', workdir,
                       args.set if library == 'sparring' else ())


# -- the side-by-side runs ------------------------------------------------------------------------
def stored_sb3_runs(key: str, task: str, args) -> dict:
    """SB3's per-seed figures from the stored run ``key`` (``--reuse-sb3``), which must have had this run's seeds,
    budget and evaluations."""
    from results_file import RESULTS_DIR
    with open(os.path.join(RESULTS_DIR, 'sac_vs_sb3.json')) as f:
        stored = json.load(f).get(key)
    if stored is None or task not in stored:
        raise SystemExit(f'--reuse-sb3 {key}: no {task} run stored under that key in results/sac_vs_sb3.json')
    same = ('steps', 'eval_every', 'stop_at_target')
    if any(stored[k] != getattr(args, k) for k in same) or not set(map(str, args.seeds)) <= set(stored[task]['per_seed']):
        raise SystemExit(f'--reuse-sb3 {key}: stored with seeds {stored["seeds"]}, '
                         + ', '.join(f'{k} {stored[k]}' for k in same) + '; expected the same as this run')
    return {int(seed): runs['sb3'] for seed, runs in stored[task]['per_seed'].items()}


def side_by_side(task: str, args, workdir: str, libraries=('sparring', 'sb3')) -> dict:
    """Each seed's runs of ``libraries`` (the order alternating by seed) and, with both, their summary."""
    per_seed = {}
    reused = stored_sb3_runs(args.reuse_sb3, task, args) if args.reuse_sb3 else {}
    for i, seed in enumerate(args.seeds):
        order = tuple(libraries) if i % 2 == 0 else tuple(reversed(libraries))
        per_seed[seed] = {library: reused[seed] if library == 'sb3' and seed in reused
                          else run_child(library, task, seed, args, workdir) for library in order}
        print(f'{task} seed {seed}: ' + '  '.join(
            f'{lib} target at {r["target_env_steps"]} steps / {_num(r["target_seconds"])} s '
            f'({_num(r["target_cpu_seconds"])} CPU s), final {r["final_eval"]:.0f} '
            f'at {r["env_steps"]}, {r["steps_per_second"]:.1f} steps/s (load {r["load_before"][0]})'
            for lib, r in per_seed[seed].items()), flush=True)
    return dict(per_seed=per_seed, **(summary(per_seed) if 'sb3' in libraries else {}))


def _num(x) -> str:
    return '-' if x is None else f'{x:.1f}'


def _median_or_none(values: list):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summary(per_seed: dict) -> dict:
    inf = float('inf')

    def figures(lib):
        runs = [r[lib] for r in per_seed.values()]
        return dict(reached=sum(r['target_env_steps'] is not None for r in runs),
                    median_target_env_steps=statistics.median(r['target_env_steps'] or inf for r in runs),
                    median_target_seconds=statistics.median(r['target_seconds'] or inf for r in runs),
                    median_target_cpu_seconds=statistics.median(r.get('target_cpu_seconds') or inf for r in runs),
                    median_final_eval=statistics.median(r['final_eval'] for r in runs),
                    median_steps_per_second=statistics.median(r['steps_per_second'] for r in runs),
                    median_late_steps_per_second=_median_or_none([r.get('late_steps_per_second') for r in runs]))
    ours, theirs = figures('sparring'), figures('sb3')
    def ratio_of(key):
        return ours[key] / theirs[key] if theirs[key] not in (0, inf) else None
    ratio = ratio_of('median_target_seconds')
    return dict(sparring=ours, sb3=theirs, target_seconds_ratio=ratio,
                target_cpu_seconds_ratio=ratio_of('median_target_cpu_seconds'),
                steps_per_second_ratio=ours['median_steps_per_second'] / theirs['median_steps_per_second'],
                half_wall_time_met=ratio is not None and ratio <= 0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[100, 101, 102])
    parser.add_argument('--steps', type=int, default=20_000, help='Pendulum budget in env steps (protocol: 20k)')
    parser.add_argument('--eval-every', type=int, default=1000, help='env steps between Pendulum evaluations')
    parser.add_argument('--stop-at-target', action='store_true',
                        help='end a Pendulum run at its first evaluation >= -200 (a shorter run; no final return)')
    parser.add_argument('--mujoco', action='store_true', help='also Hopper-v5 (long: 100k steps per run)')
    parser.add_argument('--mujoco-steps', type=int, default=100_000)
    parser.add_argument('--mujoco-eval-every', type=int, default=20_000)
    parser.add_argument('--workdir', default='/tmp/sparring_sac_vs_sb3')
    parser.add_argument('--results-key', default=None,
                        help='the key this run is stored under in results/sac_vs_sb3.json (default: '
                             "'pendulum_to_target' with --stop-at-target, else 'pendulum_<steps/1000>k'; "
                             "runs of another kind keep their keys)")
    parser.add_argument('--no-pendulum', action='store_true', help='skip Pendulum (with --mujoco: Hopper only)')
    parser.add_argument('--set', action='append', default=[], metavar='KEY=VALUE',
                        help="change sparring's ready config for this run (repeatable), e.g. "
                             "--set policy.learn.lr=1e-3; stored with the figures")
    parser.add_argument('--reuse-sb3', metavar='KEY', default=None,
                        help="take SB3's figures from the run stored under KEY (same seeds, steps and evaluations) "
                             'instead of running SB3 again: its code did not change; a returns run only, never a '
                             'timing one (the two sides would not share the machine\'s load)')
    add_smoke(parser)
    parser.add_argument('--child', nargs=7, metavar=('LIB', 'TASK', 'SEED', 'STEPS', 'EVAL_EVERY', 'STOP', 'DIR'))
    args = apply_smoke(parser.parse_args(), seeds=[0], steps=400, eval_every=200, mujoco=False, stop_at_target=False,
                       reuse_sb3=None, results_key='smoke', workdir=tempfile.mkdtemp(prefix='sac_vs_sb3_smoke_'))
    if args.child:
        lib, task, seed, steps, eval_every, stop, workdir = args.child
        print(json.dumps(child(lib, task, int(seed), int(steps), int(eval_every), bool(int(stop)), workdir, args.set)))
        return
    if args.reuse_sb3 and (args.stop_at_target or args.mujoco):
        parser.error('--reuse-sb3: for a Pendulum returns run only (not with --stop-at-target or --mujoco)')
    from sparring.config.compile import parse_override
    for text in args.set:  # a malformed override fails here, not in the first child
        parse_override(text)
    libraries = ('sparring', 'sb3')
    if peer_missing('stable_baselines3', 'SB3', "pip install -e '.[bench]'"):
        if not args.smoke:
            parser.error("needs Stable-Baselines3 for its side: pip install -e '.[bench]'")
        libraries = ('sparring',)
    started, load_start = time.time(), load()
    results = dict(cpu=cpu_model(), cores=os.cpu_count(), torch_threads=1, load_start=load_start,
                   seeds=args.seeds, steps=args.steps, eval_every=args.eval_every, stop_at_target=args.stop_at_target,
                   sparring_overrides=args.set, sb3_reused_from=args.reuse_sb3)
    if not args.no_pendulum:
        results.update(sb3_pendulum=SB3_PENDULUM, pendulum=side_by_side('pendulum', args, args.workdir, libraries))
    if args.mujoco:
        results.update(sb3_hopper=SB3_HOPPER, mujoco_steps=args.mujoco_steps,
                       mujoco_eval_every=args.mujoco_eval_every,
                       hopper=side_by_side('hopper', args, args.workdir, libraries))
    results.update(load_end=load(), wall_seconds=time.time() - started)
    for task in ('pendulum', 'hopper'):
        summary_figures = {k: v for k, v in results.get(task, {}).items() if k != 'per_seed'}
        if summary_figures:  # none without SB3's side
            print(json.dumps(summary_figures, indent=2))
    merge_results('sac_vs_sb3', {results_key(args): results})


def results_key(args) -> str:
    """One key per kind of run, so that a run of one kind never overwrites another's figures."""
    if args.results_key:
        return args.results_key
    if args.no_pendulum:
        return f'hopper_{args.mujoco_steps // 1000}k'
    return 'pendulum_to_target' if args.stop_at_target else f'pendulum_{args.steps // 1000}k'


if __name__ == '__main__':
    main()
