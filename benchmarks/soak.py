"""Soak: a parallel league under chaos, checked for lost and doubled games, stalls, memory and latency.

A tic-tac-toe league (2 collectors, 1 learner, 1 evaluator; with ``--inference N``, N forward-pass workers the
collectors act through; with ``--recurrent``, an LSTM network) runs for ``--seconds`` while

* a chaos thread SIGKILLs a random worker of every kind every ``--kill-every`` seconds (the launcher restarts it);
* flooder processes hammer the commander's port without the secret: big messages (``--flood-mb``) on
  ``--flooders`` connections, each in ``--flood-frames`` frames, and a stream of small forged ones from
  fresh connections (with a shared secret, CURVE refuses them all at the handshake);
* ``--learner-flooders`` connections push the same junk at the learner's chunk socket (followed to its
  new port when the learner is restarted);
* a hostile holder of the secret (``--hostile``) sends signed lies every second: integers past any bound
  (2**63 env steps, 2**64 statistics, a header time of 10**400), a chunk report beyond the chunk size,
  a request number used again for another request, NaN and misshapen parameters under the learner's
  session, a ``register`` under a live worker's id, and a chunk report of no task whose results are all
  refused; each must be refused (``hostile_accepted`` counts those that were not; ``live_ids_taken`` the
  registers that got a live id; the reports' env steps must all be in ``env_steps_refused``);
* with forward-pass workers, a second liar (a process of its own) sends them, once a second, references to
  unknown bots and parameters (a new one each time), a wave whose segments of one network differ in carrying a
  recurrent state, a recurrent state of the wrong width and, every few seconds, a request over the socket's
  bound: none may be answered as if true, and no forward-pass worker may exit for it;
* an honest probe (a registered worker) sends heartbeats and times the replies.

Then it checks, from the journal, the saved league and the collectors' own audit files
(``parallel.audit_reports``): every game a collector was told was recorded is in the journal (lost),
no job is recorded twice or both recorded and abandoned, and the payoff holds exactly the journal's
games (doubled).

With ``--kill-commander-seconds S`` a second run of S seconds follows, in a process of its own: its
commander is SIGKILLed once collection has ended and the learners drain, the state file it saved is cut
in half (``--cut state``; ``--cut snapshot`` cuts the newest league snapshot's parameters instead), and
the run is resumed here to its end, then audited the same way. With ``--disk-full-seconds S`` a third run
of S seconds, in a process of its own, has its experiment directory on a 64 MB tmpfs that is filled up while
it collects; once it has stopped the space is freed and the run resumed here to its end and audited (a
machine where a tmpfs cannot be mounted skips this, and the result says why).

It prints and writes ``benchmarks/results/soak.json`` (stamped with the commit, date, CPU model, load and command):
games played and abandoned, lost and doubled, chunks reported / trained / reclaimed, kills, restarts and every
worker exit that was not a kill or a requested stop (with its last line), the commander's and every worker's
idle and peak RSS, the probe's p50/p95 latency, the longest time collection stood still, what the hostile peers
got through, and the targets: 0 lost, 0 doubled, no stall longer than the worker timeout, every process's RSS
under 1.5x its idle figure, probe p95 under 100 ms, nothing hostile accepted, no live id taken, no env step
spent by a refused report, no process exited because of a message (a run that aborts raises). ``--smoke``
runs every attack for 40 s on a small scale, with one forward-pass worker, its record in a temporary folder.

    flock /tmp/bench.lock nice -n 10 python benchmarks/soak.py --seconds 600 --inference 1 --recurrent
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
from typing import Dict, List, Optional, Tuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_file import add_smoke, apply_smoke, merge_results

RECURRENT_WIDTH = 32  # the hidden size of --recurrent's LSTM
OVERSIZED_EVERY = 5.0  # seconds between the forward-pass liar's oversized requests
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


def league_config(exp: str, seconds: float, inference: int = 0, recurrent: bool = False) -> dict:
    # A recurrent network gives the forward-pass workers' recurrent-state checks something to refuse.
    model = dict(type='lstm', encoder_sizes=[32], hidden_size=RECURRENT_WIDTH, bptt_len=8) if recurrent else \
        dict(hidden_sizes=[32])
    return dict(
        exp_name=exp, seed=0,
        env=dict(type='tictactoe', collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=8),
        policy=dict(type='ppo', model=model, collect=dict(n_steps=16),
                    learn=dict(epochs=1, num_minibatches=2, lr=1e-3)),
        league=dict(type='one_vs_one', active_players=dict(naive_sp=1), payoff=dict(decay=1.0),
                    players=dict(naive_sp=dict(one_phase_step=20))),
        train=dict(max_env_steps=10 ** 9, max_wall_seconds=seconds, eval_every_iters=20, checkpoint_every_iters=10,
                   progress_bar=False, tensorboard=False),
        parallel=dict(collectors=2, evaluators=1, heartbeat_seconds=0.5, worker_timeout_seconds=8.0,
                      save_every_seconds=2.0, log_every_seconds=10.0, drain_timeout_seconds=10.0,
                      shutdown_seconds=20.0, max_restarts=10_000, audit_reports=True,
                      # sealed in small segments (recycling exercised), all kept for the audit
                      journal_segment_mb=1.0, journal_audit_mb=100_000.0,
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


def worker_rss(run) -> Dict[str, float]:
    """Resident memory of every running worker process, by worker id."""
    found = {wid: rss_mb(process.pid) for wid, process in list(run.launcher.processes.items())
             if process.exitcode is None}
    return {wid: mb for wid, mb in found.items() if mb == mb}  # gone meanwhile: NaN


def _summed(stats, prefix: str) -> Dict[str, float]:
    """The figures whose names start with ``prefix``, added up over several processes' statistics."""
    total: Dict[str, float] = {}
    for figures in stats:
        for key, value in figures.items():
            if key.startswith(prefix):
                total[key] = total.get(key, 0.0) + value
    return total


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
        self.ids_tried = self.ids_taken = 0  # registers under a live worker's id, and those that got it
        self.reportless_steps = 0  # env steps claimed by reports of no task whose results were all refused

    def forged(self, kind: str, body: dict, arrays=None, time_stamp=None):
        """``(frames, id)`` of a signed message built by hand, past the sender's own checks."""
        from sparring.worker.remote.protocol import PROTOCOL
        from sparring.worker.remote.wire import MAGIC, Signer, encode
        signer, message_id = Signer(self.secret), uuid.uuid4().hex
        if arrays:  # lies in the arrays only: the wire lays them out
            return encode(kind, body, arrays, signer=signer, schemas=PROTOCOL, message_id=message_id), message_id
        raw = json.dumps(dict(kind=kind, id=message_id, time=time.time() if time_stamp is None else time_stamp,
                              sender='hostile', reply_to=None, body=body, arrays=[], packed=0)).encode()
        return [MAGIC, raw, signer.tag([MAGIC, raw])], message_id

    def run(self) -> None:
        import zmq

        from sparring.worker.remote.protocol import PROTOCOL
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
        rng = random.Random(1)
        while time.monotonic() < self.until:
            number += 4
            ask('heartbeat', dict(session=session, stats=dict(queued=2 ** 64)))
            # a live worker's id, taken by a register: refused while it heartbeats
            live = [(w.worker_id, w.role, w.player_id) for w in list(commander.sessions.workers.values())
                    if w.host not in ('hostile', 'probe')]
            if live:
                wid, role, player = rng.choice(live)
                self.ids_tried += 1
                reply = ask('register', dict(role=role, worker_id=wid, session=uuid.uuid4().hex, pid=os.getpid(),
                                             host='hostile', **(dict(player_id=player) if player else {})))
                if reply is not None and reply.kind == 'registered':  # it got the id: give it straight back
                    self.ids_taken += 1
                    ask('goodbye', dict(session=reply.body['session']), fine=('ack',))
            # a report of no task whose results were all refused: it must spend none of the budget
            reply = ask('chunk_report', dict(session=session, request_number=number + 2, task_id=None,
                                             chunk_id=uuid.uuid4().hex, player_id=pid, version=0,
                                             env_steps=commander.chunk_steps, results=[[10 ** 15 + number, 'win']]),
                        fine=('ack',))
            if reply is not None and reply.kind == 'ack':
                self.reportless_steps += commander.chunk_steps
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


def forward_liar(spec: dict) -> None:
    """A holder of the secret that lies to every forward-pass worker of the run, once a second, in a process of its
    own (``--forward-liar SPEC``; its memory is not the commander's): references to unknown bots and parameters (a
    new one each time), a wave whose segments of one network differ in carrying a recurrent state, a recurrent
    state of the wrong width and, every :data:`OVERSIZED_EVERY` seconds, a signed request larger than the socket's
    bound. Each must be refused (an error reply, or dropped unread), and no forward-pass worker may exit for it.
    Writes what it sent and got back, by attack and reply kind, to ``spec['out']``."""
    import zmq

    from sparring.worker.remote import inference
    from sparring.worker.remote.inference_protocol import INFERENCE_PROTOCOL
    from sparring.worker.remote.wire import Signer, decode, encode
    signer, context = Signer(spec['secret'].encode()), zmq.Context()
    security = _security(spec['secret'])
    sockets: Dict[str, object] = {}
    replies: Dict[str, Dict[str, int]] = {}
    rows, pid, width = 2, spec['player'], spec['state_width']
    obs = np.zeros((rows, *spec['obs_shape']), np.float32)
    limit = getattr(inference, 'MAX_MESSAGE_BYTES', 64 << 20)
    big = np.zeros((1, limit // 4 + (1 << 18)), np.float32)  # a quarter MB over the bound
    last_big, number = 0.0, 0

    def ask(sock, attack: str, kind: str, body: dict, arrays: dict, wait: float = 3.0):
        message_id = uuid.uuid4().hex
        sock.send_multipart(encode(kind, body, arrays, signer=signer, schemas=INFERENCE_PROTOCOL,
                                   message_id=message_id), copy=False)
        got, answer = 'none', None
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not sock.poll(100):
                continue
            reply = decode(sock.recv_multipart(), signer=signer, schemas=INFERENCE_PROTOCOL)
            if reply.reply_to == message_id:
                got, answer = reply.kind, reply
                break
        counts = replies.setdefault(attack, {})
        counts[got] = counts.get(got, 0) + 1
        return answer

    while time.time() < spec['until']:
        addresses = inference.inference_addresses(spec['exp'])
        for gone in set(sockets) - set(addresses):
            sockets.pop(gone).close(linger=0)
        for address in addresses:
            if address not in sockets:
                sock = context.socket(zmq.DEALER)
                sock.setsockopt(zmq.LINGER, 0)
                security.client(sock)
                sock.connect(address)
                sockets[address] = sock
            sock = sockets[address]
            number += 1
            ask(sock, 'unknown_bot', 'forward', dict(ref=f'bot:nobody{number}', version=0, rows=rows), dict(obs=obs))
            ask(sock, 'bot_options', 'forward', dict(ref=f'bot:random?seed={number}', version=0, rows=rows),
                dict(obs=obs))
            ask(sock, 'unknown_params', 'forward', dict(ref=f'params/nothing-{number}', version=0, rows=rows),
                dict(obs=obs))
            # the learning player's version the worker holds, so that the state checks (not the version's) refuse
            synced = ask(sock, 'sync (honest)', 'sync', dict(ref=pid), {})
            version = int(synced.body['version']) if synced is not None and synced.kind == 'synced' else 0
            state = np.zeros((rows, width), np.float32)
            ask(sock, 'mixed_state_wave', 'forward_wave',
                dict(refs=[pid, pid], versions=[version, version], rows=[rows, rows]),
                {'obs_0': obs, 'state_0_0': state, 'state_1_0': state, 'obs_1': obs})
            wrong = np.zeros((rows, width + 3), np.float32)
            ask(sock, 'wrong_state_width', 'forward', dict(ref=pid, version=version, rows=rows),
                dict(obs=obs, state_0=wrong, state_1=wrong))
            if time.monotonic() - last_big > OVERSIZED_EVERY:
                last_big = time.monotonic()
                ask(sock, 'oversized', 'forward', dict(ref=pid, version=version, rows=1),
                    dict(obs=np.zeros((1, *spec['obs_shape']), np.float32), state_0=big), wait=1.0)
        time.sleep(1.0)
    with open(spec['out'], 'w') as f:
        json.dump(replies, f)
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
    from sparring.framework.journal import COMMANDER_DIR, JOURNAL_FILE, Journal
    journal = Journal(os.path.join(exp, COMMANDER_DIR, JOURNAL_FILE))
    entries: List[dict] = [dict(e) for e in journal.read()]  # every segment, in order
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
    from sparring.worker.remote.protocol import PROTOCOL
    from sparring.worker.remote.security import Security
    from sparring.worker.remote.wire import Signer
    return Security(Signer(secret.encode()), protocol=PROTOCOL)


def _flooder(target: str, kind: str, connections: int, megabytes: float, frames: int, until: float, small: bool):
    return subprocess.Popen([sys.executable, '-c', FLOODER, target, kind, str(connections), str(megabytes), str(frames),
                             str(time.time() + until - time.monotonic()), '1' if small else '0'])


def soak(workdir: str, seconds: float, kill_every: float = 4.0, flooders: int = 16, flood_mb: float = 100.0,
         seed: int = 0, flood_frames: int = 1, learner_flooders: int = 0, hostile: bool = False,
         kill_commander_seconds: float = 0.0, cut: str = 'state', inference: int = 0, recurrent: bool = False,
         disk_full_seconds: float = 0.0) -> dict:
    """The soak (see the module); the optional phases are off unless asked for."""
    from sparring.framework.parallel import ParallelRun
    from sparring.framework.run_setup import prepare_config
    from sparring.worker.remote.wire import SECRET_ENV
    from sparring.worker.runtime import seed_everything, set_torch_threads
    exp = os.path.join(workdir, 'soak')
    secret = secrets.token_hex(32)
    os.environ[SECRET_ENV] = secret  # the probe is an honest worker: it knows the run's secret
    cfg = prepare_config(league_config(exp, seconds, inference, recurrent))
    set_torch_threads(cfg.torch_threads)
    seed_everything(cfg.seed)
    run = ParallelRun(cfg)
    commander, timeout = run.commander, cfg.parallel.worker_timeout_seconds
    kills: Dict[str, int] = {}
    exits: List[Tuple[str, int, str]] = []  # (worker id, exit code, its last line) of every worker that ended
    handle_exit = run._exited

    def exited(worker_id: str, code: int) -> None:
        last = run.launcher.tail(worker_id).strip().splitlines()[-1:] if code != -signal.SIGKILL else []
        exits.append((worker_id, code, last[0][:300] if last else ''))
        handle_exit(worker_id, code)

    run._exited = exited  # type: ignore[method-assign]
    started = time.monotonic()
    run.start()
    while commander.coordinator.counters['chunks'] < 4 and not run.finished:  # warm: every worker up and training
        run.step()
    idle_rss, learner_idle_rss = rss_mb(), max(map(rss_mb, learner_pids(run)), default=float('nan'))
    worker_idle_rss = worker_rss(run)  # by worker id
    worker_peak_rss = dict(worker_idle_rss)
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
    forward_out = os.path.join(workdir, 'forward_liar.json')
    forward = None
    if hostile and inference:
        spec = dict(exp=exp, secret=secret, player=commander.coordinator.player_ids[0], out=forward_out,
                    obs_shape=list(commander.observation_space.shape), until=time.time() + until - time.monotonic(),
                    state_width=RECURRENT_WIDTH)
        forward = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--forward-liar', json.dumps(spec)])
    threading.Thread(target=chaos, args=(run, until, kill_every, kills, random.Random(seed)), daemon=True).start()
    peak_rss, learner_peak_rss = idle_rss, learner_idle_rss
    last_steps, last_move, longest_still, endpoint = commander.coordinator.env_steps, time.monotonic(), 0.0, None
    stall_ended_at = sampled = 0.0
    try:
        while not run.finished:
            run.step()
            now = time.monotonic()
            peak_rss = max(peak_rss, rss_mb())
            learner_peak_rss = max([learner_peak_rss, *map(rss_mb, learner_pids(run))])
            if now - sampled > 0.5:
                sampled = now
                for wid, mb in worker_rss(run).items():
                    worker_peak_rss[wid] = max(worker_peak_rss.get(wid, 0.0), mb)
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
        if forward is not None and forward.poll() is None:
            try:
                forward.wait(timeout=30)
            except subprocess.TimeoutExpired:
                forward.kill()
                forward.wait()
    probe.join(timeout=15)
    if liar is not None:
        liar.join(timeout=30)
    forward_replies: Dict[str, Dict[str, int]] = {}
    if forward is not None and os.path.exists(forward_out):
        with open(forward_out) as f:
            forward_replies = json.load(f)
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
        hostile_accepted=liar.accepted if liar else 0, hostile_accepted_kinds=liar.accepted_kinds if liar else [],
        live_ids_tried=liar.ids_tried if liar else 0, live_ids_taken=liar.ids_taken if liar else 0,
        registers_refused_id_held=commander.coordinator.counters['registers_refused_id_held'],
        reportless_steps_claimed=liar.reportless_steps if liar else 0,
        env_steps_refused=commander.coordinator.counters['env_steps_refused'],
        forward_liar_replies=forward_replies, recurrent=recurrent,
        # what the forward-pass workers refused, by why (all their processes), and what the collectors saw
        inference_dropped=_summed([st for wid, st in stats.items() if wid.startswith('inference')], 'dropped/'),
        collector_forward_refusals=sum(int(st.get('forward_refusals', 0)) for wid, st in stats.items()
                                       if wid.startswith('collector')),
        # a worker that exits 0 was told to stop; one SIGKILLed was the chaos thread's: any other exit is a failure
        worker_exits=len(exits), exits_not_by_kill=[e for e in exits if e[1] not in (0, -signal.SIGKILL)],
        stop_reason=summary.get('stop_reason'),  # the budget's, not an abort (which would have raised here)
        worker_rss_idle_mb={w: round(v, 1) for w, v in sorted(worker_idle_rss.items())},
        worker_rss_peak_mb={w: round(v, 1) for w, v in sorted(worker_peak_rss.items())})
    if kill_commander_seconds:
        result['commander_killed'] = kill_commander_in_drain(workdir, kill_commander_seconds, cut)
    if disk_full_seconds:
        result['disk_full'] = fill_disk_and_resume(workdir, disk_full_seconds)
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
    summary, league, resumed_seconds = _resume_to_the_end(exp, seconds)
    return dict(seconds=seconds, cut=cut_path and os.path.relpath(cut_path, exp), **audit(exp, league),
                resumed_seconds=resumed_seconds, env_steps=summary['env_steps'],
                stop_reason=summary['stop_reason'])


def _resume_to_the_end(exp: str, seconds: float):
    """Resume the run in ``exp`` in this process and drive it to its end: ``(summary, league, resume seconds)``."""
    from sparring.framework.parallel import ParallelRun
    from sparring.framework.run_setup import prepare_config
    from sparring.league import BaseLeague
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
    league = BaseLeague.load(os.path.join(exp, 'league_state.npz'))
    return summary, league, round(time.monotonic() - started, 1)


def fill_disk_and_resume(workdir: str, seconds: float, size_mb: int = 64) -> dict:
    """Run a league in a child process with its experiment directory on a small tmpfs, fill that disk while it
    collects, wait for the run to stop, free the space, resume the run here to its end, and audit it. Needs the
    right to mount a tmpfs (root); without it the phase is skipped and says why."""
    from sparring.framework.journal import COMMANDER_DIR, JOURNAL_FILE
    disk = os.path.join(workdir, 'small_disk')
    os.makedirs(disk, exist_ok=True)
    mounted = subprocess.run(['mount', '-t', 'tmpfs', '-o', f'size={size_mb}m', 'tmpfs', disk], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        return dict(skipped=f'no {size_mb} MB tmpfs could be mounted: {mounted.stderr.strip()[:200]}')
    try:
        exp = os.path.join(disk, 'run')
        os.makedirs(exp)
        output = os.path.join(workdir, 'disk_full_child.log')  # on the big disk: it must outlive the full one
        with open(output, 'w') as log_file:
            child = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--child-run', exp, '--seconds',
                                      str(seconds)], stdout=log_file, stderr=subprocess.STDOUT)
        journal, deadline = os.path.join(exp, COMMANDER_DIR, JOURNAL_FILE), time.monotonic() + seconds + 60
        while child.poll() is None and time.monotonic() < deadline and \
                (not os.path.exists(journal) or os.path.getsize(journal) < 20_000):  # collection under way
            time.sleep(0.2)
        if child.poll() is not None:
            raise RuntimeError(f'the run on the small disk ended (exit code {child.returncode}) before it collected; '
                               f'see {output}')
        filler = os.path.join(disk, 'filler')
        free_before = _fill(filler)
        filled_at = time.monotonic()
        try:
            child.wait(timeout=seconds + 120)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        stopped_after = time.monotonic() - filled_at
        with open(output, errors='replace') as f:
            said = [line.strip() for line in f if line.strip()]
        os.unlink(filler)
        time.sleep(2.0)  # its workers see their launcher gone and exit
        summary, league, resumed_seconds = _resume_to_the_end(exp, seconds)
        return dict(seconds=seconds, disk_mb=size_mb, free_mb_when_filled=round(free_before / 2 ** 20, 1),
                    child_exit_code=child.returncode, child_stopped_seconds_after_full=round(stopped_after, 1),
                    child_last_lines=said[-3:], **audit(exp, league), resumed=True,
                    resumed_seconds=resumed_seconds, env_steps=summary['env_steps'],
                    stop_reason=summary.get('stop_reason'))
    finally:
        subprocess.run(['umount', '-l', disk], capture_output=True)


def _fill(path: str) -> int:
    """Write ``path`` until its disk is full; returns the bytes written."""
    written = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for block in (1 << 20, 1 << 12):
            data = bytes(block)
            while True:
                try:
                    written += os.write(fd, data)
                except OSError:  # ENOSPC: then the smaller blocks, to the last page
                    break
    finally:
        os.close(fd)
    return written


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
    disk = result.get('disk_full', {})
    idle, peak = result['worker_rss_idle_mb'], result['worker_rss_peak_mb']
    lies = result['forward_liar_replies']
    return dict(
        none_lost=result['games_lost'] == 0 and killed.get('games_lost', 0) == 0 and disk.get('games_lost', 0) == 0,
        none_doubled=result['games_doubled'] == 0 and killed.get('games_doubled', 0) == 0
        and disk.get('games_doubled', 0) == 0,
        resumed_after_the_disk_was_freed=not disk or 'skipped' in disk or disk.get('resumed', False),
        no_stall=not result['stalled'],
        commander_rss_under_1_5x_idle=result['commander_rss_peak_mb'] < 1.5 * result['commander_rss_idle_mb'],
        every_worker_rss_under_1_5x_idle=all(peak[w] < 1.5 * idle[w] for w in idle if w in peak),
        probe_p95_under_100_ms=(result['probe_p95_ms'] or 0) < 100,
        nothing_hostile_accepted=result['hostile_accepted'] == 0,
        no_live_id_taken=result['live_ids_taken'] == 0,
        reportless_reports_spent_nothing=result['env_steps_refused'] >= result['reportless_steps_claimed'],
        # no forward-pass lie answered as if true: a network for an unknown or bot reference, rows with a wrong
        # recurrent state, a mixed wave
        no_forward_lie_answered=not any(kind.startswith('forwarded') for attack, replies in lies.items()
                                        if result['recurrent'] or attack not in ('wrong_state_width',
                                                                                  'mixed_state_wave')
                                        for kind in replies),
        no_process_exited_because_of_a_message=not result['exits_not_by_kill'])


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
    parser.add_argument('--inference', type=int, default=None,
                        help='forward-pass workers the collectors act through (killed among the others; default 0, '
                             'with --smoke 1)')
    parser.add_argument('--disk-full-seconds', type=float, default=60.0,
                        help='then a run this long on a small tmpfs that is filled while it collects, freed, and the '
                             'run resumed and audited (0: none; needs the right to mount)')
    parser.add_argument('--recurrent', action='store_true',
                        help='an LSTM network (the forward-pass workers\' recurrent-state checks are attacked too)')
    add_smoke(parser)  # every attack on a small scale, for 40 s
    parser.add_argument('--workdir', default=None)
    parser.add_argument('--child-run', default=None, help=argparse.SUPPRESS)
    parser.add_argument('--forward-liar', default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_run:
        child_run(args.child_run, args.seconds)
        return 0
    if args.forward_liar:
        forward_liar(json.loads(args.forward_liar))
        return 0
    apply_smoke(args, seconds=40.0, kill_every=3.0, flooders=2, flood_mb=4.0, flood_frames=4, learner_flooders=1,
                kill_commander_seconds=0.0, disk_full_seconds=30.0,
                inference=1 if args.inference is None else args.inference)
    args.inference = args.inference or 0
    result = soak(args.workdir or tempfile.mkdtemp(prefix='soak_'), args.seconds, args.kill_every, args.flooders,
                  args.flood_mb, flood_frames=args.flood_frames, learner_flooders=args.learner_flooders,
                  hostile=bool(args.hostile), kill_commander_seconds=args.kill_commander_seconds, cut=args.cut,
                  inference=args.inference, recurrent=args.recurrent, disk_full_seconds=args.disk_full_seconds)
    result['targets'] = targets_met(result)
    for key, value in result.items():
        print(f'{key}: {value}')
    ok = all(result['targets'].values())
    print('targets met' if ok else 'targets NOT met: ' + ', '.join(k for k, v in result['targets'].items() if not v))
    key = f'{int(args.seconds)}s' + (f'_inference{args.inference}' if args.inference else '') + \
        ('_recurrent' if args.recurrent else '')
    merge_results('soak', {key: result})  # a smoke run's go to a temporary folder
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
