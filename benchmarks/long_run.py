"""Long runs, simulated: what a resume costs as a league grows to 1e8 env steps, and how many collectors one
commander serves.

**Resume.** The real :class:`~sparring.framework.commander.Commander`, with an injected clock, is driven in this
process by fake workers (a tiny game, no networks): two learners that publish (so the league takes snapshots) and
collectors that ask for a collect task, draw jobs and report a chunk, as the real ones do. A chunk report stands
for ``chunk_len x envs`` env steps and ``games`` games. At 1e6, 1e7 and 1e8 env steps the run directory is copied
and resumed in a fresh subprocess, as after a kill; reported: the journal's bytes on the disk and ever written,
the snapshot's bytes, the resume's wall seconds and its peak RSS (and the RSS before the resume: the imports).
The figures at 1e9 are extrapolated from the last two points (flat figures stay flat).

**Capacity.** A commander serves over the real transport (ZeroMQ, signed messages, one fsync per batch of
requests, as ``ParallelRun`` does) while 10, 100 and 1,000 fake collectors in another process run the same
request cycle, each with one request in flight: chunk reports per second, p50/p99 reply latency, and the
commander's CPU use (one core is its ceiling: it is one thread).

Writes ``benchmarks/results/long_run.json`` stamped with the commit, date, CPU, load and command.

    flock /tmp/bench.lock python benchmarks/long_run.py             # the full measurement (about 20 minutes)
    python benchmarks/long_run.py --smoke                           # seconds: small figures, the same code
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Dict, List, Optional

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_file import add_smoke, apply_smoke, merge_results

PLAYERS = 2  # active players (naive self-play), each with a learner
PUBLISH_EVERY = 8  # chunks per learner iteration
ONE_PHASE_STEP = 200  # iterations between snapshots of a player


def league_config(exp: str, chunk_len: int, envs: int, save_every: float) -> dict:
    return dict(
        exp_name=exp, seed=0,
        env=dict(type='zero_sum_2x2', collector_env_num=envs, evaluator_env_num=1, n_evaluator_episodes=2),
        policy=dict(type='ppo', model=dict(hidden_sizes=[8]), collect=dict(n_steps=chunk_len),
                    learn=dict(epochs=1, num_minibatches=1)),
        league=dict(type='one_vs_one', active_players=dict(naive_sp=PLAYERS),
                    players=dict(naive_sp=dict(one_phase_step=ONE_PHASE_STEP))),
        train=dict(max_env_steps=10 ** 12, eval_every_iters=0, progress_bar=False, tensorboard=False),
        parallel=dict(collectors=0, evaluators=0, local_learners=False, worker_timeout_seconds=1e9,
                      save_every_seconds=save_every, log_every_seconds=1e9, max_chunks_ahead=10 ** 9),
    )


def compiled(config: dict):
    from sparring.config import compile_config
    from sparring.framework.run_setup import complete_league_config
    cfg = compile_config(config, save=False)
    complete_league_config(cfg)
    return cfg


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def request(kind: str, **body):
    from sparring.worker.remote.wire import Message
    return Message(kind, body, body.pop('_arrays', {}), uuid.uuid4().hex, 'sim', time.time())


# -- resume ------------------------------------------------------------------------------------------------------
class Simulation:
    """A commander and its fake workers in one process, stepped chunk by chunk on a simulated clock."""

    def __init__(self, cfg, collectors: int, games: int, seconds_per_chunk: float) -> None:
        from sparring.framework.commander import Commander
        from sparring.worker.remote.wire import params_to_arrays
        self.clock = Clock()
        self.commander = commander = Commander(cfg, clock=self.clock)
        self.games, self.dt = games, seconds_per_chunk
        self.arrays = params_to_arrays(commander.coordinator.store.get('init')['params'])
        self.learners: Dict[str, dict] = {}
        for pid in commander.coordinator.player_ids:
            session = self._join('learner', player_id=pid)
            self.learners[pid] = dict(session=session, version=0, chunks=0, received=[])
            self._publish(pid)
        self.collectors = [self._join('collector') for _ in range(collectors)]
        self.chunks = 0
        self.appended = 0  # journal bytes ever written (what the journal would hold without recycling)

    def _join(self, role: str, **extra) -> str:
        session = uuid.uuid4().hex
        kind, body, _ = self.commander.handle(request('register', role=role, worker_id=None, session=session, pid=1,
                                                      host='sim', **extra))
        assert kind == 'registered', body
        return session

    def _publish(self, pid: str) -> None:
        learner = self.learners[pid]
        kind, body, _ = self.commander.handle(request(
            'publish', session=learner['session'], player_id=pid, version=learner['version'],
            train_iteration=learner['version'], final=False, chunks_consumed=learner['chunks'],
            endpoint=f'tcp://127.0.0.1:{20000 + len(pid)}', _arrays=self.arrays))
        assert kind == 'ack', body

    def chunk(self, session: str) -> None:
        """One collector's cycle: a collect task, its jobs, its chunk report; the learner takes the chunk."""
        handle = self.commander.handle
        kind, task, _ = handle(request('collect_task', session=session))
        if kind != 'task':
            raise RuntimeError(f'no collect task: {kind} {task}')
        pid = task['player_id']
        _, batch, _ = handle(request('jobs', session=session, player_id=pid, count=self.games))
        outcomes = ('win', 'loss', 'draw')
        chunk_id = uuid.uuid4().hex
        kind, body, _ = handle(request('chunk_report', session=session, task_id=task['task_id'], chunk_id=chunk_id,
                                       player_id=pid, version=self.learners[pid]['version'],
                                       env_steps=self.commander.chunk_steps,
                                       results=[[job['job_id'], outcomes[(job['job_id'] * 7) % 3]]
                                                for job in batch['jobs']]))
        assert kind == 'ack' and body['accepted'] == self.games, body
        learner = self.learners[pid]
        learner['chunks'] += 1
        handle(request('heartbeat', session=learner['session'], received=[chunk_id]))
        if learner['chunks'] % PUBLISH_EVERY == 0:
            learner['version'] += 1
            self._publish(pid)
        self.chunks += 1

    def advance_to(self, env_steps: int) -> None:
        commander, journal = self.commander, self.commander.state.journal
        while commander.coordinator.env_steps < env_steps:
            for session in self.collectors:
                before = journal._size
                self.chunk(session)
                self.appended += max(0, journal._size - before)
                self.clock.now += self.dt
            journal.sync()  # as the serving loop does after each batch
            commander.tick()  # saves every parallel.save_every_seconds of the simulated clock

    def disk(self) -> dict:
        directory = self.commander.dir
        journal = sum(os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory)
                      if name.startswith('journal.') and name.endswith('.jsonl'))
        state = os.path.join(directory, 'state.npz')
        snapshot = os.path.getsize(state) if os.path.exists(state) else 0
        journal_state = self.commander.state
        after = journal_state.snapshot_seq or 0
        read = os.path.getsize(journal_state.journal.path) + sum(
            os.path.getsize(path) for last, path in journal_state.journal.segments() if last > after)
        params = sum(os.path.getsize(os.path.join(self.commander.exp_dir, 'params', name))
                     for name in os.listdir(os.path.join(self.commander.exp_dir, 'params')))
        return dict(journal_bytes=journal, journal_bytes_written=self.appended, journal_bytes_read_at_resume=read,
                    snapshot_bytes=snapshot,
                    params_bytes=params, historical_players=len(self.commander.coordinator.league.historical_players))


def current_rss_mb() -> float:
    """This process's resident memory now (Linux), in MB."""
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / 2 ** 20


def resume_probe(exp: str, chunk_len: int, envs: int, save_every: float) -> dict:
    """Resume the run at ``exp`` in this (fresh) process: wall seconds and peak RSS (run as a subprocess)."""
    from sparring.framework.commander import Commander
    cfg = compiled(league_config(exp, chunk_len, envs, save_every))
    before, held_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, current_rss_mb()
    started = time.perf_counter()
    commander = Commander(cfg, resume=True, clock=Clock())
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    entries = commander.state.journal.seq - (commander.state.snapshot_seq or 0)
    result = dict(resume_seconds=round(seconds, 3), rss_before_mb=round(before, 1), resume_peak_rss_mb=round(peak, 1),
                  rss_held_by_resume_mb=round(current_rss_mb() - held_before, 1),
                  resumed_env_steps=commander.coordinator.env_steps, journal_entries_after_snapshot=entries)
    commander.state.journal.drop()
    return result


def resume_in_subprocess(sim: Simulation, args, where: str) -> dict:
    """A copy of the run directory as a killed commander leaves it (the journal synced, no final save), resumed in
    a fresh interpreter."""
    copy = os.path.join(where, f'copy_{sim.commander.coordinator.env_steps}')
    sim.commander.state.journal.sync()
    shutil.copytree(sim.commander.exp_dir, copy)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), '--resume-probe', copy,
                          '--chunk-len', str(args.chunk_len), '--envs', str(args.envs),
                          '--save-every', str(args.save_every)], capture_output=True, text=True, check=True)
    shutil.rmtree(copy)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_resume(args, where: str) -> List[dict]:
    cfg = compiled(league_config(os.path.join(where, 'run'), args.chunk_len, args.envs, args.save_every))
    sim = Simulation(cfg, args.collectors, args.games, args.seconds_per_chunk)
    rows = []
    started = time.perf_counter()
    for target in args.lengths:
        sim.advance_to(int(target))
        row = dict(env_steps=sim.commander.coordinator.env_steps, chunks=sim.chunks, **sim.disk(),
                   **resume_in_subprocess(sim, args, where),
                   drive_seconds=round(time.perf_counter() - started, 1))
        assert row['resumed_env_steps'] == row['env_steps'], row  # nothing lost or counted twice
        rows.append(row)
        print(f'{row["env_steps"]:>13,} env steps  journal {row["journal_bytes"] / 1e6:8.2f} MB on disk '
              f'({row["journal_bytes_written"] / 1e6:8.2f} MB written, {row["journal_bytes_read_at_resume"] / 1e6:6.2f} '
              f'MB read at resume)  snapshot {row["snapshot_bytes"] / 1e6:6.2f} MB  '
              f'resume {row["resume_seconds"]:6.2f} s, peak RSS {row["resume_peak_rss_mb"]:6.0f} MB '
              f'({row["rss_before_mb"]:.0f} MB before)', flush=True)
    sim.commander.close()
    return rows


def extrapolate(rows: List[dict], steps: float, journal_bound: float, read_bound: float) -> dict:
    """Each figure at ``steps`` env steps, on the line through the last two measured points (at least 0), the
    journal's no higher than their bounds: on the disk, the audit tail, two segments and a save's worth; read at
    resume, a segment and a save's worth. The rest (the snapshot grows with the league) stays on its line."""
    a, b = rows[-2], rows[-1]
    out = {}
    for key in ('journal_bytes', 'journal_bytes_written', 'journal_bytes_read_at_resume', 'snapshot_bytes',
                'resume_seconds', 'resume_peak_rss_mb'):
        slope = (b[key] - a[key]) / (b['env_steps'] - a['env_steps'])
        out[key] = round(max(0.0, b[key] + slope * (steps - b['env_steps'])), 3)
    out['journal_bytes'] = min(out['journal_bytes'], journal_bound)
    out['journal_bytes_read_at_resume'] = min(out['journal_bytes_read_at_resume'], read_bound)
    return dict(env_steps=int(steps), **out)


# -- capacity ----------------------------------------------------------------------------------------------------
def serve(config: dict, address_file: str, stop, report) -> None:
    """The commander's process: a ParallelRun that serves (its workers are the fake ones of the other process)."""
    from sparring.framework.parallel import ParallelRun
    from sparring.worker.runtime import set_torch_threads
    cfg = compiled(config)
    set_torch_threads(1)
    quiet = os.open(os.path.join(os.path.dirname(address_file), 'commander_output.txt'), os.O_WRONLY | os.O_CREAT)
    os.dup2(quiet, 1)  # the commander's lines (a thousand "joined") go to a file, as a real one's go to log.txt
    os.dup2(quiet, 2)
    run = ParallelRun(cfg)
    with open(address_file + '.tmp', 'w') as f:
        f.write(run.server.address)
    os.replace(address_file + '.tmp', address_file)
    marks = []
    while not stop.is_set():
        run.step()
        marks.append((time.monotonic(), time.process_time(), run.commander.coordinator.counters['chunks']))
        marks = marks[-4000:]
    report.put(marks)
    run.close(abort='benchmark over')


class FakeCollectors:
    """``n`` collectors on sockets of their own, each with one request in flight, cycling collect task -> jobs ->
    chunk report; one learner per player publishes once and acknowledges the chunks it is sent."""

    def __init__(self, address: str, n: int, games: int, chunk_steps: int, arrays) -> None:
        import zmq

        from sparring.framework.messaging import make_security
        self.zmq = zmq
        self.context = zmq.Context()
        self.security = make_security('hmac')
        self.address, self.games, self.chunk_steps = address, games, chunk_steps
        self.poller = zmq.Poller()
        self.latencies: List[float] = []
        self.reports = 0
        self.workers = [self._worker() for _ in range(n)]
        self.learners = {}
        for pid in (f'naive_sp_{i}' for i in range(PLAYERS)):
            learner = self._worker()
            self._call(learner, 'register', dict(role='learner', worker_id=None, session=learner['session'], pid=1,
                                                 host='sim', player_id=pid))
            self._call(learner, 'publish', dict(session=learner['session'], player_id=pid, version=0,
                                                train_iteration=0, final=False, chunks_consumed=0,
                                                endpoint='tcp://127.0.0.1:20001'), arrays)
            self.learners[pid] = learner
        for worker in self.workers:
            self._call(worker, 'register', dict(role='collector', worker_id=None, session=worker['session'], pid=1,
                                                host='sim'))

    def _worker(self) -> dict:
        socket = self.context.socket(self.zmq.DEALER)
        socket.setsockopt(self.zmq.LINGER, 0)
        self.security.client(socket)  # the CURVE keys derived from the secret, as a worker's sockets have
        socket.connect(self.address)
        return dict(socket=socket, session=uuid.uuid4().hex, step='collect_task', sent=0.0, id=None, task=None)

    def _send(self, worker: dict, kind: str, body: dict, arrays=None) -> None:
        from sparring.framework.messaging import encode
        from sparring.worker.remote.transport import send_frames
        worker['id'] = uuid.uuid4().hex
        frames = encode(kind, body, arrays, signer=self.security.signer, sender='sim', message_id=worker['id'],
                        schemas=self.security.schemas)
        worker['sent'] = time.perf_counter()
        send_frames(worker['socket'], frames)

    def _receive(self, worker: dict):
        from sparring.framework.messaging import decode
        reply = decode(worker['socket'].recv_multipart(copy=False), signer=self.security.signer,
                       schemas=self.security.schemas)
        if reply.kind == 'error':
            raise RuntimeError(f'{reply.body}')
        return reply

    def _call(self, worker: dict, kind: str, body: dict, arrays=None):
        self._send(worker, kind, body, arrays)
        if not worker['socket'].poll(60_000):
            raise RuntimeError(f'no reply to {kind} in 60 s')
        return self._receive(worker)

    def _next(self, worker: dict, reply) -> None:
        """Send the worker's next request, given the reply to its last one (None: start)."""
        session = worker['session']
        if worker['step'] == 'collect_task':
            if reply is not None and reply.kind != 'task':
                raise RuntimeError(f'no collect task: {reply.kind} {reply.body}')
            if reply is None:
                self._send(worker, 'collect_task', dict(session=session))
                return
            worker['task'] = reply.body
            worker['step'] = 'jobs'
            self._send(worker, 'jobs', dict(session=session, player_id=reply.body['player_id'], count=self.games))
        elif worker['step'] == 'jobs':
            task = worker['task']
            worker['chunk'] = uuid.uuid4().hex
            worker['step'] = 'chunk_report'
            self._send(worker, 'chunk_report', dict(
                session=session, task_id=task['task_id'], chunk_id=worker['chunk'], player_id=task['player_id'],
                version=0, env_steps=self.chunk_steps, results=[[job['job_id'], 'win'] for job in reply.body['jobs']]))
        else:
            self.reports += 1
            learner = self.learners[worker['task']['player_id']]
            learner['received'] = learner.get('received', []) + [worker['chunk']]
            worker['step'] = 'collect_task'
            self._send(worker, 'collect_task', dict(session=session))

    def run(self, seconds: float, warmup: float) -> dict:
        by_socket = {}
        for worker in self.workers:
            self.poller.register(worker['socket'], self.zmq.POLLIN)
            by_socket[worker['socket']] = worker
            self._next(worker, None)
        started = time.perf_counter()
        measuring, reports0, last_heartbeat = False, 0, 0.0
        while time.perf_counter() - started < warmup + seconds:
            if not measuring and time.perf_counter() - started >= warmup:
                measuring, reports0, self.latencies, t0 = True, self.reports, [], time.perf_counter()
            now = time.perf_counter()
            if now - last_heartbeat > 0.2:  # each learner says which chunks reached it, as a real one does
                for learner in self.learners.values():
                    received, learner['received'] = learner.get('received', [])[:4096], learner.get('received', [])[4096:]
                    if received:
                        self._call(learner, 'heartbeat', dict(session=learner['session'], received=received))
                last_heartbeat = now
            for socket, _ in self.poller.poll(100):
                worker = by_socket[socket]
                reply = self._receive(worker)
                self.latencies.append(time.perf_counter() - worker['sent'])
                self._next(worker, reply)
        elapsed = time.perf_counter() - t0
        latencies = np.array(self.latencies) * 1000
        return dict(chunk_reports_per_second=round((self.reports - reports0) / elapsed, 1),
                    requests_per_second=round(len(latencies) / elapsed, 1),
                    reply_p50_ms=round(float(np.percentile(latencies, 50)), 2),
                    reply_p99_ms=round(float(np.percentile(latencies, 99)), 2))

    def close(self) -> None:
        self.context.destroy(linger=0)


def measure_capacity(args, where: str) -> List[dict]:
    from sparring.worker.remote.wire import SECRET_ENV, new_secret, params_to_arrays
    os.environ.setdefault(SECRET_ENV, new_secret())
    rows = []
    for n in args.collectors_list:
        exp = os.path.join(where, f'capacity_{n}')
        config = league_config(exp, args.chunk_len, args.envs, save_every=30.0)
        config['parallel'].update(auth='hmac')
        address_file = os.path.join(where, f'address_{n}')
        context = multiprocessing.get_context('spawn')
        stop, report = context.Event(), context.Queue()
        server = context.Process(target=serve, args=(config, address_file, stop, report))
        server.start()
        deadline = time.monotonic() + 120
        while not os.path.exists(address_file):
            if time.monotonic() > deadline or not server.is_alive():
                raise RuntimeError('the commander did not start')
            time.sleep(0.1)
        with open(address_file) as f:
            address = f.read()
        cfg = compiled(config)
        from sparring.config.registry import POLICY_REGISTRY
        from sparring.worker.run_kind import run_kind
        kind = run_kind(cfg)
        policy = POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, *kind.spaces(), seed=cfg.seed)
        arrays = params_to_arrays(policy.get_params())
        fakes = FakeCollectors(address, n, args.games, args.chunk_len * args.envs, arrays)
        cpu0 = time.process_time()
        try:
            row = dict(collectors=n, **fakes.run(args.capacity_seconds, warmup=args.capacity_warmup))
        finally:
            generator_cpu = time.process_time() - cpu0
            fakes.close()
            stop.set()
        marks = report.get(timeout=120)
        server.join(timeout=120)
        window = [m for m in marks if m[0] >= marks[-1][0] - args.capacity_seconds]
        (w0, c0, _), (w1, c1, _) = window[0], window[-1]
        row['commander_cpu_share'] = round((c1 - c0) / max(1e-9, w1 - w0), 2)
        row['generator_cpu_share'] = round(generator_cpu / (args.capacity_seconds + args.capacity_warmup), 2)
        rows.append(row)
        print(f'{n:>5} collectors: {row["chunk_reports_per_second"]:8.1f} chunk reports/s, reply p50 '
              f'{row["reply_p50_ms"]:7.2f} ms, p99 {row["reply_p99_ms"]:8.2f} ms; commander CPU '
              f'{row["commander_cpu_share"]:.2f} core, generator {row["generator_cpu_share"]:.2f}', flush=True)
    return rows


def main(argv: Optional[List[str]] = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_smoke(parser)
    parser.add_argument('--lengths', type=float, nargs='+', default=[1e6, 1e7, 1e8])
    parser.add_argument('--chunk-len', type=int, default=64, help='env steps per chunk and env')
    parser.add_argument('--envs', type=int, default=16, help='envs per collector')
    parser.add_argument('--games', type=int, default=16, help='games finished per chunk')
    parser.add_argument('--collectors', type=int, default=8, help='fake collectors of the resume part')
    parser.add_argument('--seconds-per-chunk', type=float, default=0.05,
                        help='simulated seconds per chunk report (all collectors together)')
    parser.add_argument('--save-every', type=float, default=30.0, help='parallel.save_every_seconds (simulated)')
    parser.add_argument('--collectors-list', type=int, nargs='+', default=[10, 100, 1000])
    parser.add_argument('--capacity-seconds', type=float, default=30.0)
    parser.add_argument('--capacity-warmup', type=float, default=5.0)
    parser.add_argument('--skip-capacity', action='store_true')
    parser.add_argument('--out', default='long_run', help='results file name under benchmarks/results')
    parser.add_argument('--resume-probe', default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.resume_probe:
        print(json.dumps(resume_probe(args.resume_probe, args.chunk_len, args.envs, args.save_every)))
        return {}
    apply_smoke(args, lengths=[2e4, 1e5, 2e5], collectors_list=[10], capacity_seconds=2.0, capacity_warmup=1.0,
                save_every=1.0)
    with tempfile.TemporaryDirectory(prefix='long_run_') as where:
        rows = measure_resume(args, where)
        par = compiled(league_config(where, args.chunk_len, args.envs, args.save_every)).parallel
        save = max(row['journal_bytes_written'] / row['env_steps'] for row in rows) * args.chunk_len * args.envs \
            * args.save_every / args.seconds_per_chunk  # journal bytes written between two saves
        segment = par.journal_segment_mb * 2 ** 20
        projected = extrapolate(rows, 1e9, par.journal_audit_mb * 2 ** 20 + 2 * segment + save, segment + save)
        print(f'extrapolated to 1e9 env steps: journal {projected["journal_bytes"] / 1e6:.1f} MB on disk '
              f'({projected["journal_bytes_written"] / 1e6:.0f} MB written), resume {projected["resume_seconds"]:.2f} s, '
              f'peak RSS {projected["resume_peak_rss_mb"]:.0f} MB')
        capacity = [] if args.skip_capacity else measure_capacity(args, where)
    result = dict(settings=dict(
        chunk_steps=args.chunk_len * args.envs, games_per_chunk=args.games, players=PLAYERS,
        publish_every_chunks=PUBLISH_EVERY, one_phase_step=ONE_PHASE_STEP, save_every_seconds=args.save_every,
        seconds_per_chunk=args.seconds_per_chunk, collectors=args.collectors),
        resume=rows, resume_at_1e9_extrapolated=projected, capacity=capacity)
    merge_results(args.out, result, command=None if argv is None else ' '.join(['python benchmarks/long_run.py'] + argv))
    return result


if __name__ == '__main__':
    main()
