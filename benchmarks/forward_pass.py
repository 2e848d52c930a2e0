"""Forward-pass workers against local acting: inference rows/s by batch size, and a league's env steps/s.

* ``rows``: the connect-four CNN of the ready league config (``connect_four_league.py``), by batch size: rows per
  second and the p50 / p99 of one call, of the forward pass in process
  (:func:`~sparring.worker.inference_forward.forward_rows`) and of the round trip to a forward-pass server over a
  signed, CURVE-encrypted ZeroMQ socket (one client sending request after request), with the server in a thread
  of this process and in a process of its own; on an idle machine and with ``--neighbours`` (2) CPU-bound
  processes beside it, which the section starts and stops itself (``rows_by_batch_size`` and
  ``rows_by_batch_size_loaded``). The server batches as a run's does (``max_batch`` 256, ``max_wait_ms`` 2).
* ``league``: the connect-four league for a fixed wall-time budget, with collectors acting themselves and with a
  forward-pass worker, at the same number of processes (1 collector + 1 forward-pass worker against 2
  collectors) and with one process more (2 collectors + 1 forward-pass worker). Env steps per second of the whole
  run (start-up and the final evaluation included) and per second of collecting (the collectors' own rate), and
  where the time goes: the collectors' seconds waiting for forward passes (round trips; with double buffering the
  two halves' waits overlap each other and the other half's env steps, so they may add up to more than the
  collecting seconds); the forward-pass worker's mean batch, its batching delay (the time requests waited for
  their batch) and its forward seconds.
* ``search``: expert iteration's self-play (``connect_four_search.py``, 8 simulations a move), local acting
  against a forward-pass worker at the same number of processes: its search sends a batch of evaluations
  per simulation.
* ``security``: round trips between two processes with no authentication, HMAC signatures, and HMAC + CURVE
  (the default of a run with a secret): what signing and encryption cost a round trip.
* ``branches``: the same seeded league to the same env-step budget (``--env-steps``), 2 local collectors against
  1 collector + 1 forward-pass worker: games per opponent kind (itself, its snapshots, reference players) side
  by side, with each share's difference in standard errors.

``--against TREE`` checks a change to the forward-pass path for a slowdown instead: the ``rows`` section on an idle
machine (batch sizes ``--sizes``, ``--size-seconds`` each), alternating between this checkout and another one (e.g.
``git worktree add`` of the commit before; its ``.typecheck/sparring`` imports it), ``--repeats`` pairs in
alternating order, each run a fresh process running its own checkout's rows section; the record (entry
``rows_against``) holds every run, the medians and their ratios, and each run's per-request costs without the
socket and the pass (:func:`request_costs`: the figure a busy machine moves least).

Every league run has ``parallel.max_chunks_ahead`` = :data:`CHUNKS_AHEAD`, so every configuration may have the
same number of chunks waiting at the learner. Set ``SPARRING_PROFILE_DIR`` to have every worker process write a
cProfile of its main thread (:mod:`sparring.framework.workers`).

    PYTHONPATH=... python benchmarks/forward_pass.py [--sections rows league search branches security] [--seconds 60]
                                                     [--env-steps 61440] [--neighbours 2] [--tag TAG]
    PYTHONPATH=... python benchmarks/forward_pass.py --smoke   # rows, idle and loaded, in seconds
    PYTHONPATH=... python benchmarks/forward_pass.py --against ../before --sizes 64 256 --size-seconds 2 --repeats 5

Writes ``benchmarks/results/forward_pass.json`` (the machine, its load average and every figure, each entry
stamped with the run that measured it; ``--tag`` records the sections under suffixed names, to keep a
comparison's two sides).
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import torch

from results_file import add_smoke, apply_smoke, cpu_model, merge_results

BATCH_SIZES = (1, 4, 16, 64, 256, 1024)
# Chunks a learner may have waiting (parallel.max_chunks_ahead), the same in every run: its default is the number
# of collectors, which would hold one collector with a forward-pass worker to one chunk at a time (collecting and
# learning then take turns) while two local collectors get two.
CHUNKS_AHEAD = 2
SECONDS_PER_SIZE = 1.0
SERVER_BATCHING = (256, 2.0)  # max_batch and max_wait_ms of a forward-pass server: a run's defaults
NEIGHBOURS = 2  # CPU-bound processes beside the loaded measurement (a 2-core machine's envs and collectors)



def _serving_only(policy):
    """A network source for a forward-pass server that holds ``policy`` alone, at version 1, under every ref."""
    class One:
        def sync(self, ref, role=None):
            return 1

        def get(self, ref, version, role=None):
            return policy
    return One

def _cnn_policy():
    from sparring.config import compile_config
    from sparring.config.registry import POLICY_REGISTRY
    from sparring.dizoo.board_games.config.connect_four_league import config
    from sparring.worker.run_kind import run_kind
    cfg = compile_config(dict(config, exp_name=tempfile.mkdtemp(prefix='fp_')), save=False)
    obs_space, act_space = run_kind(cfg).spaces()
    return POLICY_REGISTRY.get('ppo')(cfg.policy, obs_space, act_space, seed=0)


def _timed(call, seconds: float) -> np.ndarray:
    """Seconds of each of the calls made in about ``seconds`` (after one call of warm-up)."""
    call()
    times, started = [], time.perf_counter()
    while time.perf_counter() - started < seconds:
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return np.asarray(times)


def _figures(times: np.ndarray, rows: int) -> dict:
    return dict(rows_per_second=round(rows * len(times) / max(float(times.sum()), 1e-12)),
                p50_ms=round(1000 * float(np.percentile(times, 50)), 3),
                p99_ms=round(1000 * float(np.percentile(times, 99)), 3), calls=len(times))


def _spin() -> None:
    """A CPU-bound neighbour (an env or a collector that never waits): it runs until it is terminated."""
    while True:
        pass


class Neighbours:
    """``count`` CPU-bound processes beside the measurement, started on entry and stopped on exit."""

    def __init__(self, count: int) -> None:
        import multiprocessing
        self.processes = [multiprocessing.get_context('fork').Process(target=_spin, daemon=True)
                          for _ in range(count)]

    def __enter__(self) -> 'Neighbours':
        for process in self.processes:
            process.start()
        time.sleep(0.5 if self.processes else 0.0)  # the neighbours running before anything is measured
        return self

    def __exit__(self, *exc) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.join(10)


def _thread_server(policy, security, stop):
    """A forward-pass server of ``policy`` answering in a thread of this process: its address and the thread."""
    import zmq
    from sparring.worker.remote.inference import InferenceServer
    context = zmq.Context()
    server = InferenceServer(context, security, '127.0.0.1', _serving_only(policy)(), *SERVER_BATCHING,
                             {None: policy.observation_space.shape})

    def loop():
        while not stop.is_set():
            server.serve(0.05)
        server.close()
        context.destroy(linger=0)
    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return server.address, thread


def rows_section(neighbours: int = 0, sizes=BATCH_SIZES, seconds: float = SECONDS_PER_SIZE,
                 servers=('thread', 'process')) -> dict:
    """Rows per second and the p50 / p99 of one call by batch size: the forward pass in process, and the round trip
    to a forward-pass server (in a thread of this process, as a double-buffered collector's other half would
    wait beside it, and in a process of its own, as a forward-pass worker runs), with ``neighbours`` CPU-bound
    processes running beside (0: an idle machine)."""
    import multiprocessing
    import zmq
    from sparring.worker.inference_client import ForwardClient, RemoteActingPolicy
    from sparring.worker.inference_forward import forward_rows
    from sparring.worker.inference_halves import SWITCH_SECONDS
    policy = _cnn_policy()
    policy.set_params(policy.get_params(), 1)
    sys.setswitchinterval(SWITCH_SECONDS)  # as in a double-buffered collector: the client thread wakes at once
    rng = np.random.default_rng(0)
    batches = {size: rng.integers(-1, 2, (size, *policy.observation_space.shape)).astype(
        policy.observation_space.dtype) for size in sizes}
    out: dict = dict(neighbours=neighbours)
    with Neighbours(neighbours):
        out['load_average_measured'] = list(os.getloadavg())
        out['in_process'] = {}
        for size, obs in batches.items():
            out['in_process'][str(size)] = _figures(_timed(lambda o=obs: forward_rows(policy, o), seconds), size)
        for where in servers:
            # A server process is spawned, not forked: a child forked from a process whose threads ran torch can
            # inherit OpenMP's state and hang in its first pass.
            spawn = multiprocessing.get_context('spawn')
            stop = threading.Event() if where == 'thread' else spawn.Event()
            if where == 'thread':
                address, runner = _thread_server(policy, _security('curve'), stop)
            else:
                addresses = spawn.Queue()
                runner = spawn.Process(target=_serve_in_process, args=('curve', addresses, stop))
                runner.start()
                address = addresses.get(timeout=120)
            context = zmq.Context()
            client = ForwardClient(context, _security('curve'), 'bench', lambda a=address: [a])
            remote = RemoteActingPolicy(policy, 'p', client)
            figures = {}
            try:
                for size, obs in batches.items():
                    socket = figures[str(size)] = _figures(_timed(lambda o=obs, r=remote: r.forward(o), seconds), size)
                    local = out['in_process'][str(size)]
                    socket['added_p50_ms'] = round(socket['p50_ms'] - local['p50_ms'], 3)
                    print(f'{neighbours} neighbours, server in a {where:7s} batch {size:5d}: '
                          f'{local["rows_per_second"]:8d} rows/s in process (p50 {local["p50_ms"]:.2f} ms), '
                          f'{socket["rows_per_second"]:8d} over the socket (p50 {socket["p50_ms"]:.2f} ms, '
                          f'p99 {socket["p99_ms"]:.2f} ms, {socket["added_p50_ms"]:+.2f} ms added)', flush=True)
            finally:
                client.close()
                context.destroy(linger=0)
                stop.set()
                runner.join(30)
            out[f'server_in_{where}'] = figures
    return out


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHERE = ('in_process', 'server_in_thread', 'server_in_process')


REQUEST_COST_CALLS = 3000


def request_costs(rows: int = 64, calls: int = REQUEST_COST_CALLS) -> dict:
    """The forward-pass path's own work per request, without its socket or its forward pass: microseconds (median of
    ``calls``) for the server to take one decoded ``forward`` request of ``rows`` rows into its batch (``handle``: its
    network, request spec and rows checked) and empty the batch, and for a collector's ``RemoteActingPolicy.forward``
    to send the request and read a canned reply. It builds the server for the checkout it runs on: its observation
    shapes by role (``{None: shape}`` in a symmetric game), or the one shape of a checkout from before roles, so
    ``--against`` measures both alike."""
    import inspect
    from types import SimpleNamespace

    import zmq
    from sparring.worker.inference_client import RemoteActingPolicy
    from sparring.worker.inference_forward import forward_rows
    from sparring.worker.remote.inference import InferenceServer
    policy = _cnn_policy()
    policy.set_params(policy.get_params(), 1)
    shape = policy.observation_space.shape
    by_role = 'observation_shapes' in inspect.signature(InferenceServer).parameters
    context = zmq.Context()
    server = InferenceServer(context, _security('none'), '127.0.0.1', _serving_only(policy)(), *SERVER_BATCHING,
                             {None: shape} if by_role else shape)
    obs = np.zeros((rows, *shape), policy.observation_space.dtype)
    request = SimpleNamespace(kind='forward', id='m', body=dict(ref='p', version=1, rows=rows), arrays=dict(obs=obs))
    out = forward_rows(policy, obs)
    reply = SimpleNamespace(body=dict(version=1), arrays=dict(head=out.head, value=out.value))

    class Canned:  # a client whose every request is answered at once with ``reply``
        sender = 'bench'

        def request(self, kind, body, arrays=None):
            return reply

    def take():
        server.handle(b'peer', request)
        server.batcher.take()
    remote = RemoteActingPolicy(policy, 'p', Canned())
    try:
        figures = {name: round(1e6 * float(np.median([_timed_once(call) for _ in range(calls)])), 2)
                   for name, call in (('server_take_us', take), ('client_forward_us', lambda: remote.forward(obs)))}
    finally:
        server.close()
        context.destroy(linger=0)
    assert server.counters['malformed'] == 0, 'request_costs: the server refused the benchmark\'s request'
    return dict(rows=rows, calls=calls, **figures)


def _timed_once(call) -> float:
    began = time.perf_counter()
    call()
    return time.perf_counter() - began


def _rows_of_checkout(root: str, sizes, seconds: float) -> dict:
    """The idle rows section of the checkout at ``root``, its own script and code, in a fresh process, and the
    request costs (:func:`request_costs`, this script's) of that checkout."""
    code = (f'import importlib.util, json, sys, torch; sys.path.insert(0, {os.path.join(root, "benchmarks")!r}); '
            f'torch.set_num_threads(1); import forward_pass; '
            f'out = forward_pass.rows_section(0, sizes={tuple(sizes)!r}, seconds={seconds!r}); '
            f'spec = importlib.util.spec_from_file_location("this_forward_pass", {os.path.abspath(__file__)!r}); '
            f'this = importlib.util.module_from_spec(spec); spec.loader.exec_module(this); '
            f'out["request_costs"] = this.request_costs(); print(json.dumps(out))')
    env = dict(os.environ, PYTHONPATH=os.path.join(root, '.typecheck'))
    out = subprocess.run([sys.executable, '-c', code], env=env, cwd=root, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def rows_against(tree: str, sizes, seconds: float, repeats: int) -> dict:
    """Idle rows sections alternating between this checkout and ``tree`` (pair i in the order this, against when i is
    even, the other way round when odd): every run, the median rows per second by where and batch size on each side,
    and their ratio (this / against)."""
    roots = dict(this=ROOT, against=os.path.abspath(tree))
    runs: dict = {name: [] for name in roots}
    for i in range(repeats):
        for name in (list(roots) if i % 2 == 0 else list(reversed(roots))):
            run = _rows_of_checkout(roots[name], sizes, seconds)
            runs[name].append(run)
            costs = run['request_costs']
            print(f'pair {i} {name:8s} (load {run["load_average_measured"][0]:.2f}) ' + ', '.join(
                f'{where} {size}: {run[where][str(size)]["rows_per_second"]}' for where in WHERE for size in sizes)
                + f'; per request: server {costs["server_take_us"]} us, client {costs["client_forward_us"]} us',
                flush=True)
    medians = {name: {where: {str(size): statistics.median(run[where][str(size)]['rows_per_second']
                                                           for run in runs[name]) for size in sizes}
                      for where in WHERE} for name in roots}
    ratio = {where: {str(size): round(medians['this'][where][str(size)] / medians['against'][where][str(size)], 3)
                     for size in sizes} for where in WHERE}
    costs = {name: {key: statistics.median(run['request_costs'][key] for run in runs[name])
                    for key in ('server_take_us', 'client_forward_us')} for name in roots}
    print(f'this / against, ratio of the medians: {ratio}; per request (medians, us): {costs}')
    return dict(against=tree, sizes=list(sizes), seconds_per_size=seconds, repeats=repeats, runs=runs,
                median_rows_per_second=medians, ratio=ratio, median_request_costs_us=costs)


SECURITY_MODES = ('none', 'hmac', 'curve')
SECURITY_REPEATS = 4
SECURITY_REQUESTS = 300


def _security(mode: str):
    from sparring.worker.remote.security import Security
    from sparring.worker.remote.wire import Signer
    if mode == 'none':
        return Security(Signer(None))
    return Security(Signer(b'forward-pass-benchmark-secret'), curve_from_secret=mode == 'curve')


def _serve_in_process(mode: str, addresses, stop) -> None:
    """A forward-pass server of the CNN in a process of its own (the ``security`` section)."""
    import zmq
    from sparring.worker.remote.inference import InferenceServer
    torch.set_num_threads(1)
    policy = _cnn_policy()
    policy.set_params(policy.get_params(), 1)
    One = _serving_only(policy)

    context = zmq.Context()
    server = InferenceServer(context, _security(mode), '127.0.0.1', One(), *SERVER_BATCHING,
                             {None: policy.observation_space.shape})
    addresses.put(server.address)
    while not stop.is_set():
        server.serve(0.05)
    server.close()
    context.destroy(linger=0)


def _round_trips(client, policy, obs) -> dict:
    """Mean milliseconds of one network's forward pass over ``client``, of a two-network wave, and in process."""
    from sparring.worker.inference_client import RemoteActingPolicy
    home, snapshot = RemoteActingPolicy(policy, 'home', client), RemoteActingPolicy(policy, 'snapshot', client)
    calls = dict(one=lambda: home.forward(obs),
                 wave=lambda: client.wave.forward([(home, obs, None), (snapshot, obs[:4], None)]),
                 in_process=lambda: policy.network_output(obs))
    for _ in range(20):  # warm-up (and the CURVE handshake)
        home.forward(obs)
    out = {}
    for kind, call in calls.items():
        started = time.perf_counter()
        for _ in range(SECURITY_REQUESTS):
            call()
        out[kind] = 1000 * (time.perf_counter() - started) / SECURITY_REQUESTS
    return out


def security_section() -> dict:
    """Round trips between two processes by security mode (none, HMAC signatures, HMAC + CURVE): one network's 25
    rows, a wave of two networks (25 + 4 rows, as a battle step against a snapshot), and the forward pass of 25
    rows in process; modes interleaved, :data:`SECURITY_REPEATS` rounds, medians."""
    import multiprocessing
    import zmq
    from sparring.worker.inference_client import ForwardClient
    policy = _cnn_policy()
    policy.set_params(policy.get_params(), 1)
    obs = np.zeros((25, *policy.observation_space.shape), dtype=policy.observation_space.dtype)
    times: dict = {mode: dict(one=[], wave=[], in_process=[]) for mode in SECURITY_MODES}

    fork = multiprocessing.get_context('fork')
    for _ in range(SECURITY_REPEATS):
        for mode in SECURITY_MODES:
            addresses, stop = fork.Queue(), fork.Event()
            process = fork.Process(target=_serve_in_process, args=(mode, addresses, stop))
            process.start()
            address = [addresses.get(timeout=120)]
            context = zmq.Context()
            client = ForwardClient(context, _security(mode), 'bench', address.copy)
            try:
                for kind, ms in _round_trips(client, policy, obs).items():
                    times[mode][kind].append(ms)
            finally:
                client.close()
                context.destroy(linger=0)
                stop.set()
                process.join(30)
    out = {mode: {f'{k}_ms': round(float(np.median(v)), 3) for k, v in t.items()} for mode, t in times.items()}
    print(f'security: {json.dumps(out)}', flush=True)
    return out


def league_config(workdir: str, name: str, collectors: int, inference: int, seconds: float,
                  double_buffer: bool = True, search: bool = False, env_steps: int = 10_000_000,
                  chunks_ahead: int = CHUNKS_AHEAD) -> dict:
    import importlib
    module = 'connect_four_search' if search else 'connect_four_league'
    config = copy.deepcopy(importlib.import_module(f'sparring.dizoo.board_games.config.{module}').config)
    config['exp_name'] = os.path.join(workdir, name)
    config['env'].update(collector_env_num=32, n_evaluator_episodes=10, evaluator_env_num=10)
    if search:  # fewer simulations, so a round of 32 steps fits the budget on two cores
        config['battle']['collect_search'] = dict(config['battle']['collect_search'], num_simulations=8)
        config['policy']['collect'] = dict(config['policy']['collect'], n_steps=8)
    config['battle'] = dict(config['battle'], eval_opponents=['bot:random'])
    config['train'] = dict(config['train'], max_env_steps=env_steps, max_wall_seconds=seconds, eval_every_iters=0,
                           eval_in_background=False, checkpoint_every_iters=0, progress_bar=False, tensorboard=False)
    config['parallel'] = dict(collectors=collectors, evaluators=0, max_chunks_ahead=chunks_ahead,
                              inference=dict(workers=inference, double_buffer=double_buffer))
    return config


def league_run(workdir: str, name: str, collectors: int, inference: int, seconds: float,
               double_buffer: bool = True, search: bool = False, env_steps: int = 10_000_000) -> dict:
    from sparring.framework import parallel_pipeline
    started = time.perf_counter()
    summary = parallel_pipeline(league_config(workdir, name, collectors, inference, seconds, double_buffer, search,
                                              env_steps), seed=0)
    stats = summary['worker_stats']
    collector_stats = [s for w, s in stats.items() if w.startswith('collector')]
    collect_seconds = sum(s.get('collect_seconds', 0.0) for s in collector_stats)
    forward_seconds = sum(s.get('forward_seconds', 0.0) for s in collector_stats)
    round_trips = sum(s.get('forward_round_trips', 0.0) for s in collector_stats)
    env_steps = sum(s.get('env_steps', 0.0) for s in collector_stats)
    out = dict(collectors=collectors, inference_workers=inference, double_buffer=bool(inference and double_buffer),
               max_chunks_ahead=CHUNKS_AHEAD,
               load_average_after=list(os.getloadavg()), wall_seconds=round(time.perf_counter() - started, 1),
               env_steps=summary['env_steps'], collector_env_steps=env_steps,
               collector_seconds=round(collect_seconds, 1),
               env_steps_per_collector_second=round(env_steps / max(collect_seconds, 1e-9), 1),
               env_steps_per_second=round(summary['env_steps_per_second'], 1),
               train_iterations=summary['train_iterations'], restarts=summary['restarts'])
    if inference:
        worker = next(s for w, s in stats.items() if w.startswith('inference'))
        out.update(waiting_for_forward_seconds=round(forward_seconds, 1),
                   waiting_share_of_collecting=round(forward_seconds / max(collect_seconds, 1e-9), 3),
                   round_trips=int(round_trips), mean_round_trip_ms=round(1000 * forward_seconds / max(round_trips, 1), 3),
                   mean_batch_rows=round(worker['mean_batch'], 1), forward_passes=int(worker['forward_passes']),
                   batching_delay_ms_per_request=round(1000 * worker['batching_delay_seconds']
                                                       / max(worker['requests'], 1), 3),
                   forward_ms_per_pass=round(1000 * worker['forward_seconds'] / max(worker['forward_passes'], 1), 3),
                   malformed=worker['malformed'])
    out['games_by_opponent_kind'] = games_by_opponent_kind(os.path.join(workdir, name))
    print(f'{name}: {json.dumps(out)}', flush=True)
    return out


def games_by_opponent_kind(exp: str) -> dict:
    """The games the run recorded against each kind of opponent (itself, its snapshots, the reference
    players), and their shares: where the network runs must not change whom the league sends it to play."""
    from sparring.league import BaseLeague
    league = BaseLeague.load(os.path.join(exp, 'league_state.npz'))
    active = {p.player_id for p in league.active_players}
    snapshots = {p.player_id for p in league.historical_players}
    games = dict(self_play=float(sum(p.self_play_games for p in league.active_players)), snapshots=0.0, reference=0.0)
    for home, away, record in league.payoff.played_pairs():
        if home in active or away in active:
            other = away if home in active else home
            games['snapshots' if other in snapshots else 'reference'] += float(record['games'])
    total = max(sum(games.values()), 1.0)
    return dict(games={k: int(v) for k, v in games.items()}, shares={k: round(v / total, 3) for k, v in games.items()})


def league_section(seconds: float) -> dict:
    workdir = tempfile.mkdtemp(prefix='forward_pass_')
    runs = dict(local_2_collectors=(2, 0, True), inference_1_collector_1_worker=(1, 1, True),
                inference_1_collector_1_worker_single_buffer=(1, 1, False),
                inference_2_collectors_1_worker=(2, 1, True), inference_2_collectors_1_worker_single_buffer=(2, 1, False))
    out = {name: league_run(workdir, name, c, i, seconds, d) for name, (c, i, d) in runs.items()}
    base = out['local_2_collectors']['env_steps_per_second']
    for run in out.values():
        run['throughput_vs_local'] = round(run['env_steps_per_second'] / max(base, 1e-9), 3)
    return out


def branches_section(env_steps: int) -> dict:
    """The same seeded league to the same env-step budget, acting locally and through a forward-pass worker (at the
    same number of processes): the games per opponent kind side by side. ``z`` is each kind's difference of shares
    in standard errors of a share (binomial, over the two runs' games): within about 2, it is within noise."""
    workdir = tempfile.mkdtemp(prefix='forward_pass_branches_')
    local = league_run(workdir, 'branches_local', 2, 0, 3600.0, False, env_steps=env_steps)
    remote = league_run(workdir, 'branches_inference', 1, 1, 3600.0, False, env_steps=env_steps)
    kinds = {}
    n_local = sum(local['games_by_opponent_kind']['games'].values())
    n_remote = sum(remote['games_by_opponent_kind']['games'].values())
    for kind in local['games_by_opponent_kind']['games']:
        a, b = local['games_by_opponent_kind']['shares'][kind], remote['games_by_opponent_kind']['shares'][kind]
        pooled = (a * n_local + b * n_remote) / max(n_local + n_remote, 1)
        error = (pooled * (1 - pooled) * (1 / max(n_local, 1) + 1 / max(n_remote, 1))) ** 0.5
        kinds[kind] = dict(local_games=local['games_by_opponent_kind']['games'][kind],
                           inference_games=remote['games_by_opponent_kind']['games'][kind],
                           local_share=a, inference_share=b, z=round((b - a) / error, 2) if error else 0.0)
    return dict(env_step_budget=env_steps, local_2_collectors=local, inference_1_collector_1_worker=remote,
                by_kind=kinds)


def search_section(seconds: float) -> dict:
    """Expert iteration's self-play (8 simulations a move) with local acting and through a forward-pass worker."""
    workdir = tempfile.mkdtemp(prefix='forward_pass_search_')
    runs = dict(local_2_collectors=(2, 0), inference_1_collector_1_worker=(1, 1))
    out = {name: league_run(workdir, f'search_{name}', c, i, seconds, True, True) for name, (c, i) in runs.items()}
    base = out['local_2_collectors']['env_steps_per_second']
    for run in out.values():
        run['throughput_vs_local'] = round(run['env_steps_per_second'] / max(base, 1e-9), 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sections', nargs='+', default=['rows', 'league', 'search'],
                        choices=['rows', 'league', 'search', 'branches', 'security'])
    parser.add_argument('--seconds', type=float, default=60.0, help='wall-time budget of each league run')
    parser.add_argument('--env-steps', type=int, default=61_440,
                        help='branches: the env-step budget of each of its two runs')
    parser.add_argument('--neighbours', type=int, default=NEIGHBOURS,
                        help='rows: CPU-bound processes beside its loaded measurement')
    parser.add_argument('--tag', default='',
                        help='record the sections under their names with this suffix (e.g. before_fix), keeping the '
                             'untagged ones')
    parser.add_argument('--against', metavar='TREE', help='another checkout: alternate idle rows sections with it')
    parser.add_argument('--sizes', type=int, nargs='+', default=[64, 256], help='--against: the batch sizes')
    parser.add_argument('--size-seconds', type=float, default=2.0, help='--against: seconds of each batch size')
    parser.add_argument('--repeats', type=int, default=5, help='--against: pairs of runs')
    add_smoke(parser)  # rows alone, idle and loaded, three batch sizes for a tenth of a second each
    args = apply_smoke(parser.parse_args(), sections=['rows'])
    torch.set_num_threads(1)
    if args.against:
        merge_results('forward_pass', dict(rows_against=rows_against(args.against, args.sizes, args.size_seconds,
                                                                     args.repeats)))
        return
    report = dict(machine=dict(cpu_model=cpu_model(), cpu_count=os.cpu_count(), python=platform.python_version(),
                               torch=torch.__version__, load_average_start=list(os.getloadavg())))
    if 'rows' in args.sections:
        small = dict(sizes=(1, 16, 64), seconds=0.1) if args.smoke else {}
        report['rows_by_batch_size'] = rows_section(**small)
        report['rows_by_batch_size_loaded'] = rows_section(args.neighbours, **small)
    if 'league' in args.sections:
        report['league'] = league_section(args.seconds)
    if 'branches' in args.sections:
        report['branches'] = branches_section(args.env_steps)
    if 'security' in args.sections:
        report['round_trip_by_security'] = security_section()
    if 'search' in args.sections:
        report['expert_iteration'] = search_section(args.seconds)
    report['machine']['load_average_end'] = list(os.getloadavg())
    # The file keeps sections of earlier invocations: each section names the load it was measured under (and is
    # stamped with the run that measured it: merge_results).
    for key in ('rows_by_batch_size', 'rows_by_batch_size_loaded', 'league', 'branches', 'expert_iteration',
                'round_trip_by_security'):
        if key in report:
            report[f'{key}_load_average'] = dict(start=report['machine']['load_average_start'],
                                                 end=report['machine']['load_average_end'])
    suffix = f'_{args.tag}' if args.tag else ''
    merge_results('forward_pass', {k if k == 'machine' else k + suffix: v for k, v in report.items()})


if __name__ == '__main__':
    main()
