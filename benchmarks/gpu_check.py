"""The GPU check: what sparring does on a CUDA machine, in one script of a few minutes, printed as JSON.

Each section runs on its own within its share of ``--budget`` seconds and records its figures, or the error
that stopped it (an ImportError where the machine's Python lacks a package), so one failure does not hide
the rest. Nothing optional is imported at the top: the script starts wherever Python does.

* ``ppo_update``: the connect-four CNN's PPO update (the ready league config's: 4 epochs of 8 minibatches
  of 4,096 samples, and a batch four times as large), samples per second on the CPU (all cores and one
  thread) and on CUDA. On CUDA the ready update replays its minibatch step as a CUDA graph
  (``policy.learn.cuda_graph``, :mod:`sparring.policy.graphed_steps`); beside it, each variant measured
  separately: the steps one by one (``one_by_one``, as before the graph path), the bfloat16 trunk, torch's
  fused Adam (one by one), larger minibatches (2 and 1 an epoch, graphed; 1 also one by one) and, last, the
  network under ``torch.compile`` (default and ``reduce-overhead``, steps one by one:
  ``ppo_update_compiled``). Each CUDA figure carries its speed-up over the 16-thread CPU. Both run in a
  process of their own, stopped when its budget is spent: a capture that fails can leave a process's CUDA
  context unusable, and compiling takes seconds to minutes.
* ``sac_update``: SAC's batched gradient steps (the ready Pendulum config's 128-128 networks, and
  256-256 at Hopper's shapes), steps per second on the CPU and on CUDA.
* ``forward_rows``: the forward-pass worker's network (the ready league's CNN), rows per second by batch
  size in process on each device, and through a forward-pass server over its ZeroMQ socket with the
  network on the fastest device (the round trip included).
* ``search_selfplay``: expert iteration (``connect_four_search_openings``, the perfect-play config: 128
  games, 50 simulations a move) as a serial run on CUDA (learner and search) and on the CPU, env steps
  per second within a wall budget.
* Not in the default run: ``serial`` (short PPO, DQN and expert-iteration leagues on each device),
  ``parallel`` (a parallel PPO league with its learner on CUDA), ``forward_pass`` (the parallel league
  with a CUDA forward-pass worker) and ``cpu_load`` (each run directory evaluated by a process that sees
  no GPU).

While runs go, ``nvidia-smi`` is sampled for the processes holding GPU memory.

    python benchmarks/gpu_check.py [--budget 420] [--out gpu_check.json] [--sections ...] [--smoke]

Without CUDA it runs the CPU halves only; ``--smoke`` runs every section at toy sizes in well under a
minute (the test suite runs it so).
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
SEARCH_SELFPLAY_CONFIG = 'sparring.dizoo.board_games.config.connect_four_search_openings'
DEFAULT_SECTIONS = ['ppo_update', 'sac_update', 'forward_rows', 'search_selfplay', 'ppo_update_compiled']
# Each section's share of --budget (a section that finishes early leaves its rest to the next).
SHARES = dict(ppo_update=0.15, sac_update=0.08, forward_rows=0.1, search_selfplay=0.32, ppo_update_compiled=0.35,
              serial=0.5, parallel=0.3,
              forward_pass=0.3, cpu_load=0.2)
CHILD_START_SECONDS = 25.0  # a child run's start-up and final evaluation, beyond its training budget


class Deadline:
    """A section's wall-clock end: how long is left, and whether a measurement of ``seconds`` still fits."""

    def __init__(self, seconds: float) -> None:
        self.end = time.perf_counter() + seconds

    def left(self) -> float:
        return max(0.0, self.end - time.perf_counter())

    def fits(self, seconds: float) -> bool:
        return self.left() >= seconds


def _sync(device: str) -> None:
    if device.startswith('cuda'):
        import torch
        torch.cuda.synchronize()


def timed(call, device: str, deadline: Deadline, repeats: int) -> dict:
    """``call`` once as a warm-up (compilation, CUDA context, allocator), then up to ``repeats`` times while the
    deadline allows; the median seconds of the timed calls and the warm-up's."""
    _sync(device)
    start = time.perf_counter()
    call()
    _sync(device)
    warm_up = time.perf_counter() - start
    times: list = []
    while len(times) < repeats and (not times or deadline.fits(times[-1])):
        start = time.perf_counter()
        call()
        _sync(device)
        times.append(time.perf_counter() - start)
    return dict(seconds=statistics.median(times), warm_up_seconds=round(warm_up, 3), repeats=len(times))


# -- the child process: one run, its summary as the last line of stdout --------------------------------------------
def _run_config(module: str, device: str, seconds: float, exp: str, mode: str) -> dict:
    """One run of ``module``'s config on ``device`` within ``seconds``. ``mode``: ``serial`` (at most 64 envs, so a
    first round fits the budget), ``selfplay`` (the config's own envs), ``smoke`` (toy sizes), ``parallel``
    (collectors acting on the CPU) or ``inference`` (a forward-pass worker acting on ``device``)."""
    import copy
    import importlib
    parallel, inference = mode in ('parallel', 'inference'), mode == 'inference'
    config = copy.deepcopy(importlib.import_module(module).config)
    config['exp_name'] = exp
    config['policy']['device'] = device
    # A parallel run acts on the CPU in its collectors, or on ``device`` in a forward-pass worker.
    config['policy'].setdefault('collect', {})['device'] = 'cpu' if parallel and not inference else device
    config['env'].update(n_evaluator_episodes=20, evaluator_env_num=20)
    if mode != 'selfplay':
        config['env']['collector_env_num'] = min(config['env']['collector_env_num'], 64)
    if mode == 'selfplay':  # its rate is the figure: the closing evaluation kept short
        config['env'].update(n_evaluator_episodes=4, evaluator_env_num=4)
    if mode == 'smoke':
        config['env'].update(collector_env_num=4, n_evaluator_episodes=2, evaluator_env_num=2)
        config['policy']['collect']['n_steps'] = 4
        if 'collect_search' in config['battle']:
            config['battle']['collect_search'] = dict(config['battle']['collect_search'], num_simulations=4)
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
    out = _run_config(module, device, seconds, exp, mode)
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


# -- the PPO update ------------------------------------------------------------------------------------------------
PPO_BATCHES = dict(ready_config_4096=64, large_16384=256)  # envs of 64 steps each
PPO_STEPS, PPO_EPOCHS, PPO_MINIBATCHES = 64, 4, 8
# Variants measured on CUDA beside the ready update, cheapest first (compilation last: it takes longest).
# 'ready' is the policy as configured: on CUDA its minibatch steps replay as a CUDA graph (learn.cuda_graph);
# 'one_by_one' variants switch that off (the path before it, and the one the CPU takes).
PPO_VARIANTS = ('ready', 'one_by_one', 'bfloat16', 'fused_adam', 'minibatches_2', 'minibatches_1',
                'one_by_one_minibatches_1')
# Compiled on CUDA only, in a process of their own (``ppo_update_compiled``) stopped at its budget.
PPO_COMPILED = ('compile', 'compile_reduce_overhead')


def _minibatches(variant: str) -> int:
    return int(variant.rsplit('_', 1)[1]) if 'minibatches_' in variant else PPO_MINIBATCHES


def _ppo_policy(envs: int, steps: int, variant: str, device: str):
    """A fresh PPO policy of the ready league's CNN on ``device`` and a chunk of ``steps`` x ``envs`` random boards."""
    import torch
    sys.path.insert(0, HERE)
    from update_throughput import RandomBoards, _board_chunk
    from sparring.config import compile_section
    from sparring.config.registry import POLICY_REGISTRY
    import sparring.policy.ppo  # noqa: F401  registers 'ppo'
    one_by_one = variant.startswith(('one_by_one', 'fused_adam', 'compile'))
    learn = dict(epochs=PPO_EPOCHS, num_minibatches=_minibatches(variant), lr=1e-3, gamma=0.99, gae_lambda=0.95,
                 entropy_coef=0.01, value_clip_range=None, cuda_graph=not one_by_one)
    model = dict(type='cnn', conv_layers=[[64, 4, 1]], hidden_size=256,
                 trunk_precision='bfloat16' if variant == 'bfloat16' else 'float32')
    cfg = compile_section('policy', dict(type='ppo', model=model, collect=dict(n_steps=steps), learn=learn))
    policy = POLICY_REGISTRY.get('ppo')(cfg, RandomBoards.observation_space, RandomBoards.action_space, seed=0)
    chunk = _board_chunk(policy, steps, envs)
    return policy.to_device(torch.device(device)), chunk


def _ppo_update_call(variant: str, envs: int, steps: int, device: str):
    """The update to time for ``variant``: a callable."""
    import torch
    policy, chunk = _ppo_policy(envs, steps, variant, device)
    if variant == 'fused_adam':
        learn = policy.cfg['learn']
        policy.optimizer = torch.optim.Adam(policy.net.parameters(), lr=learn['lr'], eps=learn['adam_eps'], fused=True)
    elif variant.startswith('compile'):
        mode = 'reduce-overhead' if variant == 'compile_reduce_overhead' else None
        policy.model = torch.compile(policy.model, mode=mode)
    return lambda: policy.learn(chunk, progress=0.5)


def ppo_update(devices, deadline: Deadline, smoke: bool, variants=PPO_VARIANTS, cpu_base: bool = True) -> dict:
    """The ready update on the CPU (all threads and one, where ``cpu_base``), then each of ``variants`` on CUDA (and,
    in a smoke run, on the CPU), batch by batch."""
    import torch
    batches = dict(smoke_512=8) if smoke else PPO_BATCHES
    steps = 64
    repeats = 1 if smoke else 5
    out: dict = {}
    cpu_threads = (1,) if smoke else (os.cpu_count() or 1, 1)  # a busy small machine's threads only spin
    plan = [(label, 'cpu', 'ready', threads) for label in batches for threads in cpu_threads] if cpu_base else []
    for label in batches:
        for device in devices:
            if device == 'cpu' and not smoke:
                continue
            for variant in variants:
                if device == 'cpu' and (variant == 'ready' or variant in PPO_COMPILED):
                    continue  # measured above; compiling takes longer than a smoke run has
                plan.append((label, device, variant, 1))
    for label, device, variant, threads in plan:
        name = f'{label}:{device}:{variant}' + (f':threads{threads}' if device == 'cpu' else '')
        if not deadline.fits(60.0 if variant.startswith('compile') else 2.0):
            out[name] = dict(skipped=f'the section budget had {deadline.left():.0f} s left')
            continue
        torch.set_num_threads(threads)
        try:
            figures = timed(_ppo_update_call(variant, batches[label], steps, device), device, deadline, repeats)
        except Exception as exc:  # noqa: BLE001 -- a variant that fails is recorded; the next one still runs
            out[name] = dict(error=f'{type(exc).__name__}: {exc}'[:600], traceback=traceback.format_exc()[-1500:])
            print(f'ppo update {name}: {json.dumps(dict(error=out[name]["error"]))}', flush=True)
            continue
        finally:
            torch.set_num_threads(os.cpu_count() or 1)
        samples = PPO_EPOCHS * steps * batches[label]
        out[name] = dict(seconds_per_update=round(figures['seconds'], 4),
                         samples_per_second=round(samples / figures['seconds']),
                         warm_up_seconds=figures['warm_up_seconds'], repeats=figures['repeats'])
        print(f'ppo update {name}: {json.dumps(out[name])}', flush=True)
    return out


def with_cpu_ratios(figures: dict, cpu_figures: dict) -> dict:
    """Each CUDA update's samples per second over the same batch's ready update on every CPU thread."""
    for name, entry in figures.items():
        if not isinstance(entry, dict) or name.count(':') < 2:
            continue
        label, device = name.split(':')[:2]
        base = cpu_figures.get(f'{label}:cpu:ready:threads{os.cpu_count() or 1}', {}).get('samples_per_second')
        if device != 'cpu' and base and 'samples_per_second' in entry:
            entry['vs_cpu_all_threads'] = round(entry['samples_per_second'] / base, 2)
    return figures


def ppo_in_child(section: str, devices, deadline: Deadline, smoke: bool) -> dict:
    """``ppo_update`` or ``ppo_update_compiled`` in a child process stopped when the section's budget is spent: a
    CUDA graph capture that fails can leave the process's CUDA context unusable, and compiling may overrun."""
    if section == 'ppo_update_compiled' and 'cuda' not in devices and not smoke:
        return dict(skipped='no CUDA device')
    args = ['--section', section, ','.join(devices), str(deadline.left())] + (['--smoke'] if smoke else [])
    try:
        return _child(args, timeout=deadline.left() + 30)
    except subprocess.TimeoutExpired as exc:  # what it measured before it was stopped, from its printed lines
        text = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or '')
        out = {line.split(': ', 1)[0][len('ppo update '):]: json.loads(line.split(': ', 1)[1])
               for line in text.splitlines() if line.startswith('ppo update ')}
        return dict(out, stopped=f'the child ran past the section budget ({exc.timeout:.0f} s)')


def _section_main(argv) -> None:
    name, devices, seconds, smoke = argv[0], argv[1].split(','), float(argv[2]), '--smoke' in argv
    sys.path.insert(0, HERE)
    compiled = name == 'ppo_update_compiled'
    out = ppo_update(devices, Deadline(seconds - 10.0), smoke, variants=PPO_COMPILED if compiled else PPO_VARIANTS,
                     cpu_base=not compiled)
    print('GPU_CHECK_RESULT ' + json.dumps(out, default=str), flush=True)


# -- SAC's update --------------------------------------------------------------------------------------------------
SAC_SHAPES = dict(pendulum_128=(3, 1, [128, 128]), hopper_256=(11, 3, [256, 256]))  # obs, actions, hidden sizes
SAC_UPDATES = 64  # gradient steps of batch 256 per learned chunk


def _sac_learn_call(obs_dim: int, act_dim: int, hidden: list, updates: int, device: str):
    import gymnasium as gym
    import numpy as np
    import torch
    from sparring.config import compile_section
    from sparring.policy.sac import SACPolicy
    cfg = compile_section('policy', dict(type='sac', model=dict(hidden_sizes=hidden), replay=dict(capacity=100_000),
                                         learn=dict(lr=1e-3, updates_per_chunk=updates, learning_starts=1)))
    box = gym.spaces.Box(-1.0, 1.0, (act_dim,), np.float32)
    policy = SACPolicy(cfg, gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32), box, seed=0)
    T, B = 64, 8
    rng = np.random.default_rng(0)
    obs = rng.standard_normal((T, B, obs_dim)).astype(np.float32)
    chunk = dict(obs=obs, next_obs=rng.standard_normal((T, B, obs_dim)).astype(np.float32),
                 action=rng.uniform(-1, 1, (T, B, act_dim)).astype(np.float32), reward=rng.standard_normal((T, B)),
                 terminated=rng.random((T, B)) < 0.01, truncated=np.zeros((T, B), bool))
    policy.to_device(torch.device(device))
    return lambda: policy.learn(chunk, progress=0.5)


def sac_update(devices, deadline: Deadline, smoke: bool) -> dict:
    import torch
    updates = 4 if smoke else SAC_UPDATES
    out: dict = {}
    cpu_threads = (1,) if smoke else (os.cpu_count() or 1, 1)
    plan = [(shape, 'cpu', threads) for shape in SAC_SHAPES for threads in cpu_threads]
    plan += [(shape, device, 1) for shape in SAC_SHAPES for device in devices if device != 'cpu']
    for shape, device, threads in plan:
        name = f'{shape}:{device}' + (f':threads{threads}' if device == 'cpu' else '')
        if not deadline.fits(1.0):
            out[name] = dict(skipped=f'the section budget had {deadline.left():.0f} s left')
            continue
        torch.set_num_threads(threads)
        try:
            figures = timed(_sac_learn_call(*SAC_SHAPES[shape], updates, device), device, deadline, 1 if smoke else 5)
        except Exception as exc:  # noqa: BLE001 -- recorded; the next measurement still runs
            out[name] = dict(error=f'{type(exc).__name__}: {exc}'[:600], traceback=traceback.format_exc()[-1500:])
            continue
        finally:
            torch.set_num_threads(os.cpu_count() or 1)
        out[name] = dict(gradient_steps_per_second=round(updates / figures['seconds'], 1),
                         ms_per_gradient_step=round(1000 * figures['seconds'] / updates, 3),
                         repeats=figures['repeats'])
        base = out.get(f'{shape}:cpu:threads{os.cpu_count() or 1}', {}).get('gradient_steps_per_second')
        if base and device != 'cpu':
            out[name]['vs_cpu_all_threads'] = round(out[name]['gradient_steps_per_second'] / base, 2)
        print(f'sac update {name}: {json.dumps(out[name])}', flush=True)
    return out


# -- the forward-pass worker's rows --------------------------------------------------------------------------------
FORWARD_BATCHES = (1, 16, 64, 256, 1024, 4096)


def _cnn_policy(device: str):
    """The ready league's PPO network on ``device``."""
    import torch
    from sparring.config import compile_config
    from sparring.config.registry import POLICY_REGISTRY
    from sparring.dizoo.board_games.config.connect_four_league import config
    from sparring.worker.run_kind import run_kind
    cfg = compile_config(dict(config, exp_name=tempfile.mkdtemp(prefix='gpu_check_fp_')), save=False)
    obs_space, act_space = run_kind(cfg).spaces()
    policy = POLICY_REGISTRY.get('ppo')(cfg.policy, obs_space, act_space, seed=0)
    policy.set_params(policy.get_params(), 1)
    return policy.to_device(torch.device(device))


def _rows_per_second(call, rows: int, seconds: float) -> float:
    call()  # warm-up
    n, started = 0, time.perf_counter()
    while n < 3 or time.perf_counter() - started < seconds:
        call()
        n += 1
    return rows * n / (time.perf_counter() - started)


def _over_socket(policy, sizes, seconds: float) -> dict:
    """Rows per second through a forward-pass server (in a thread of this process) holding ``policy``: one client
    sending request after request, the round trip included."""
    import numpy as np
    import zmq
    from sparring.worker.inference_client import ForwardClient, RemoteActingPolicy
    from sparring.worker.remote.inference import InferenceServer
    from sparring.worker.remote.security import Security
    from sparring.worker.remote.wire import Signer

    class One:  # the network source: ``policy`` under every ref, at version 1
        def sync(self, ref, role=None):
            return 1

        def get(self, ref, version, role=None):
            return policy

    context, security = zmq.Context(), Security(Signer(b'gpu-check-secret'))
    server = InferenceServer(context, security, '127.0.0.1', One(), max(sizes), 0.0,
                             {None: policy.observation_space.shape})
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [server.serve(0.05) for _ in iter(stop.is_set, True)], daemon=True)
    thread.start()
    client = ForwardClient(context, security, 'gpu-check', lambda: [server.address])
    remote = RemoteActingPolicy(policy, 'p', client)
    out = {}
    try:
        rng = np.random.default_rng(0)
        for size in sizes:
            obs = rng.integers(-1, 2, (size, *policy.observation_space.shape)).astype(policy.observation_space.dtype)
            rate = _rows_per_second(lambda o=obs: remote.forward(o), size, seconds)
            out[str(size)] = dict(rows_per_second=round(rate), round_trip_ms=round(1000 * size / rate, 3))
    finally:
        stop.set()
        thread.join(5.0)
        client.close()
        server.close()
        context.destroy(linger=0)
    return out


def forward_rows(devices, deadline: Deadline, smoke: bool) -> dict:
    import numpy as np
    import torch
    from sparring.worker.inference_forward import forward_rows as forward
    sizes = (1, 64) if smoke else FORWARD_BATCHES
    per_size = 0.05 if smoke else max(0.1, min(1.0, deadline.left() / (len(sizes) * (len(devices) + 1) * 1.5)))
    torch.set_num_threads(1)
    out: dict = dict(seconds_per_size=round(per_size, 2), torch_threads=1, in_process={})
    try:
        for device in devices:
            policy = _cnn_policy(device)
            rng = np.random.default_rng(0)
            rows = {}
            for size in sizes:
                obs = rng.integers(-1, 2, (size, *policy.observation_space.shape)).astype(policy.observation_space.dtype)
                rows[str(size)] = round(_rows_per_second(lambda o=obs, p=policy: forward(p, o), size, per_size))
            out['in_process'][device] = rows
            print(f'forward rows in process on {device}: {rows}', flush=True)
        device = devices[0]  # CUDA where there is one
        out['over_socket'] = dict(device=device, rows=_over_socket(_cnn_policy(device), sizes, per_size))
        print(f'forward rows over the socket on {device}: {out["over_socket"]["rows"]}', flush=True)
    finally:
        torch.set_num_threads(os.cpu_count() or 1)
    return out


# -- search self-play (expert iteration) ---------------------------------------------------------------------------
def search_selfplay(devices, deadline: Deadline, root: str, sampler: 'GpuSampler', smoke: bool) -> dict:
    """The perfect-play config as a serial run per device (CUDA: the learner and the search's network), each
    within an equal part of the section's budget; env steps per second of the whole run's training loop."""
    out: dict = dict(config=SEARCH_SELFPLAY_CONFIG)
    for i, device in enumerate(devices):
        seconds = 3.0 if smoke else (deadline.left() / (len(devices) - i)) - CHILD_START_SECONDS
        if not smoke and seconds < 5.0:
            out[device] = dict(skipped=f'the section budget had {deadline.left():.0f} s left')
            continue
        exp = os.path.join(root, f'search_selfplay_{device}')
        with sampler:
            result = _child(['--child', SEARCH_SELFPLAY_CONFIG, device, str(seconds), exp,
                             'smoke' if smoke else 'selfplay'], timeout=seconds + CHILD_START_SECONDS + 90)
        out[device] = dict(_run_summary(result), exp=exp, gpu_processes_peak_mib=dict(sampler.peak_mib))
        print(f'search self-play on {device}: {json.dumps(out[device], default=str)[:400]}', flush=True)
    rates = {d: out[d].get('env_steps_per_second') for d in devices if isinstance(out.get(d), dict)}
    if rates.get('cuda') and rates.get('cpu'):
        out['cuda_vs_cpu'] = round(rates['cuda'] / rates['cpu'], 2)
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
    info = dict(python=platform.python_version(), cpu_count=os.cpu_count(), load_average=list(os.getloadavg()))
    from results_file import cpu_model
    info['cpu_model'] = cpu_model()
    try:
        import torch
    except ImportError as exc:
        return dict(info, torch_error=str(exc))
    info.update(torch=torch.__version__, cuda=torch.cuda.is_available())
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1),
                    multiprocessors=props.multi_processor_count)
    return info


def commit() -> str:
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True, cwd=HERE,
                              timeout=10).stdout.strip() or 'unknown'
    except (OSError, subprocess.SubprocessError):
        return 'unknown'


STAMPS = '_stamps'  # results_file.STAMPS: the report is a stamped record as it comes back from the GPU machine


def stamps_of(report: dict) -> dict:
    """Every entry of ``report`` stamped with the machine it was measured on (not the one that commits it)."""
    machine = report['machine']
    own = dict(commit=report['commit'], date=report['date'], cpu_model=machine.get('cpu_model', 'unknown'),
               load_average=machine.get('load_average', 'unknown'), command=report['command'])
    return {key: own for key in report if key != STAMPS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--budget', type=float, default=420.0,
                        help='wall seconds of the whole check; each section has its share (default 420)')
    parser.add_argument('--seconds', type=float, default=20.0,
                        help='wall-time budget of each training run of the serial, parallel and forward_pass sections')
    parser.add_argument('--out', default=None, help='also write the JSON here')
    parser.add_argument('--sections', nargs='+', default=DEFAULT_SECTIONS, choices=list(SHARES))
    parser.add_argument('--smoke', action='store_true', help='every section at toy sizes, for a test without a GPU')
    parser.add_argument('--keep', default=None, help='keep the run directories here (default: a temporary folder)')
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    started = time.perf_counter()
    report: dict = dict(machine=machine(), commit=commit(), date=time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
                        command=' '.join(['python3'] + sys.argv), budget_seconds=args.budget, smoke=args.smoke)
    print(json.dumps(report), flush=True)
    devices = ['cuda', 'cpu'] if report['machine'].get('cuda') else ['cpu']
    report['devices'] = devices
    root = args.keep or tempfile.mkdtemp(prefix='gpu_check_')
    sampler = GpuSampler()
    sections = dict(
        ppo_update=lambda d: ppo_in_child('ppo_update', devices, d, args.smoke),
        sac_update=lambda d: sac_update(devices, d, args.smoke),
        forward_rows=lambda d: forward_rows(devices, d, args.smoke),
        search_selfplay=lambda d: search_selfplay(devices, d, root, sampler, args.smoke),
        ppo_update_compiled=lambda d: ppo_in_child('ppo_update_compiled', devices, d, args.smoke),
        serial=lambda d: serial(devices, args.seconds, root, sampler),
        parallel=lambda d: parallel(devices, args.seconds, root, sampler),
        forward_pass=lambda d: forward_pass(devices, args.seconds, root, sampler),
        cpu_load=lambda d: cpu_load(sorted(os.path.join(root, r) for r in os.listdir(root))))
    for i, name in enumerate(args.sections):
        left = args.budget - (time.perf_counter() - started)
        later = sum(SHARES[n] for n in args.sections[i:])
        deadline = Deadline(max(0.0, left * SHARES[name] / later))  # what earlier sections left over is shared
        section_started = time.perf_counter()
        try:
            report[name] = sections[name](deadline)
            if name.startswith('ppo_update') and isinstance(report.get('ppo_update'), dict):
                report[name] = with_cpu_ratios(report[name], report['ppo_update'])
        except Exception as exc:  # noqa: BLE001 -- one section's failure is reported, the next still runs
            report[name] = dict(error=f'{type(exc).__name__}: {exc}'[:1500], traceback=traceback.format_exc()[-3000:])
            print(f'section {name} failed: {report[name]["error"]}', flush=True)
        report.setdefault('section_seconds', {})[name] = round(time.perf_counter() - section_started, 1)
    report['total_seconds'] = round(time.perf_counter() - started, 1)
    report['load_average_end'] = list(os.getloadavg())
    report[STAMPS] = stamps_of(report)
    text = json.dumps(report, indent=1, default=str)
    print(text)
    if args.out:
        with open(args.out, 'w') as f:
            f.write(text + '\n')


if __name__ == '__main__':
    if len(sys.argv) > 1 and sys.argv[1] == '--child':
        _child_main(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == '--section':
        _section_main(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == '--eval':
        _eval_main(sys.argv[2:])
    else:
        main()
