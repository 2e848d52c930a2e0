"""Chunk transport throughput between two processes over TCP on loopback, against bare pyzmq.

A collector-shaped sender pushes trajectory chunks to a learner-shaped receiver in another process:

* ``bare``: pyzmq PUSH/PULL of the chunk's array buffers as a multipart message, zero-copy, nothing else;
* ``framed``: sparring's :class:`DataPusher` / :class:`DataPuller` with authentication off: typed JSON
  header, schema validation and numpy views of the received frames;
* ``framed+hmac``: the same with every message signed and verified (HMAC-SHA256 over all bytes), and nothing
  else (the shared secret's protection before CURVE keys were derived from it);
* ``framed+hmac+curve``: what a shared secret gives today: signed, and encrypted by ZeroMQ CURVE with keys
  derived from the secret (if libzmq has CURVE);
* ``framed+curve``: encrypted by CURVE with keys from a keys directory, unsigned.

Both ends use the same high-water marks (4 messages). Each mode runs ``--repeats`` times, interleaved,
and the median is reported as chunks/s and MB/s, and as a share of bare pyzmq. Two chunk sizes: a
connect-four chunk (32 steps x 128 seat columns, ~1.5 MB) and a small tic-tac-toe one (8 x 8, ~12 kB),
where the per-message overhead dominates. Writes ``benchmarks/results/transport.json``.

    .venv/bin/python benchmarks/transport.py [--seconds 2] [--repeats 5]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import statistics
import tempfile
import time

import numpy as np
import zmq

from results_file import add_smoke, apply_smoke, merge_results
from sparring.framework.messaging import Security
from sparring.worker.remote.transport import DataPuller, DataPusher
from sparring.worker.remote.security import CurveGuard, create_curve_keys
from sparring.worker.remote.wire import Signer

SECRET = b'transport-benchmark-shared-secret'
QUEUE = 4
WARMUP = 20


def make_chunk(T: int, columns: int, obs_size: int, actions: int) -> dict:
    rng = np.random.default_rng(0)
    shape = (T, columns)
    return dict(obs=rng.random((*shape, obs_size), dtype=np.float32),
                action_mask=rng.random((*shape, actions)) < 0.5,
                action=rng.integers(0, actions, shape), log_prob=rng.random(shape, dtype=np.float32),
                value=rng.random(shape, dtype=np.float32), reward=rng.random(shape, dtype=np.float32),
                terminated=rng.random(shape) < 0.05, truncated=np.zeros(shape, bool),
                train_mask=rng.random(shape) < 0.5, value_mask=rng.random(shape) < 0.5,
                next_value=rng.random(shape, dtype=np.float32))


CHUNKS = {
    'connect_four_chunk': dict(T=32, columns=128, obs_size=84, actions=7),
    'tictactoe_chunk': dict(T=8, columns=8, obs_size=27, actions=9),
}


def _security(mode: str, keys: str) -> Security:
    if mode == 'framed+hmac':
        return Security(Signer(SECRET), curve_from_secret=False)
    if mode == 'framed+hmac+curve':
        return Security(Signer(SECRET))
    if mode == 'framed+curve':
        return Security(Signer(None), curve_dir=keys)
    return Security(Signer(None))


def receive(mode: str, keys: str, count: int, ports, results) -> None:
    """The receiving process: binds, reports its port, takes ``count`` messages and times all but the warm-up."""
    context = zmq.Context()
    guard = CurveGuard(context, keys) if mode == 'framed+curve' else None
    if mode == 'bare':
        socket = context.socket(zmq.PULL)
        socket.setsockopt(zmq.RCVHWM, QUEUE)
        port = socket.bind_to_random_port('tcp://127.0.0.1')
        take = lambda: socket.recv_multipart(copy=False)  # noqa: E731
    else:
        puller = DataPuller(context, '127.0.0.1', _security(mode, keys), 'benchmark', queue=QUEUE)
        port = int(puller.address.rsplit(':', 1)[1])
        take = lambda: puller.recv(60.0)  # noqa: E731
    ports.put(port)
    first = last = None
    for received in range(1, count + 1):
        if take() is None:
            raise RuntimeError('benchmark receiver: nothing arrived for 60 s')
        last = time.perf_counter()
        if received == WARMUP:
            first = last
    results.put((count - WARMUP, last - first))
    if guard is not None:
        guard.stop()
    context.destroy(linger=0)


def measure(mode: str, chunk: dict, count: int, keys: str) -> dict:
    ctx = mp.get_context('spawn')
    ports, results = ctx.Queue(), ctx.Queue()
    process = ctx.Process(target=receive, args=(mode, keys, count, ports, results))
    process.start()
    port = ports.get(timeout=60)
    context = zmq.Context()
    address = f'tcp://127.0.0.1:{port}'
    if mode == 'bare':
        socket = context.socket(zmq.PUSH)
        socket.setsockopt(zmq.SNDHWM, QUEUE)
        socket.connect(address)
        buffers = [memoryview(a).cast('B') for a in chunk.values()]
        for _ in range(count):
            socket.send_multipart(buffers, copy=False)
    else:
        pusher = DataPusher(context, address, _security(mode, keys), 'benchmark', queue=QUEUE)
        body = dict(chunk_id='c', player_id='p', version=0, env_steps=1)
        for _ in range(count):
            if not pusher.send('chunk', body, chunk, timeout=60.0):
                raise RuntimeError('benchmark sender: the receiver took nothing for 60 s')
    messages, elapsed = results.get(timeout=120)
    process.join(60)
    context.destroy(linger=0)
    nbytes = sum(a.nbytes for a in chunk.values())
    return dict(chunks_per_second=messages / elapsed, mb_per_second=messages * nbytes / elapsed / 1e6,
                messages=messages, seconds=elapsed)


def calibrate(chunk: dict, seconds: float, keys: str) -> int:
    """A message count that takes about ``seconds`` over bare pyzmq."""
    probe = measure('bare', chunk, WARMUP + 200, keys)
    return WARMUP + max(100, int(probe['chunks_per_second'] * seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seconds', type=float, default=2.0, help='about how long each measurement runs')
    parser.add_argument('--repeats', type=int, default=5)
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, seconds=0.2, repeats=1)
    modes = ['bare', 'framed', 'framed+hmac'] + (['framed+hmac+curve', 'framed+curve'] if zmq.has('curve') else [])
    results = dict(machine=dict(cpus=os.cpu_count(), python=platform.python_version(), zmq=zmq.zmq_version(),
                                pyzmq=zmq.pyzmq_version(), load_average_at_start=os.getloadavg()),
                   started=time.strftime('%Y-%m-%d %H:%M:%S'), queue=QUEUE, chunks={})
    with tempfile.TemporaryDirectory() as keys:
        if 'framed+curve' in modes:
            create_curve_keys(keys)
        for name, shape in CHUNKS.items():
            chunk = make_chunk(**shape)
            nbytes = sum(a.nbytes for a in chunk.values())
            count = calibrate(chunk, args.seconds, keys)
            runs = {mode: [] for mode in modes}
            for _ in range(args.repeats):
                for mode in modes:  # interleaved, so a change in the machine's load hits every mode alike
                    runs[mode].append(measure(mode, chunk, count, keys))
            summary = {}
            for mode, measured in runs.items():
                summary[mode] = dict(
                    chunks_per_second=statistics.median(m['chunks_per_second'] for m in measured),
                    mb_per_second=statistics.median(m['mb_per_second'] for m in measured),
                    runs=measured)
            bare = summary['bare']['mb_per_second']
            for mode in modes:
                summary[mode]['share_of_bare'] = summary[mode]['mb_per_second'] / bare
            results['chunks'][name] = dict(bytes=nbytes, arrays=len(chunk), modes=summary)
            print(f'{name} ({nbytes / 1e6:.3f} MB, {len(chunk)} arrays):')
            for mode in modes:
                s = summary[mode]
                print(f'  {mode:17s} {s["chunks_per_second"]:9.0f} chunks/s {s["mb_per_second"]:8.0f} MB/s '
                      f'{s["share_of_bare"]:6.1%} of bare')
    results['load_average_at_end'] = os.getloadavg()
    merge_results('transport', results)


if __name__ == '__main__':
    main()
