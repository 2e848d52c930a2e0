"""Trust boundaries on the wire (issue #28): what a holder of the secret, or a peer without it, can no longer
do to a run. One regression test per defect, named ``test_defect<N>_...``."""
import json
import os
import threading
import time
import uuid

import numpy as np
import pytest
import zmq

from sparring.worker.remote.protocol import PROTOCOL
from sparring.worker.remote.transport import DataPuller, DataPusher, Server
from sparring.worker.remote.security import Security
from sparring.worker.remote.wire import MAGIC, MessageError, Signer, decode, encode, params_to_arrays
from tests.scripts import load_script

SECRET = b'a shared secret of at least 16 bytes'

helpers = load_script('tests/framework/test_parallel_commander.py', 'commander_helpers')
join, publish, report, req, start = helpers.join, helpers.publish, helpers.report, helpers.req, helpers.start


def _security():
    return Security(Signer(SECRET), protocol=PROTOCOL)


def _forged(kind, body, buffers=(), descriptors=(), **header):
    """Signed frames of a message built by hand, past the sender's checks (a hostile holder of the secret)."""
    fields = dict(kind=kind, id=uuid.uuid4().hex, time=time.time(), sender='hostile', reply_to=None, body=body,
                  arrays=[list(d) for d in descriptors], packed=0)
    fields.update(header)
    raw = header.pop('raw', None) or json.dumps(fields).encode()
    buffers = [bytes(b) for b in buffers]
    return [MAGIC, raw, Signer(SECRET).tag([MAGIC, raw, *buffers]), *buffers]


def _decode(frames):
    return decode(frames, signer=Signer(SECRET), schemas=PROTOCOL)


def _collector_with_jobs(tmp_path, count=2):
    commander, clock, learners = start(tmp_path)
    session, _ = join(commander, 'collector')
    pid = commander.coordinator.player_ids[0]
    _, batch, _ = commander.handle(req('jobs', session=session, player_id=pid, count=count))
    return commander, session, pid, [j['job_id'] for j in batch['jobs']]


def _chunk_report(session, pid, number, chunk_id, results, steps=4, **extra):
    return req('chunk_report', session=session, request_number=number, task_id=None, chunk_id=chunk_id,
               player_id=pid, version=0, env_steps=steps, results=results, **extra)


# -- defect 3: a holder of the secret gets wrong data recorded ---------------------------------------

def test_defect3_a_request_number_reused_for_another_chunk_is_refused_not_answered_as_recorded(tmp_path):
    commander, session, pid, jobs = _collector_with_jobs(tmp_path)
    first = commander.handle(_chunk_report(session, pid, 7, 'c1', [[jobs[0], 'win']]))
    assert first[1]['accepted'] == 1
    again = commander.handle(_chunk_report(session, pid, 7, 'c1', [[jobs[0], 'win']]))
    assert again == first  # the same request sent again: its first reply
    kind, body, _ = commander.handle(_chunk_report(session, pid, 7, 'c2', [[jobs[1], 'loss']]))
    assert kind == 'error' and 'request number 7' in body['error'], body
    assert commander.coordinator.counters['games'] == 1


def test_defect3_env_steps_are_bounded_by_the_chunk_size(tmp_path):
    commander, session, pid, jobs = _collector_with_jobs(tmp_path)
    kind, body, _ = commander.handle(_chunk_report(session, pid, 1, 'c1', [[99_999, 'win']], steps=5000))
    assert kind == 'error' and 'env_steps' in body['error'] and str(commander.chunk_steps) in body['error'], body
    assert commander.coordinator.env_steps == 0
    assert commander.handle(_chunk_report(session, pid, 2, 'c2', [[jobs[0], 'win']],
                                          steps=commander.chunk_steps))[0] == 'ack'
    assert commander.coordinator.env_steps == commander.chunk_steps


def test_defect3_episode_returns_must_be_finite_and_bounded():
    body = dict(session='s', request_number=1, task_id=None, chunk_id='c', player_id='p', version=0, env_steps=4,
                results=[], episode_returns=[1.0, -2.5])
    assert _decode(_forged('chunk_report', body)).body == body
    with pytest.raises(MessageError, match='episode_returns') as err:
        _decode(_forged('chunk_report', dict(body, episode_returns=[1.0, 1e308])))
    assert err.value.reason == 'schema'


def test_defect3_an_evaluation_report_holds_no_more_games_than_its_job(tmp_path):
    commander, _, _ = start(tmp_path)
    evaluator, _ = join(commander, 'evaluator')
    commander.coordinator._queue_evaluation(commander.coordinator.player_ids[0], final=False)
    kind, job, _ = commander.handle(req('eval_task', session=evaluator, request_number=1))
    assert kind == 'eval_job', job
    games = commander.cfg.env.n_evaluator_episodes
    flood = {oid: ['win'] * 20_000 for oid, _ in job['opponents']}
    kind, body, _ = commander.handle(req('eval_report', session=evaluator, request_number=2, task_id=job['task_id'],
                                         player_id=job['player_id'], version=0, results=flood))
    assert kind == 'error' and str(games) in body['error'], body
    honest = {oid: ['win'] * games for oid, _ in job['opponents']}
    kind, body, _ = commander.handle(req('eval_report', session=evaluator, request_number=3, task_id=job['task_id'],
                                         player_id=job['player_id'], version=0, results=honest))
    assert kind == 'ack', body


# -- defect 5 / 8: multi-frame floods, at the commander's socket and at a learner's ---------------------------

class _Hashes:
    """Counts the signatures a receiver computes (a flood must be dropped before any is)."""

    def __init__(self, monkeypatch):
        self.count = 0
        original = Signer.tag

        def counting(signer, frames):
            self.count += 1
            return original(signer, frames)
        monkeypatch.setattr(Signer, 'tag', counting)


def _flood_frames(frames=20, frame_bytes=64 << 10):
    junk = os.urandom(frame_bytes)
    return [MAGIC, b'{"kind":"heartbeat","id":"x","body":{"session":"s"},"arrays":[]}', b'x' * 32] + [junk] * frames


def test_defect5_a_multi_frame_message_over_the_commanders_bound_is_dropped_before_hashing(monkeypatch):
    context = zmq.Context()
    server = Server(context, '127.0.0.1', 0, _security(), max_message_bytes=256 << 10)
    hashes = _Hashes(monkeypatch)
    try:
        raw = context.socket(zmq.DEALER)
        _security().client(raw)  # a holder of the secret, past the CURVE handshake: bounded by frames and bytes
        raw.connect(server.address)
        raw.send_multipart(_flood_frames(frames=20, frame_bytes=64 << 10))  # every frame under the bound, not all
        raw.send_multipart([MAGIC, b'{}', b'x' * 32] + [b''] * 10_000)  # too many frames
        assert server.recv(2.0) is None
        deadline = time.monotonic() + 5.0
        while sum(server.rejected.counts.values()) < 2 and time.monotonic() < deadline:
            server.recv(0.1)
        assert server.rejected.counts == dict(oversized=2) and hashes.count == 0
        honest = encode('heartbeat', dict(session='s'), signer=Signer(SECRET), schemas=PROTOCOL)
        raw.send_multipart(honest)
        peer, message = server.recv(5.0)
        assert message.kind == 'heartbeat'  # the socket serves on
    finally:
        context.destroy(linger=0)


def test_defect8_a_learners_chunk_socket_takes_no_message_larger_than_a_chunk_of_its_run(tmp_path, monkeypatch):
    from sparring.worker.remote.learner import chunk_bytes_limit
    cfg = helpers._cfg(tmp_path)
    from sparring.worker.run_kind import run_kind
    from sparring.config.registry import POLICY_REGISTRY
    from sparring.policy.chunk_spec import ChunkSpaces
    observation_space, action_space = run_kind(cfg).spaces()
    policy = POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, observation_space, action_space, seed=0)
    limit = chunk_bytes_limit(cfg, policy.chunk_spec(ChunkSpaces(observation_space, action_space, battle=True)))
    assert limit < 8 << 20  # a few MB for this small game, not the 1 GB of parallel.max_message_mb
    context = zmq.Context()
    puller = DataPuller(context, '127.0.0.1', _security(), 'learner', max_message_bytes=limit)
    pusher = DataPusher(context, puller.address, _security(), 'collector-0')
    hashes = _Hashes(monkeypatch)
    try:
        # a real chunk of this run gets in; a flood of frames each under the bound, together over it, does not
        T, B = cfg.policy.collect.n_steps, 2 * cfg.env.collector_env_num
        obs = np.zeros((T, B, *observation_space.shape), observation_space.dtype)
        chunk = dict(obs=obs, action=np.zeros((T, B), np.int64), log_prob=np.zeros((T, B), np.float32),
                     value=np.zeros((T, B), np.float32), reward=np.zeros((T, B), np.float32),
                     terminated=np.zeros((T, B), bool), truncated=np.zeros((T, B), bool),
                     next_value=np.zeros((T, B), np.float32))
        raw = context.socket(zmq.PUSH)
        _security().client(raw)  # a holder of the secret, past the CURVE handshake
        raw.connect(puller.address)
        raw.send_multipart(_flood_frames(frames=2 * limit // (1 << 20) + 2, frame_bytes=1 << 20))
        deadline = time.monotonic() + 10.0
        while not puller.rejected.counts and time.monotonic() < deadline:
            assert puller.recv(0.1) is None
        assert pusher.send('chunk', dict(chunk_id='c1', player_id='p', version=0, env_steps=T * B // 2), chunk, 5.0)
        message = puller.recv(5.0)
        assert message is not None and message.body['chunk_id'] == 'c1'
        assert puller.rejected.counts == dict(oversized=1) and hashes.count == 2  # the chunk's, signed and checked
    finally:
        context.destroy(linger=0)


# -- defect 6: validly signed out-of-range numbers ---------------------------------------------------------

@pytest.mark.parametrize('kind, body, header, match', [
    ('goodbye', dict(session='s'), dict(time=10 ** 400), 'time'),  # OverflowError in float() before
    ('chunk_report', dict(session='s', task_id=None, chunk_id='c', player_id='p', version=0, env_steps=2 ** 63,
                          results=[]), {}, 'env_steps'),
    ('publish', dict(session='s', player_id='p', version=2 ** 64, train_iteration=0, final=False,
                     chunks_consumed=0), {}, 'version'),
    ('heartbeat', dict(session='s', stats=dict(queued=2 ** 64)), {}, 'stats'),
    ('chunk_report', dict(session='s', task_id=None, chunk_id='c', player_id='p', version=0, env_steps=4,
                          results=[[2 ** 70, 'win']]), {}, 'results'),
])
def test_defect6_out_of_range_numbers_are_bad_messages_not_crashes(kind, body, header, match):
    with pytest.raises(MessageError, match=match) as err:
        _decode(_forged(kind, body, **header))
    assert err.value.reason in ('malformed', 'schema')


def test_defect6_the_tick_never_dies_of_a_figure_the_log_refuses(tmp_path):
    commander, clock, learners = start(tmp_path)

    class RefusingLogger:
        lines = []

        def line(self, text):
            self.lines.append(text)

        def scalars(self, values, step, prefix=''):
            raise ValueError('Value out of range')  # as TensorBoard said of a step of 2**63

        def progress(self, env_steps):
            pass

    commander.logger = commander.report.logger = RefusingLogger()
    clock.now += commander.report.every_seconds + 1
    commander.report.every_seconds = 1.0
    commander.tick()
    assert any('Value out of range' in line for line in RefusingLogger.lines)
    commander.tick()  # and again: the run goes on


# -- defect 7: parameters unlike the player's -----------------------------------------------------------------

def test_defect7_nan_or_misshapen_parameters_are_refused_and_counted(tmp_path):
    commander, clock, learners = start(tmp_path)
    pid = commander.coordinator.player_ids[0]
    good = params_to_arrays(commander.coordinator.store.get('init')['params'])
    name = next(n for n, a in good.items() if a.dtype.kind == 'f' and a.ndim == 2)
    nan = dict(good, **{name: np.full_like(good[name], np.nan)})
    shape = dict(good, **{name: np.zeros((good[name].shape[0] + 1, good[name].shape[1]), good[name].dtype)})
    dtype = dict(good, **{name: good[name].astype(np.float64)})
    missing = {n: a for n, a in good.items() if n != name}
    for number, arrays in enumerate((nan, shape, dtype, missing), start=10):
        kind, body, _ = commander.handle(req('publish', session=learners[pid], request_number=number, player_id=pid,
                                             version=number, train_iteration=number, final=False, chunks_consumed=0,
                                             endpoint='tcp://elsewhere:1', _arrays=arrays))
        assert kind == 'error' and 'refused' in body['error'], body
    assert commander.coordinator.counters['params_refused'] == 4
    assert commander.sessions.workers[learners[pid]].endpoint != 'tcp://elsewhere:1'  # nothing of a refused publish is taken
    assert commander.live[pid].version == 0 and commander.coordinator.players[pid].version == 0  # the first good ones stay
    kind, _, _ = commander.handle(req('publish', session=learners[pid], request_number=20, player_id=pid, version=1,
                                      train_iteration=1, final=False, chunks_consumed=0, _arrays=good))
    assert kind == 'ack' and commander.live[pid].version == 1


# -- defect 9: replays across a commander restart ----------------------------------------------------------

def test_defect9_a_register_captured_before_a_commander_restart_is_refused_after_it(tmp_path):
    commander, clock, learners = start(tmp_path)
    pid = commander.coordinator.player_ids[0]
    old_session = uuid.uuid4().hex
    register = req('register', role='collector', worker_id='collector-0', session=old_session, pid=1, host='here')
    jobs = req('jobs', session=old_session, request_number=1, player_id=pid, count=2)
    assert commander.handle(register)[0] == 'registered' and commander.handle(jobs)[0] == 'job_batch'
    commander.save()
    commander.close()  # killed: what follows is a resumed commander with an empty replay window

    resumed = helpers.Commander(commander.cfg, resume=True, clock=helpers.Clock())
    live, _ = join(resumed, 'collector', worker_id='collector-0')
    entries = len(resumed.state.journal.read())
    kind, body, _ = resumed.handle(register)  # played back
    assert kind == 'error' and body['reason'] == 'replayed', body
    assert live in resumed.sessions.workers  # the live collector stays
    kind, body, _ = resumed.handle(jobs)
    assert kind == 'error' and body['reason'] == 'session'
    assert len(resumed.state.journal.read()) == entries  # nothing journaled again
    resumed.close()


# -- defect 13: a worker whose clock is far off is told so --------------------------------------------------

def test_defect13_a_worker_with_a_clock_far_ahead_is_told_to_check_the_clocks(monkeypatch):
    from sparring.worker.remote import wire
    from sparring.worker.remote.base import CommanderLost, Worker
    context = zmq.Context()
    server = Server(context, '127.0.0.1', 0, _security())
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            server.recv(0.05)  # refuses everything here: the messages are dated 700 s ahead

    thread = threading.Thread(target=serve)
    thread.start()

    class AheadClock:
        @staticmethod
        def time():
            return time.time() + 700.0

    monkeypatch.setattr(wire, 'time', AheadClock)
    worker = Worker(server.address, _security(), worker_id='collector-0', timeout=5.0)
    try:
        with pytest.raises(CommanderLost, match='700 s ahead.*synchronise the clocks') as lost:
            worker.register()
        assert 'shared secret' not in str(lost.value)
        assert server.rejected.counts == dict(stale=1)
    finally:
        stop.set()
        thread.join()
        worker.client.close()
        worker.context.destroy(linger=0)
        context.destroy(linger=0)


def test_defect13_stale_messages_are_named_in_the_commanders_log(tmp_path):
    commander, clock, learners = start(tmp_path)
    said = []
    commander.report.say = said.append
    commander.report.transport_rejects = lambda: dict(stale=3)
    commander.tick()
    commander.tick()  # said once, not every tick
    assert len([line for line in said if 'clock' in line]) == 1 and '3 signed message(s)' in said[0]
