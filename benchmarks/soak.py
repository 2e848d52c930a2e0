"""Soak: a parallel league under chaos, checked for lost and doubled games, stalls, memory and latency.

A tic-tac-toe league (2 collectors, 1 learner, 1 evaluator; with ``--inference N``, N forward-pass workers the
collectors act through) runs for ``--seconds`` while

* a chaos thread SIGKILLs a random worker every ``--kill-every`` seconds (the launcher restarts it);
* flooder processes hammer the commander's port without the secret: big messages (``--flood-mb``) on
  ``--flooders`` connections, each in ``--flood-frames`` frames, and a stream of small forged ones from
  fresh connections (with a shared secret, CURVE refuses them all at the handshake);
* ``--learner-flooders`` connections push the same junk at the learner's chunk socket (followed to its
  new port when the learner is restarted);
* a hostile holder of the secret (``--hostile``) sends signed lies every second: integers past any bound
  (2**63 env steps, 2**64 statistics, a header time of 10**400), a chunk report beyond the chunk size,
  a request number used again for another request, NaN and misshapen parameters under the learner's
  session; each must be refused (``hostile_accepted`` counts those that were not);
* an honest probe (a registered worker) sends heartbeats and times the replies.

Then it checks, from the journal, the saved league and the collectors' own audit files
(``parallel.audit_reports``): every game a collector was told was recorded is in the journal (lost),
no job is recorded twice or both recorded and abandoned, and the payoff holds exactly the journal's
games (doubled).

With ``--kill-commander-seconds S`` a second run of S seconds follows, in a process of its own: its
commander is SIGKILLed once collection has ended and the learners drain, the state file it saved is cut
in half (``--cut state``; ``--cut snapshot`` cuts the newest league snapshot's parameters instead), and
the run is resumed here to its end, then audited the same way.

It prints and writes ``benchmarks/results/soak.json``: games played and abandoned, lost and doubled,
chunks reported / trained / reclaimed, kills and restarts, the commander's and the learner's idle and
peak RSS, the probe's p50/p95 latency, the longest time collection stood still, what the hostile peer got
through, and the targets: 0 lost, 0 doubled, no stall longer than the worker timeout, commander and
learner RSS under 2x idle, probe p95 under 100 ms, nothing hostile accepted.

    flock /tmp/sparring-bench.lock nice -n 10 python benchmarks/soak.py --seconds 600
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
from typing import Dict, List, Optional

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_file import merge_results

FLOODER = r'''
import os, sys, time, zmq
target, kind, connections, megabytes, frames, until, small = sys.argv[1:8]
connections, megabytes, frames, until = int(connections), float(megabytes), int(frames), float(until)
context = zmq.Context()
part = os.urandom(max(1, int(megabytes * (1 << 20) / frames)))
header = b'{"kind":"heartbeat","id":"x","body":{"session":"s"},"arrays":[]}'
address, sockets = None, []


def where():  # an address, or a file the soak keeps the address in (a restarted learner listens elsewhere)
    if target.startswith('tcp://'):
        return target
    try:
        with open(target) as f:
            return f.read().strip() or None
    except OSError:
        return None


checked = 0.0
while time.time() < until:
    if time.time() - checked > 1.0:
        checked, now_at = time.time(), where()
        if now_at != address:
            for s in sockets:
                s.close()
            address, sockets = now_at, []
            for _ in range(connections if now_at else 0):
                s = context.socket(zmq.DEALER if kind == 'dealer' else zmq.PUSH)
                s.setsockopt(zmq.LINGER, 0); s.setsockopt(zmq.SNDHWM, 2); s.connect(now_at)
                sockets.append(s)
    for s in sockets:  # big forged messages, in one frame or many: over the receiver's bound, dropped unhashed
        try:
            s.send_multipart([b'SPR1', header, b'x' * 32] + [part] * frames, zmq.NOBLOCK)
        except zmq.Again:
            pass
    if small == '1' and address:
        one = context.socket(zmq.DEALER); one.setsockopt(zmq.LINGER, 500); one.connect(address)  # time to connect
        for _ in range(20):  # small forged ones from a fresh connection (a new peer identity)
            try:
                one.send_multipart([b'SPR1', header, b'y' * 32], zmq.NOBLOCK)
            except zmq.Again:
                break
        one.close()
    time.sleep(0.01)
'''


def league_config(exp: str, seconds: float, inference: int = 0) -> dict:
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
                      shutdown_seconds=20.0, max_restarts=10_000, audit_reports=True,
                      inference=dict(workers=inference)),
    )


def rss_mb(pid: int = 0) -> float:
    """Resident memory of a process in MB (NaN once it is gone)."""
    try:
        with open(f'/proc/{pid or os.getpid()}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float('nan')


def learner_pids(run) -> List[int]:
    return [process.pid for wid, process in list(run.launcher.processes.items())
            if wid.startswith('learner') and process.exitcode is None]


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


class Hostile(threading.Thread):
    """A holder of the secret that lies, once a second: every message must be refused (an error reply, or
    dropped as malformed), and the run must go on. ``accepted`` counts the lies that got through."""

    def __init__(self, address: str, secret: bytes, commander, until: float) -> None:
        super().__init__(daemon=True)
        self.address, self.secret, self.commander, self.until = address, secret, commander, until
        self.sent = self.refused = self.accepted = 0
        self.accepted_kinds: List[str] = []

    def forged(self, kind: str, body: dict, arrays=None, time_stamp=None):
        """``(frames, id)`` of a signed message built by hand, past the sender's own checks."""
        from sparring.framework.protocol import PROTOCOL
        from sparring.worker.remote.wire import MAGIC, Signer, encode
        signer, message_id = Signer(self.secret), uuid.uuid4().hex
        if arrays:  # lies in the arrays only: the wire lays them out
            return encode(kind, body, arrays, signer=signer, schemas=PROTOCOL, message_id=message_id), message_id
        raw = json.dumps(dict(kind=kind, id=message_id, time=time.time() if time_stamp is None else time_stamp,
                              sender='hostile', reply_to=None, body=body, arrays=[], packed=0)).encode()
        return [MAGIC, raw, signer.tag([MAGIC, raw])], message_id

    def run(self) -> None:
        import zmq

        from sparring.framework.protocol import PROTOCOL
        from sparring.worker.remote.wire import Signer, decode, params_to_arrays
        context = zmq.Context()
        socket = context.socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        _security(self.secret.decode()).client(socket)  # it holds the secret: past the CURVE handshake
        socket.connect(self.address)
        signer = Signer(self.secret)
        commander = self.commander
        pid = commander.coordinator.player_ids[0]
        session = uuid.uuid4().hex
        number = 10 ** 12  # far from any honest worker's request numbers

        def ask(kind, body, arrays=None, time_stamp=None, answered=True, fine=()):
            """Send one lie; an answer other than an error (or ``fine`` kinds) is a lie that got through."""
            frames, message_id = self.forged(kind, body, arrays, time_stamp)
            socket.send_multipart(frames)
            self.sent += 1
            deadline = time.monotonic() + (5.0 if answered else 0.5)
            while time.monotonic() < deadline:
                if not socket.poll(100):
                    continue
                reply = decode(socket.recv_multipart(), signer=signer, schemas=PROTOCOL)
                if reply.reply_to != message_id:
                    continue
                if reply.kind == 'error' or reply.kind in fine:
                    self.refused += reply.kind == 'error'
                    return reply
                self.accepted += 1
                self.accepted_kinds.append(kind)
                return reply
            self.refused += not answered  # dropped unanswered, as a malformed message is
            return None

        ask('register', dict(role='collector', worker_id='collector-hostile', session=session, pid=os.getpid(),
                             host='hostile'), fine=('registered',))
        good = params_to_arrays(commander.coordinator.store.get('init')['params'])
        name = next(n for n, a in good.items() if a.dtype.kind == 'f' and a.ndim == 2)
        nan = dict(good, **{name: np.full_like(good[name], np.nan)})
        misshapen = dict(good, **{name: np.zeros((good[name].shape[0] + 1, *good[name].shape[1:]), good[name].dtype)})
        while time.monotonic() < self.until:
            number += 2
            ask('heartbeat', dict(session=session, stats=dict(queued=2 ** 64)))
            ask('chunk_report', dict(session=session, request_number=number, task_id=None, chunk_id=uuid.uuid4().hex,
                                     player_id=pid, version=0, env_steps=2 ** 63, results=[]))
            ask('chunk_report', dict(session=session, request_number=number, task_id=None, chunk_id=uuid.uuid4().hex,
                                     player_id=pid, version=0, env_steps=10 * commander.chunk_steps, results=[]))
            ask('goodbye', dict(session=session), time_stamp=10 ** 400, answered=False)
            ask('jobs', dict(session=session, request_number=number + 1, player_id=pid, count=0), fine=('job_batch',))
            ask('jobs', dict(session=session, request_number=number + 1, player_id=pid, count=1))  # number used again
            learner = next((w.session for w in list(commander.sessions.workers.values()) if w.role == 'learner'), None)
            for i, arrays in enumerate((nan, misshapen) if learner else ()):  # the learner's session, sniffed
                ask('publish', dict(session=learner, request_number=number + i, player_id=pid, version=10 ** 6,
                                    train_iteration=10 ** 6, final=False, chunks_consumed=0), arrays)
            time.sleep(1.0)
        ask('goodbye', dict(session=session), fine=('ack',))
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
    # Games played against a stand-in for a quarantined snapshot (jobs drawn before the quarantine) are journaled,
    # so the job ends once, but kept out of the payoff: they were not games against that snapshot.
    quarantined = sum(len(outcomes) for e in entries if e['op'] == 'games' and e.get('dropped')
                      for away, _, outcomes in e['games'] if league.get_player(away).param_ref in e['dropped'])
    in_payoff = len(recorded) - quarantined + eval_games
    doubled = (len(recorded) - len(set(recorded))) + len(abandoned & set(recorded)) \
        + max(0, payoff + self_play - in_payoff)
    missing_in_payoff = max(0, in_payoff - payoff - self_play)
    return dict(games_recorded=len(recorded), games_abandoned=len(abandoned), games_collectors_were_told=told,
                games_quarantined=quarantined, games_lost=lost + missing_in_payoff, games_doubled=doubled)


def _security(secret: str):
    from sparring.framework.protocol import PROTOCOL
    from sparring.worker.remote.security import Security
    from sparring.worker.remote.wire import Signer
    return Security(Signer(secret.encode()), protocol=PROTOCOL)


def _flooder(target: str, kind: str, connections: int, megabytes: float, frames: int, until: float, small: bool):
    return subprocess.Popen([sys.executable, '-c', FLOODER, target, kind, str(connections), str(megabytes), str(frames),
                             str(time.time() + until - time.monotonic()), '1' if small else '0'])


def soak(workdir: str, seconds: float, kill_every: float = 4.0, flooders: int = 16, flood_mb: float = 100.0,
         seed: int = 0, flood_frames: int = 1, learner_flooders: int = 0, hostile: bool = False,
         kill_commander_seconds: float = 0.0, cut: str = 'state', inference: int = 0) -> dict:
    """The soak (see the module); the optional phases are off unless asked for."""
    from sparring.framework.parallel import ParallelRun
    from sparring.framework.run_setup import prepare_config
    from sparring.worker.remote.wire import SECRET_ENV
    from sparring.worker.runtime import seed_everything, set_torch_threads
    exp = os.path.join(workdir, 'soak')
    secret = secrets.token_hex(32)
    os.environ[SECRET_ENV] = secret  # the probe is an honest worker: it knows the run's secret
    cfg = prepare_config(league_config(exp, seconds, inference))
    set_torch_threads(cfg.torch_threads)
    seed_everything(cfg.seed)
    run = ParallelRun(cfg)
    commander, timeout = run.commander, cfg.parallel.worker_timeout_seconds
    kills: Dict[str, int] = {}
    started = time.monotonic()
    run.start()
    while commander.coordinator.counters['chunks'] < 4 and not run.finished:  # warm: every worker up and training
        run.step()
    idle_rss, learner_idle_rss = rss_mb(), max(map(rss_mb, learner_pids(run)), default=float('nan'))
    # The budget counts from here: a slow warm-up on a loaded machine must not eat the chaos window.
    commander.coordinator.cfg.train.max_wall_seconds = commander.coordinator.wall_seconds + seconds
    until = time.monotonic() + seconds - 2 * timeout  # chaos ends before the budget, so the run can end cleanly
    learner_address = os.path.join(workdir, 'learner_address')
    floods = [_flooder(run.address, 'dealer', flooders, flood_mb, flood_frames, until, True)] if flooders else []
    if learner_flooders:
        floods.append(_flooder(learner_address, 'push', learner_flooders, flood_mb, flood_frames, until, False))
    probe = Probe(run.address, _security(secret), until)
    probe.start()
    liar = Hostile(run.address, secret.encode(), commander, until) if hostile else None
    if liar is not None:
        liar.start()
    threading.Thread(target=chaos, args=(run, until, kill_every, kills, random.Random(seed)), daemon=True).start()
    peak_rss, learner_peak_rss = idle_rss, learner_idle_rss
    last_steps, last_move, longest_still, endpoint = commander.coordinator.env_steps, time.monotonic(), 0.0, None
    stall_ended_at = 0.0
    try:
        while not run.finished:
            run.step()
            now = time.monotonic()
            peak_rss = max(peak_rss, rss_mb())
            learner_peak_rss = max([learner_peak_rss, *map(rss_mb, learner_pids(run))])
            if commander.coordinator.env_steps != last_steps:
                last_steps, last_move = commander.coordinator.env_steps, now
            elif commander.coordinator.phase == 'collect' and now - last_move > longest_still:
                longest_still, stall_ended_at = now - last_move, now - started
            current = next((w.endpoint for w in commander.sessions.workers.values() if w.role == 'learner' and w.endpoint), None)
            if current != endpoint and current is not None:
                endpoint = current
                with open(learner_address + '.tmp', 'w') as f:
                    f.write(current)
                os.replace(learner_address + '.tmp', learner_address)  # the learner flooder follows it
        summary = run.close()
    except BaseException:
        if not run.closed:
            run.close(abort='soak failed')
        raise
    finally:
        for flood in floods:
            flood.kill()
            flood.wait()
    probe.join(timeout=15)
    if liar is not None:
        liar.join(timeout=30)
    from sparring.league import BaseLeague
    league = BaseLeague.load(os.path.join(exp, 'league_state.npz'))
    stats = summary['worker_stats']
    latencies = np.asarray(probe.latencies) * 1000
    result = dict(
        seconds=seconds, kill_every=kill_every, flooders=flooders, flood_mb=flood_mb, flood_frames=flood_frames,
        learner_flooders=learner_flooders, inference_workers=inference,
        **audit(exp, league), env_steps=summary['env_steps'],
        chunks_reported=commander.coordinator.counters['chunks'],
        # A learner's count is restored from its checkpoint: the newest process holds the run's figure.
        chunks_trained=int(max((s.get('chunks_received', 0) for wid, s in stats.items() if wid.startswith('learner')),
                               default=0)),
        chunks_reclaimed=commander.coordinator.counters['chunks_reclaimed'],
        chunks_redirected=commander.coordinator.counters['chunks_redirected'],
        kills=kills, restarts=sum(summary['restarts'].values()),
        rejected_messages=summary['rejected_messages'],
        learner_rejected_messages={k[len('rejected_'):]: v for wid, st in stats.items() if wid.startswith('learner')
                                   for k, v in st.items() if k.startswith('rejected_')},
        commander_rss_idle_mb=round(idle_rss, 1), commander_rss_peak_mb=round(peak_rss, 1),
        learner_rss_idle_mb=round(learner_idle_rss, 1), learner_rss_peak_mb=round(learner_peak_rss, 1),
        probe_requests=len(latencies), probe_timeouts=probe.failures,
        probe_p50_ms=round(float(np.percentile(latencies, 50)), 2) if len(latencies) else None,
        probe_p95_ms=round(float(np.percentile(latencies, 95)), 2) if len(latencies) else None,
        longest_collection_stall_seconds=round(longest_still, 2), worker_timeout_seconds=timeout,
        longest_stall_until_second=round(stall_ended_at, 1),
        stalled=longest_still > timeout,
        refused=dict(params=commander.coordinator.counters['params_refused'], requests=commander.coordinator.counters['requests_refused']),
        hostile_sent=liar.sent if liar else 0, hostile_refused=liar.refused if liar else 0,
        hostile_accepted=liar.accepted if liar else 0, hostile_accepted_kinds=liar.accepted_kinds if liar else [])
    if kill_commander_seconds:
        result['commander_killed'] = kill_commander_in_drain(workdir, kill_commander_seconds, cut)
    result['load_average'] = os.getloadavg()
    return result


def child_run(exp: str, seconds: float) -> None:
    """A run in a process of its own (``--child-run``), marking when collection has ended, to be killed then."""
    from sparring.framework.parallel import ParallelRun
    from sparring.framework.run_setup import prepare_config
    from sparring.worker.runtime import seed_everything, set_torch_threads
    cfg = prepare_config(league_config(exp, seconds))
    set_torch_threads(cfg.torch_threads)
    seed_everything(cfg.seed)
    run = ParallelRun(cfg)
    run.start()
    marked = False
    while not run.finished:
        run.step()
        if not marked and run.commander.coordinator.phase != 'collect':
            open(os.path.join(exp, 'draining'), 'w').close()
            marked = True
    run.close()


def kill_commander_in_drain(workdir: str, seconds: float, cut: str) -> dict:
    """Run a league in a child process, SIGKILL its commander while the learners drain, cut a file it saved,
    resume the run here to its end, and audit it."""
    from sparring.framework.parallel import ParallelRun
    from sparring.framework.run_setup import prepare_config
    exp = os.path.join(workdir, 'killed')
    os.makedirs(exp, exist_ok=True)
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--child-run', exp, '--seconds', str(seconds)])
    marker, deadline = os.path.join(exp, 'draining'), time.monotonic() + seconds + 120
    while not os.path.exists(marker) and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if child.poll() is not None:
        raise RuntimeError(f'the run to kill ended by itself (exit code {child.returncode}) before it drained')
    time.sleep(0.3)  # well into the drain
    child.send_signal(signal.SIGKILL)
    child.wait()
    time.sleep(3.0)  # its workers see their launcher gone and exit
    cut_path = _cut(exp, cut)
    cfg = prepare_config(league_config(exp, seconds), resume=True)
    run = ParallelRun(cfg, resume=True)
    started = time.monotonic()
    try:
        run.start()
        while not run.finished:
            run.step()
        summary = run.close()
    except BaseException:
        if not run.closed:
            run.close(abort='soak failed')
        raise
    from sparring.league import BaseLeague
    league = BaseLeague.load(os.path.join(exp, 'league_state.npz'))
    return dict(seconds=seconds, cut=cut_path and os.path.relpath(cut_path, exp), **audit(exp, league),
                resumed_seconds=round(time.monotonic() - started, 1), env_steps=summary['env_steps'],
                stop_reason=summary['stop_reason'])


def _cut(exp: str, what: str) -> Optional[str]:
    """Cut a file the killed commander saved to half its length: its state snapshot, or the newest league snapshot."""
    from sparring.framework.journal import COMMANDER_DIR, STATE_FILE
    if what == 'state':
        paths = [os.path.join(exp, COMMANDER_DIR, STATE_FILE)]
    elif what == 'snapshot':
        paths = sorted(glob.glob(os.path.join(exp, 'params', '*.pt')), key=os.path.getmtime)[-1:]
    else:
        return None
    for path in paths:
        if os.path.exists(path):
            with open(path, 'r+b') as f:
                f.truncate(os.path.getsize(path) // 2)
            return path
    return None


def targets_met(result: dict) -> Dict[str, bool]:
    """Each target of the soak, and whether it was met."""
    killed = result.get('commander_killed', {})
    return dict(
        none_lost=result['games_lost'] == 0 and killed.get('games_lost', 0) == 0,
        none_doubled=result['games_doubled'] == 0 and killed.get('games_doubled', 0) == 0,
        no_stall=not result['stalled'],
        commander_rss_under_2x_idle=result['commander_rss_peak_mb'] < 2 * result['commander_rss_idle_mb'],
        learner_rss_under_2x_idle=not result['learner_rss_peak_mb'] >= 2 * result['learner_rss_idle_mb'],
        probe_p95_under_100_ms=(result['probe_p95_ms'] or 0) < 100,
        nothing_hostile_accepted=result['hostile_accepted'] == 0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=600.0)
    parser.add_argument('--kill-every', type=float, default=4.0)
    parser.add_argument('--flooders', type=int, default=16, help='connections flooding the commander')
    parser.add_argument('--flood-mb', type=float, default=100.0, help='size of each flood message')
    parser.add_argument('--flood-frames', type=int, default=100, help='frames each flood message is cut into')
    parser.add_argument('--learner-flooders', type=int, default=8, help='connections flooding the learner')
    parser.add_argument('--hostile', type=int, default=1, help='1: a holder of the secret sends signed lies')
    parser.add_argument('--kill-commander-seconds', type=float, default=60.0,
                        help='then a run this long whose commander is SIGKILLed in its drain and resumed (0: none)')
    parser.add_argument('--cut', choices=('state', 'snapshot', 'none'), default='state',
                        help='the file of the killed run cut in half before it is resumed')
    parser.add_argument('--inference', type=int, default=0,
                        help='forward-pass workers the collectors act through (killed among the others)')
    parser.add_argument('--workdir', default=None)
    parser.add_argument('--child-run', default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_run:
        child_run(args.child_run, args.seconds)
        return 0
    result = soak(args.workdir or tempfile.mkdtemp(prefix='soak_'), args.seconds, args.kill_every, args.flooders,
                  args.flood_mb, flood_frames=args.flood_frames, learner_flooders=args.learner_flooders,
                  hostile=bool(args.hostile), kill_commander_seconds=args.kill_commander_seconds, cut=args.cut,
                  inference=args.inference)
    result['targets'] = targets_met(result)
    for key, value in result.items():
        print(f'{key}: {value}')
    ok = all(result['targets'].values())
    print('targets met' if ok else 'targets NOT met: ' + ', '.join(k for k, v in result['targets'].items() if not v))
    merge_results('soak', {f'{int(args.seconds)}s' + (f'_inference{args.inference}' if args.inference else ''): result})
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
