"""Soak: a parallel league under chaos, checked for lost and doubled games, stalls, memory and latency.

A tic-tac-toe league (2 collectors, 1 learner, 1 evaluator) runs for ``--seconds`` while

* a chaos thread SIGKILLs a random worker every ``--kill-every`` seconds (the launcher restarts it);
* flooder processes hammer the commander's port without the secret: big messages (``--flood-mb``) on
  ``--flooders`` connections, and a stream of small forged ones from fresh connections;
* an honest probe (a registered worker) sends heartbeats and times the replies.

Then it checks, from the journal, the saved league and the collectors' own audit files
(``parallel.audit_reports``): every game a collector was told was recorded is in the journal (lost),
no job is recorded twice or both recorded and abandoned, and the payoff holds exactly the journal's
games (doubled). It prints and writes ``benchmarks/results/soak.json``: games played and abandoned,
lost and doubled, chunks reported / trained / reclaimed, kills and restarts, the commander's idle and
peak RSS, the probe's p50/p95 latency, and the longest time collection stood still.

    python benchmarks/soak.py --seconds 600
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from typing import Dict, List

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_file import merge_results

FLOODER = r'''
import os, sys, time, zmq
address, connections, megabytes, until = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
context = zmq.Context()
junk = os.urandom(int(megabytes * (1 << 20)))
header = b'{"kind":"heartbeat","id":"x","body":{"session":"s"},"arrays":[]}'
big = []
for _ in range(connections):
    s = context.socket(zmq.DEALER); s.setsockopt(zmq.LINGER, 0); s.setsockopt(zmq.SNDHWM, 2); s.connect(address)
    big.append(s)
while time.time() < until:
    for s in big:  # big forged messages: over the commander's request limit, or hashed and refused
        try:
            s.send_multipart([b'SPR1', header, b'x' * 32, junk], zmq.NOBLOCK)
        except zmq.Again:
            pass
    small = context.socket(zmq.DEALER); small.setsockopt(zmq.LINGER, 0); small.connect(address)
    for _ in range(20):  # small forged ones from a fresh connection (a new peer identity)
        try:
            small.send_multipart([b'SPR1', header, b'y' * 32], zmq.NOBLOCK)
        except zmq.Again:
            break
    small.close()
    time.sleep(0.01)
'''


def league_config(exp: str, seconds: float) -> dict:
    return dict(
        exp_name=exp, seed=0,
        env=dict(type='tictactoe', collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=8),
        policy=dict(type='ppo', model=dict(hidden_sizes=[32]), collect=dict(n_steps=16),
                    learn=dict(epochs=1, num_minibatches=2, lr=1e-3)),
        league=dict(type='one_vs_one', active_players=dict(naive_sp=1), payoff=dict(decay=1.0),
                    players=dict(naive_sp=dict(one_phase_step=20))),
        train=dict(max_env_steps=10 ** 9, max_wall_seconds=seconds, eval_every_iters=20, checkpoint_every_iters=10,
                   progress_bar=False, tensorboard=False),
        parallel=dict(collectors=2, evaluators=1, heartbeat_seconds=0.5, worker_timeout_seconds=8.0,
                      save_every_seconds=2.0, log_every_seconds=10.0, drain_timeout_seconds=10.0,
                      shutdown_seconds=20.0, max_restarts=10_000, audit_reports=True),
    )


def rss_mb(pid: int = 0) -> float:
    with open(f'/proc/{pid or os.getpid()}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024
    return float('nan')


class Probe(threading.Thread):
    """An honest worker that only heartbeats, timing every reply."""

    def __init__(self, address: str, security, until: float) -> None:
        super().__init__(daemon=True)
        self.address, self.security, self.until = address, security, until
        self.latencies: List[float] = []
        self.failures = 0

    def run(self) -> None:
        import zmq

        from sparring.worker.remote.transport import RequestClient
        from sparring.worker.remote.wire import RequestTimeout
        context = zmq.Context()
        client = RequestClient(context, self.address, self.security, 'probe', timeout=10.0)
        session = uuid.uuid4().hex
        client.request('register', dict(role='evaluator', worker_id='evaluator-probe', session=session,
                                        pid=os.getpid(), host='probe'))
        while time.monotonic() < self.until:
            started = time.perf_counter()
            try:
                client.request('heartbeat', dict(session=session))
                self.latencies.append(time.perf_counter() - started)
            except RequestTimeout:
                self.failures += 1
            time.sleep(0.1)
        client.close()
        context.destroy(linger=0)


def chaos(run, until: float, every: float, kills: Dict[str, int], rng: random.Random) -> None:
    """SIGKILL a running worker every ``every`` seconds: each in turn, in an order shuffled every round."""
    order: List[str] = []
    while time.monotonic() < until:
        time.sleep(every)
        if not order:
            order = sorted(run.launcher.processes)
            rng.shuffle(order)
        wid = order.pop()
        process = run.launcher.processes.get(wid)
        if process is not None and process.exitcode is None and time.monotonic() < until:
            pid = process.pid
            try:
                os.kill(pid, signal.SIGKILL)
                role = wid.split('-')[0]
                kills[role] = kills.get(role, 0) + 1
            except ProcessLookupError:
                pass


def audit(exp: str, league) -> dict:
    """Lost and doubled games, from the journal, the league and the collectors' own records."""
    with open(os.path.join(exp, 'commander', 'journal.jsonl')) as f:
        entries = [json.loads(line) for line in f][1:]  # after the format-version line
    recorded = [job for e in entries if e['op'] == 'games' for _, ids, _ in e['games'] for job in ids]
    abandoned = {job for e in entries if e['op'] == 'abandon' for job in e['jobs']}
    per_chunk = {e['chunk']: sum(len(ids) for _, ids, _ in e['games']) for e in entries if e['op'] == 'games'}
    told = lost = 0
    for path in glob.glob(os.path.join(exp, 'workers', 'collector-*', 'reports.jsonl')):
        with open(path) as f:
            for line in f:
                if not line.endswith('\n'):
                    continue  # cut by the kill
                report = json.loads(line)
                told += report['accepted']
                lost += max(0, report['accepted'] - per_chunk.get(report['chunk'], 0))
    payoff = sum(r['games'] for home, away, r in league.payoff.played_pairs()
                 if league.get_player(home).kind == 'active' or league.get_player(away).kind == 'active')
    self_play = sum(p.self_play_games for p in league.active_players)
    eval_games = sum(len(o) for e in entries if e['op'] == 'eval' for o in e['results'].values())
    doubled = (len(recorded) - len(set(recorded))) + len(abandoned & set(recorded)) \
        + max(0, payoff + self_play - len(recorded) - eval_games)
    missing_in_payoff = max(0, len(recorded) + eval_games - payoff - self_play)
    return dict(games_recorded=len(recorded), games_abandoned=len(abandoned), games_collectors_were_told=told,
                games_lost=lost + missing_in_payoff, games_doubled=doubled)


def soak(workdir: str, seconds: float, kill_every: float = 4.0, flooders: int = 16, flood_mb: float = 100.0,
         seed: int = 0) -> dict:
    from sparring.framework.messaging import Security
    from sparring.worker.remote.wire import SECRET_ENV, Signer
    from sparring.framework.parallel import ParallelRun
    from sparring.framework.run_setup import prepare_config
    from sparring.worker.runtime import seed_everything, set_torch_threads
    exp = os.path.join(workdir, 'soak')
    secret = secrets.token_hex(32)
    os.environ[SECRET_ENV] = secret  # the probe is an honest worker: it knows the run's secret
    cfg = prepare_config(league_config(exp, seconds))
    set_torch_threads(cfg.torch_threads)
    seed_everything(cfg.seed)
    run = ParallelRun(cfg)
    commander, timeout = run.commander, cfg.parallel.worker_timeout_seconds
    kills: Dict[str, int] = {}
    started = time.monotonic()
    run.start()
    while commander.counters['chunks'] < 4:  # warm: every worker up and training
        run.step()
    idle_rss = rss_mb()
    until = started + seconds - 2 * timeout  # chaos ends before the budget, so the run can end cleanly
    flood = subprocess.Popen([sys.executable, '-c', FLOODER, run.address, str(flooders), str(flood_mb), str(
        time.time() + until - time.monotonic())]) if flooders else None
    probe = Probe(run.address, Security(Signer(secret.encode())), until)
    probe.start()
    threading.Thread(target=chaos, args=(run, until, kill_every, kills, random.Random(seed)), daemon=True).start()
    peak_rss, last_steps, last_move, longest_still = idle_rss, commander.env_steps, time.monotonic(), 0.0
    try:
        while not run.finished:
            run.step()
            now = time.monotonic()
            peak_rss = max(peak_rss, rss_mb())
            if commander.env_steps != last_steps:
                last_steps, last_move = commander.env_steps, now
            elif commander.phase == 'collect':
                longest_still = max(longest_still, now - last_move)
        summary = run.close()
    except BaseException:
        if not run.closed:
            run.close(abort='soak failed')
        raise
    finally:
        if flood is not None:
            flood.kill()
            flood.wait()
    probe.join(timeout=15)
    from sparring.league import BaseLeague
    league = BaseLeague.load(os.path.join(exp, 'league_state.npz'))
    stats = summary['worker_stats']
    latencies = np.asarray(probe.latencies) * 1000
    result = dict(
        seconds=seconds, kill_every=kill_every, flooders=flooders, flood_mb=flood_mb,
        **audit(exp, league), env_steps=summary['env_steps'],
        chunks_reported=commander.counters['chunks'],
        # A learner's count is restored from its checkpoint: the newest process holds the run's figure.
        chunks_trained=int(max((s.get('chunks_received', 0) for wid, s in stats.items() if wid.startswith('learner')),
                               default=0)),
        chunks_reclaimed=commander.counters['chunks_reclaimed'],
        kills=kills, restarts=sum(summary['restarts'].values()),
        rejected_messages=summary['rejected_messages'],
        commander_rss_idle_mb=round(idle_rss, 1), commander_rss_peak_mb=round(peak_rss, 1),
        probe_requests=len(latencies), probe_timeouts=probe.failures,
        probe_p50_ms=round(float(np.percentile(latencies, 50)), 2) if len(latencies) else None,
        probe_p95_ms=round(float(np.percentile(latencies, 95)), 2) if len(latencies) else None,
        longest_collection_stall_seconds=round(longest_still, 2), worker_timeout_seconds=timeout,
        stalled=longest_still > timeout, load_average=os.getloadavg())
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=600.0)
    parser.add_argument('--kill-every', type=float, default=4.0)
    parser.add_argument('--flooders', type=int, default=16)
    parser.add_argument('--flood-mb', type=float, default=100.0)
    parser.add_argument('--workdir', default=None)
    args = parser.parse_args(argv)
    result = soak(args.workdir or tempfile.mkdtemp(prefix='soak_'), args.seconds, args.kill_every, args.flooders,
                  args.flood_mb)
    for key, value in result.items():
        print(f'{key}: {value}')
    ok = (result['games_lost'] == 0 and result['games_doubled'] == 0 and not result['stalled']
          and result['commander_rss_peak_mb'] < 2 * result['commander_rss_idle_mb']
          and (result['probe_p95_ms'] or 0) < 100)
    print('targets met' if ok else 'targets NOT met')
    merge_results('soak', {f'{int(args.seconds)}s': result})
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
