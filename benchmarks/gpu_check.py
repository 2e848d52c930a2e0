"""The GPU check: what sparring does on a CUDA machine, in one script of a few minutes, printed as JSON.

Each section runs on its own and records its figures or the error that stopped it, so one failure
does not hide the rest:

* ``ppo_update``: the connect-four CNN's PPO update (the ready league config's: 4 epochs of 8
  minibatches on 64 x 64 boards, and a batch four times as large), samples per second on the CPU
  (all cores and one thread) and on CUDA (float32 and the bfloat16 trunk). Same construction as
  ``update_throughput.py``.
* ``serial``: short serial leagues on connect four with ``policy.device`` (the learner) and
  ``policy.collect.device`` (acting) on CUDA, each beside the same run on the CPU: the PPO league,
  the DQN league and expert iteration (whose search evaluates the network at every simulation).
  Each has a wall-time budget; env steps per second and train iterations are reported.
* ``parallel``: a parallel PPO league (collectors and evaluator on the CPU, the learner on CUDA).
* ``cpu_load``: every run directory above evaluated by a process that sees no GPU
  (``CUDA_VISIBLE_DEVICES=''``): checkpoints written on CUDA load on the CPU.

While runs go, ``nvidia-smi`` is sampled for the processes holding GPU memory, so the report shows
which process used the GPU, not only that the run finished.

* ``forward_pass``: the parallel PPO league with a forward-pass worker (``parallel.inference``) whose networks
  are on CUDA (``policy.collect.device``), the learner too; its forward passes, mean batch and seconds.

SAC (issue #31) is not built yet; the script says so instead of measuring it.

    python benchmarks/gpu_check.py [--seconds 25] [--out gpu_check.json]

Without CUDA it runs the CPU halves only (that is how it is tested on a machine without a GPU).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SERIAL_CONFIGS = {
    'ppo_league': 'sparring.dizoo.board_games.config.connect_four_league',
    'dqn_league': 'sparring.dizoo.board_games.config.connect_four_dqn_league',
    'expert_iteration': 'sparring.dizoo.board_games.config.connect_four_search',
}


# -- the child process: one run, its summary as the last line of stdout --------------------------------------------
def _run_config(module: str, device: str, seconds: float, exp: str, parallel: bool, inference: bool = False) -> dict:
    import copy
    import importlib
    config = copy.deepcopy(importlib.import_module(module).config)
    config['exp_name'] = exp
    config['policy']['device'] = device
    # A parallel run acts on the CPU in its collectors, or on ``device`` in a forward-pass worker.
    config['policy'].setdefault('collect', {})['device'] = 'cpu' if parallel and not inference else device
    config['env'].update(n_evaluator_episodes=20, evaluator_env_num=20)
    config['env']['collector_env_num'] = min(config['env']['collector_env_num'], 64)  # a first round within budget
    config['battle']['eval_opponents'] = ['bot:random']
    config['train'].update(max_wall_seconds=seconds, eval_every_iters=0, eval_in_background=False,
                           checkpoint_every_iters=20, progress_bar=False, tensorboard=False)
    if parallel:
        config['parallel'] = dict(collectors=4, evaluators=1, inference=dict(workers=1 if inference else 0))
    from sparring.framework import parallel_pipeline, serial_pipeline
    started = time.perf_counter()
    summary = (parallel_pipeline if parallel else serial_pipeline)(config, seed=0)
    wall = time.perf_counter() - started
    return dict(wall_seconds=round(wall, 1), summary=summary)


def _child_main(argv) -> None:
    module, device, seconds, exp, mode = argv[0], argv[1], float(argv[2]), argv[3], argv[4]
    out = _run_config(module, device, seconds, exp, mode in ('parallel', 'inference'), mode == 'inference')
    print('GPU_CHECK_RESULT ' + json.dumps(out, default=str), flush=True)


def _eval_main(argv) -> None:
    from sparring.framework.evaluate_player import evaluate_player
    import torch
    result = evaluate_player(argv[0], ['bot:random'], games=20, seed=1)
    print('GPU_CHECK_RESULT ' + json.dumps(dict(cuda_visible=torch.cuda.is_available(), result=result), default=str),
          flush=True)


# -- the parent: sections ------------------------------------------------------------------------------------------
class GpuSampler:
    """Samples ``nvidia-smi`` every half second: the peak GPU memory each process held while it ran."""

    def __init__(self) -> None:
        self.peak_mib: dict = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.available = shutil.which('nvidia-smi') is not None

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            try:
                text = subprocess.run(['nvidia-smi', '--query-compute-apps=pid,process_name,used_memory',
                                       '--format=csv,noheader,nounits'], capture_output=True, text=True,
                                      timeout=5).stdout
            except (OSError, subprocess.SubprocessError):
                continue
            for line in text.strip().splitlines():
                parts = [p.strip() for p in line.split(',')]
                if len(parts) == 3 and parts[2].isdigit():
                    key = f'{parts[0]} {os.path.basename(parts[1])}'
                    self.peak_mib[key] = max(self.peak_mib.get(key, 0), int(parts[2]))

    def __enter__(self) -> 'GpuSampler':
        self.peak_mib = {}
        if self.available:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.available:
            self._stop.set()
            self._thread.join()


def _child(args: list, timeout: float, env=None) -> dict:
    """Runs this script as a child with ``args``; its result line, or the tail of what it printed."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), *args], capture_output=True, text=True,
                          timeout=timeout, env=env)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith('GPU_CHECK_RESULT '):
            return json.loads(line[len('GPU_CHECK_RESULT '):])
    raise RuntimeError(f'child {args[:2]} exited {proc.returncode} after {time.perf_counter() - started:.0f} s: '
                       + (proc.stderr or proc.stdout)[-1500:])


def _run_summary(result: dict) -> dict:
    summary = result['summary']
    out = dict(process_seconds=result['wall_seconds'], env_steps=summary.get('env_steps'),
               training_seconds=summary.get('wall_seconds'), rounds=summary.get('rounds'))
    if summary.get('env_steps') and summary.get('wall_seconds'):
        out['env_steps_per_second'] = round(summary['env_steps'] / summary['wall_seconds'], 1)
    for key in ('train_iterations', 'games', 'stop_reason', 'eval'):
        if summary.get(key) is not None:
            out[key] = summary[key]
    return out


def ppo_update(devices) -> dict:
    import numpy as np
    import torch
    sys.path.insert(0, HERE)
    from update_throughput import RandomBoards, _board_chunk
    from sparring.config import compile_section
    from sparring.config.registry import POLICY_REGISTRY
    import sparring.policy.ppo  # noqa: F401  registers 'ppo'
    out = {}
    for label, envs in (('ready_config_4096', 64), ('large_16384', 256)):
        for device in devices:
            for precision in (('float32', 'bfloat16') if device == 'cuda' else ('float32',)):
                for threads in ((os.cpu_count(), 1) if device == 'cpu' else (1,)):
                    torch.set_num_threads(threads)
                    learn = dict(epochs=4, num_minibatches=8, lr=1e-3, gamma=0.99, gae_lambda=0.95, entropy_coef=0.01,
                                 value_clip_range=None)
                    model = dict(type='cnn', conv_layers=[[64, 4, 1]], hidden_size=256, trunk_precision=precision)
                    cfg = compile_section('policy', dict(type='ppo', model=model, collect=dict(n_steps=64),
                                                         learn=learn))
                    policy = POLICY_REGISTRY.get('ppo')(cfg, RandomBoards.observation_space,
                                                        RandomBoards.action_space, seed=0)
                    chunk = _board_chunk(policy, 64, envs)
                    policy = policy.to_device(torch.device(device))
                    policy.learn(chunk, progress=0.5)  # warm-up (CUDA context, kernels, allocator)
                    times = []
                    for _ in range(5 if device == 'cuda' else 3):
                        if device == 'cuda':
                            torch.cuda.synchronize()
                        start = time.perf_counter()
                        policy.learn(chunk, progress=0.5)
                        if device == 'cuda':
                            torch.cuda.synchronize()
                        times.append(time.perf_counter() - start)
                    seconds = statistics.median(times)
                    name = f'{label}:{device}:{precision}:threads{threads}'
                    out[name] = dict(seconds_per_update=round(seconds, 4),
                                     samples_per_second=round(4 * 64 * envs / seconds))
                    print(f'ppo update {name}: {out[name]["samples_per_second"]} samples/s', flush=True)
    torch.set_num_threads(os.cpu_count())
    assert all(np.isfinite(t.numpy()).all() for t in policy.get_params().values())
    return out


def serial(devices, seconds: float, root: str, sampler: GpuSampler) -> dict:
    out = {}
    for name, module in SERIAL_CONFIGS.items():
        for device in devices:
            exp = os.path.join(root, f'{name}_{device}')
            with sampler:
                result = _child(['--child', module, device, str(seconds), exp, 'serial'], timeout=seconds * 4 + 120)
            out[f'{name}:{device}'] = dict(_run_summary(result), exp=exp, gpu_processes_peak_mib=dict(sampler.peak_mib))
            print(f'serial {name} on {device}: {json.dumps(out[f"{name}:{device}"], default=str)[:400]}', flush=True)
    return out


def parallel(devices, seconds: float, root: str, sampler: GpuSampler) -> dict:
    exp = os.path.join(root, 'parallel_ppo_league')
    device = 'cuda' if 'cuda' in devices else 'cpu'
    with sampler:
        result = _child(['--child', SERIAL_CONFIGS['ppo_league'], device, str(seconds), exp, 'parallel'],
                        timeout=seconds * 4 + 180)
    out = dict(_run_summary(result), learner_device=device, exp=exp, gpu_processes_peak_mib=dict(sampler.peak_mib))
    print(f'parallel league, learner on {device}: {json.dumps(out, default=str)[:400]}', flush=True)
    return out


def forward_pass(devices, seconds: float, root: str, sampler: GpuSampler) -> dict:
    """The parallel PPO league with a forward-pass worker whose networks are on CUDA (the learner too), beside
    the same run with both on the CPU where there is no GPU."""
    device = 'cuda' if 'cuda' in devices else 'cpu'
    exp = os.path.join(root, 'forward_pass_ppo_league')
    with sampler:
        result = _child(['--child', SERIAL_CONFIGS['ppo_league'], device, str(seconds), exp, 'inference'],
                        timeout=seconds * 4 + 180)
    summary = _run_summary(result)
    stats = result['summary'].get('worker_stats', {})
    worker = next((s for w, s in stats.items() if w.startswith('inference')), {})
    out = dict(summary, forward_device=device, exp=exp, gpu_processes_peak_mib=dict(sampler.peak_mib),
               inference_worker={k: worker.get(k) for k in ('forward_passes', 'rows', 'mean_batch', 'malformed',
                                                            'forward_seconds', 'batching_delay_seconds')})
    print(f'parallel league, forward-pass worker on {device}: {json.dumps(out, default=str)[:400]}', flush=True)
    return out


def cpu_load(run_dirs) -> dict:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES='')
    out = {}
    for exp in run_dirs:
        result = _child(['--eval', exp], timeout=300, env=env)
        stats = result['result']['opponents']['bot:random']
        out[os.path.basename(exp)] = dict(cuda_visible_in_child=result['cuda_visible'], games=stats.get('games'),
                                          win=stats.get('win'), draw=stats.get('draw'), loss=stats.get('loss'))
        print(f'loaded on CPU {os.path.basename(exp)}: {out[os.path.basename(exp)]}', flush=True)
    return out


def machine() -> dict:
    import torch
    info = dict(python=platform.python_version(), torch=torch.__version__, cpu_count=os.cpu_count(),
                load_average=list(os.getloadavg()), cuda=torch.cuda.is_available())
    from results_file import cpu_model
    info['cpu_model'] = cpu_model()
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1),
                    multiprocessors=props.multi_processor_count)
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seconds', type=float, default=25.0, help='wall-time budget of each training run')
    parser.add_argument('--out', default=None, help='also write the JSON here')
    parser.add_argument('--sections', nargs='+', default=['ppo_update', 'serial', 'parallel', 'forward_pass', 'cpu_load'])
    parser.add_argument('--keep', default=None, help='keep the run directories here (default: a temporary folder)')
    args = parser.parse_args()
    import torch
    devices = ['cuda', 'cpu'] if torch.cuda.is_available() else ['cpu']
    root = args.keep or tempfile.mkdtemp(prefix='gpu_check_')
    report = dict(machine=machine(), devices=devices, seconds_per_run=args.seconds,
                  not_built=dict(sac='issue #31'))
    print(json.dumps(report['machine']), flush=True)
    sampler = GpuSampler()
    started = time.perf_counter()
    sections = dict(ppo_update=lambda: ppo_update(devices),
                    serial=lambda: serial(devices, args.seconds, root, sampler),
                    parallel=lambda: parallel(devices, args.seconds, root, sampler),
                    forward_pass=lambda: forward_pass(devices, args.seconds, root, sampler),
                    cpu_load=lambda: cpu_load(sorted(os.path.join(root, d) for d in os.listdir(root))))
    for name in args.sections:
        section_started = time.perf_counter()
        try:
            report[name] = sections[name]()
        except Exception as exc:  # noqa: BLE001 -- one section's failure is reported, the next still runs
            report[name] = dict(error=f'{type(exc).__name__}: {exc}', traceback=traceback.format_exc()[-3000:])
            print(f'section {name} failed: {report[name]["error"][:1500]}', flush=True)
        report.setdefault('section_seconds', {})[name] = round(time.perf_counter() - section_started, 1)
    report['total_seconds'] = round(time.perf_counter() - started, 1)
    report['load_average_end'] = list(os.getloadavg())
    text = json.dumps(report, indent=1, default=str)
    print(text)
    if args.out:
        with open(args.out, 'w') as f:
            f.write(text + '\n')


if __name__ == '__main__':
    if len(sys.argv) > 1 and sys.argv[1] == '--child':
        _child_main(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == '--eval':
        _eval_main(sys.argv[2:])
    else:
        main()
