"""ZeroMQ messaging: frames round-trip without copies or pickles, bad frames and unsigned peers are refused."""
import json
import threading
import time

import numpy as np
import pytest
import zmq

from sparring.framework.messaging import Security, decode, encode, make_security
from sparring.worker.remote.protocol import PROTOCOL
from sparring.worker.remote.transport import AUTH_REFUSED, DataPuller, DataPusher, RequestClient, Server
from sparring.worker.remote.security import check_bind, create_curve_keys
from sparring.worker.remote.peer_guards import ReplayGuard
from sparring.worker.remote.wire import MAGIC, Message, MessageError, RequestTimeout, Signer, load_secret

SECRET = b'0123456789abcdef0123456789abcdef'


def _chunk_arrays(T=4, B=3):
    rng = np.random.default_rng(0)
    return dict(obs=rng.normal(size=(T, B, 5)).astype(np.float32), action=rng.integers(0, 3, (T, B)),
                log_prob=np.zeros((T, B), np.float32), value=np.zeros((T, B), np.float32),
                reward=np.ones((T, B), np.float32), terminated=np.zeros((T, B), bool),
                truncated=np.zeros((T, B), bool), next_value=np.zeros((T, B), np.float32))


CHUNK_BODY = dict(chunk_id='c1', player_id='p', version=3, env_steps=12)


def test_arrays_round_trip_as_views_of_the_frames():
    arrays = _chunk_arrays(T=64, B=64)  # obs: 80 kB, the other arrays a few kB each
    signer = Signer(SECRET)
    frames = encode('chunk', CHUNK_BODY, arrays, signer=signer, sender='collector-0')
    # magic, header, signature, the small arrays packed together, obs in a frame of its own, not copied
    assert len(frames) == 5
    assert np.shares_memory(np.frombuffer(frames[4], dtype=np.float32), arrays['obs'])
    message = decode([bytes(f) for f in frames], signer=signer)
    assert message.kind == 'chunk' and message.body == CHUNK_BODY and message.sender == 'collector-0'
    for name, array in arrays.items():
        np.testing.assert_array_equal(message.arrays[name], array)
        assert message.arrays[name].dtype == array.dtype
    assert not message.arrays['obs'].flags.writeable  # a view of the received bytes


def test_every_changed_byte_or_a_missing_key_is_refused():
    frames = [bytes(f) for f in encode('chunk', CHUNK_BODY, _chunk_arrays(), signer=Signer(SECRET))]
    tampered = list(frames)
    tampered[3] = bytes([tampered[3][0] ^ 1]) + tampered[3][1:]
    with pytest.raises(MessageError, match='bad signature') as err:
        decode(tampered, signer=Signer(SECRET))
    assert err.value.reason == 'unauthenticated'
    with pytest.raises(MessageError, match='bad signature'):
        decode(frames, signer=Signer(b'another secret, also 32 bytes!!'))
    unsigned = [bytes(f) for f in encode('chunk', CHUNK_BODY, _chunk_arrays(), signer=Signer(None))]
    with pytest.raises(MessageError, match='not signed'):
        decode(unsigned, signer=Signer(SECRET))


@pytest.mark.parametrize('frames, match', [
    ([b'hello'], 'at least 3'),
    ([b'XXXX', b'{}', b''], 'bad magic'),
    ([MAGIC, b'\xff\xfe not json', b''], 'not UTF-8 JSON'),
    ([MAGIC, b'[1, 2]', b''], 'must be an object'),
    ([MAGIC, json.dumps(dict(kind='rm -rf', body={}, arrays=[])).encode(), b''], 'unknown message kind'),
    ([MAGIC, json.dumps(dict(kind='chunk', body=CHUNK_BODY, arrays=[['obs', '|O', [1]]])).encode(), b'', b'12345678'],
     'only bool, integer and float'),
    ([MAGIC, json.dumps(dict(kind='chunk', body=CHUNK_BODY, arrays=[['obs', '<f4', [4]]])).encode(), b'', b'123'],
     'needs 16 bytes'),
    ([MAGIC, json.dumps(dict(kind='chunk', body=CHUNK_BODY, packed=2, arrays=[['a', '<f4', [1]], ['b', '|b1', [2]]])
                        ).encode(), b'', b'12345678'], 'packed arrays need 16 bytes'),
    ([MAGIC, json.dumps(dict(kind='chunk', body=CHUNK_BODY, packed=3, arrays=[['a', '<f4', [1]]])).encode(), b''],
     '3 packed'),
    ([MAGIC, json.dumps(dict(kind='goodbye', body={}, arrays=[])).encode(), b''], "missing field 'session'"),
    ([MAGIC, json.dumps(dict(kind='goodbye', body=dict(session=1), arrays=[])).encode(), b''], 'must be str'),
    ([MAGIC, json.dumps(dict(kind='goodbye', body=dict(session='s', x=1), arrays=[])).encode(), b''],
     "unknown field"),
])
def test_malformed_frames_raise_a_message_error_naming_the_problem(frames, match):
    with pytest.raises(MessageError, match=match):
        decode(frames, signer=Signer(None))


def test_a_chunk_without_its_required_arrays_breaks_the_schema():
    arrays = _chunk_arrays()
    del arrays['reward']
    with pytest.raises(MessageError, match="missing arrays \\['reward'\\]"):
        encode('chunk', CHUNK_BODY, arrays, signer=Signer(None))
    results = dict(session='s', task_id=1, chunk_id='c', player_id='p', version=0, env_steps=1,
                   results=[[3, 'victory']])
    with pytest.raises(MessageError, match='job_id'):
        encode('chunk_report', results, signer=Signer(None))
    assert set(PROTOCOL) >= {'register', 'heartbeat', 'chunk_report', 'publish', 'params', 'chunk'}


def test_replayed_or_old_messages_are_refused():
    guard = ReplayGuard(window=60)
    message = decode(encode('goodbye', dict(session='s'), signer=Signer(SECRET)), signer=Signer(SECRET))
    guard.check(message)
    with pytest.raises(MessageError, match='already received'):
        guard.check(message)
    message.id, message.time = 'other', time.time() - 3600
    with pytest.raises(MessageError, match='old'):
        guard.check(message)


def test_secret_from_environment_or_key_file(tmp_path, monkeypatch):
    monkeypatch.delenv('SPARRING_SECRET', raising=False)
    assert load_secret(None) is None
    key = tmp_path / 'key'
    key.write_text('a-long-enough-shared-secret\n')
    key.chmod(0o600)
    assert load_secret(str(key)) == b'a-long-enough-shared-secret'
    monkeypatch.setenv('SPARRING_SECRET', 'short')
    with pytest.raises(ValueError, match='at least 16 bytes'):
        load_secret(str(key))
    with pytest.raises(ValueError, match='needs a shared secret'):
        monkeypatch.delenv('SPARRING_SECRET')
        make_security('hmac')
    with pytest.raises(ValueError, match='accepts connections from other machines'):
        check_bind('0.0.0.0', secured=False)
    check_bind('127.0.0.1', secured=False)


def _serve(server, stop, answered):
    while not stop.is_set():
        got = server.recv(0.05)
        if got is not None:
            peer, message = got
            answered.append(message.kind)
            server.reply(peer, message.id, 'ack', dict(state='run'))


def test_server_answers_signed_requests_and_drops_others_while_it_keeps_serving():
    context = zmq.Context()
    security = Security(Signer(SECRET))
    server = Server(context, '127.0.0.1', 0, security)
    stop, answered = threading.Event(), []
    thread = threading.Thread(target=_serve, args=(server, stop, answered))
    thread.start()
    try:
        intruder = RequestClient(context, server.address, Security(Signer(b'not the secret, but long enough')),
                                 'intruder', timeout=5.0)
        started = time.monotonic()
        with pytest.raises(MessageError, match='shared secret') as refused:  # told at once, not after 5 s
            intruder.request('heartbeat', dict(session='x'))
        assert refused.value.reason == 'unauthenticated' and time.monotonic() - started < 2.0
        intruder.close()  # its handshakes fail, again and again, while it stays
        raw = context.socket(zmq.DEALER)
        security.client(raw)  # a holder of the secret (CURVE keys derived from it) sending what it likes
        raw.connect(server.address)
        raw.send_multipart([b'garbage'])  # malformed
        bad_header = b'{"kind": "heartbeat"'
        raw.send_multipart([MAGIC, bad_header, security.signer.tag([MAGIC, bad_header])])  # signed, malformed
        raw.send_multipart([MAGIC, b'{}', b'x' * 32])  # a forged signature
        friend = RequestClient(context, server.address, security, 'friend', timeout=5.0)
        reply = friend.request('heartbeat', dict(session='s', stats=dict(a=1.0)))
        assert reply.kind == 'ack' and answered == ['heartbeat']
        # an authenticated peer that breaks a kind's schema is told why
        header = json.dumps(dict(kind='heartbeat', id='q1', body=dict(sesion='s'), arrays=[])).encode()
        raw.send_multipart([MAGIC, header, security.signer.tag([MAGIC, header])])
        assert raw.poll(5000) and raw.recv_multipart() == [MAGIC, AUTH_REFUSED]  # for the forged signature
        assert raw.poll(5000)
        error = decode(raw.recv_multipart(), signer=security.signer)
        assert error.kind == 'error' and error.reply_to == 'q1' and "unknown field(s) 'sesion'" in error.body['error']
        assert answered == ['heartbeat']
        counts = server.rejected.counts
        assert counts['unauthenticated'] >= 2 and (counts['malformed'], counts['schema']) == (2, 1)  # handshakes too
    finally:
        stop.set()
        thread.join()
        context.destroy(linger=0)


def test_push_blocks_when_the_pulling_side_is_full():
    context = zmq.Context()
    security = Security(Signer(SECRET))
    puller = DataPuller(context, '127.0.0.1', security, 'learner', queue=1)
    pusher = DataPusher(context, puller.address, security, 'collector', queue=1, linger_seconds=0)
    arrays = _chunk_arrays(T=64, B=64)
    try:
        sent = 0
        while pusher.send('chunk', dict(CHUNK_BODY, chunk_id=str(sent)), arrays, timeout=0.5):
            sent += 1
            assert sent < 50, 'the bounded queues never pushed back'
        received = [puller.recv(1.0) for _ in range(sent)]
        assert [m.body['chunk_id'] for m in received] == [str(i) for i in range(sent)]
        assert pusher.send('chunk', dict(CHUNK_BODY, chunk_id='again'), arrays, timeout=1.0)
        assert puller.recv(1.0).body['chunk_id'] == 'again'
    finally:
        context.destroy(linger=0)


@pytest.mark.skipif(not zmq.has('curve'), reason='libzmq without CURVE')
def test_curve_lets_only_authorised_keys_in(tmp_path):
    from sparring.worker.remote.security import CurveGuard
    keys = create_curve_keys(str(tmp_path / 'keys'))
    context = zmq.Context()
    guard = CurveGuard(context, keys)
    security = Security(Signer(None), curve_dir=keys)
    server = Server(context, '127.0.0.1', 0, security)
    stop, answered = threading.Event(), []
    thread = threading.Thread(target=_serve, args=(server, stop, answered))
    thread.start()
    try:
        friend = RequestClient(context, server.address, security, 'friend', timeout=5.0)
        assert friend.request('heartbeat', dict(session='s')).kind == 'ack'
        plain = RequestClient(context, server.address, Security(Signer(None)), 'plain', timeout=0.5)
        with pytest.raises(RequestTimeout):
            plain.request('heartbeat', dict(session='s'))
    finally:
        stop.set()
        thread.join()
        guard.stop()
        context.destroy(linger=0)


def _worker_facing(server_address, worker_timeout):
    from easydict import EasyDict
    from sparring.worker.remote.base import Worker
    worker = Worker(server_address, Security(Signer(SECRET)), worker_id='collector-0', timeout=5.0)
    worker.par = EasyDict(worker_timeout_seconds=worker_timeout, request_timeout_seconds=30.0)
    return worker


class _Commander:
    """A commander on a thread that answers only the requests whose number (from 1) ``answers`` holds."""

    def __init__(self, answers):
        self.context = zmq.Context()
        self.server = Server(self.context, '127.0.0.1', 0, Security(Signer(SECRET)))
        self.seen, self.answers, self.stop = [], answers, threading.Event()
        self.thread = threading.Thread(target=self._serve)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            got = self.server.recv(0.05)
            if got is not None:
                self.seen.append(got[1])
                if len(self.seen) in self.answers:
                    self.server.reply(got[0], got[1].id, 'ack', dict(state='run'))

    def close(self):
        self.stop.set()
        self.thread.join()
        self.context.destroy(linger=0)


class _LossyLink:
    """A worker's request client over a link that loses the replies to the attempts not in ``answered`` (counted
    from 1): a lost one costs its whole wait on the test's clock, an answered one no time. No socket, no sleep."""

    def __init__(self, answered):
        self.answered, self.now, self.sent, self.waits = answered, 100.0, [], []

    def clock(self) -> float:
        return self.now

    def request(self, kind, body, arrays=None, timeout=None):
        self.sent.append((kind, body))
        self.waits.append(timeout)
        if len(self.sent) not in self.answered:
            self.now += timeout
            raise RequestTimeout(f'no reply to {kind!r} within {timeout} s')
        return Message('ack', dict(state='run'), {}, id='r', sender='commander', time=0.0)

    def close(self):
        pass


def test_a_lost_reply_costs_the_worker_a_resend_not_its_life():
    from easydict import EasyDict
    from sparring.worker.remote.base import FIRST_ATTEMPT_SECONDS, CommanderLost, Worker
    link = _LossyLink(answered=range(2, 1000))  # the first answer is lost on the way
    worker = Worker('tcp://127.0.0.1:1', Security(Signer(SECRET)), worker_id='collector-0', clock=link.clock)
    try:
        worker.client.close()
        worker.client = link
        worker.par = EasyDict(worker_timeout_seconds=30.0, request_timeout_seconds=30.0)  # no shorter than a request
        started, worker.last_contact = link.now, 0.0
        reply = worker.request('collect_task')
        assert reply.kind == 'ack' and worker.resends == 1 and not worker.lost
        assert link.waits == [FIRST_ATTEMPT_SECONDS, 2 * FIRST_ATTEMPT_SECONDS]  # each attempt waits twice as long
        assert worker.last_contact == started + FIRST_ATTEMPT_SECONDS  # an answer counts as contact
        # the same request again, under the same number, so the commander can answer it as the first time
        assert link.sent == [('collect_task', dict(session=worker.session, request_number=1))] * 2
        # a commander that answers nothing: the worker gives up after worker_timeout_seconds, resending meanwhile
        link.answered, link.sent, link.waits = (), [], []
        worker.par.worker_timeout_seconds = 2.5
        started = link.now
        with pytest.raises(CommanderLost, match="no answer to 'collect_task'.* for 2 s"):
            worker.request('collect_task')
        assert link.waits == [FIRST_ATTEMPT_SECONDS, 2.5 - FIRST_ATTEMPT_SECONDS]  # the last wait ends at the timeout
        assert link.now == started + 2.5 and worker.resends == 1 + 2 and worker.lost
        assert [body['request_number'] for _, body in link.sent] == [2, 2]
    finally:
        worker.context.destroy(linger=0)


def test_a_request_is_asked_again_past_the_worker_timeout_while_heartbeats_say_the_commander_lives(monkeypatch):
    from sparring.worker.remote import base
    monkeypatch.setattr(base, 'FIRST_ATTEMPT_SECONDS', 0.5)
    commander = _Commander(answers={3})  # as a commander busy for a while, or a large reply on a slow link
    worker = _worker_facing(commander.server.address, worker_timeout=1.0)

    def heartbeats_answered():
        while not commander.stop.is_set():
            worker.last_contact = time.monotonic()
            time.sleep(0.1)

    heartbeats = threading.Thread(target=heartbeats_answered)
    heartbeats.start()
    try:
        started = time.monotonic()
        assert worker.request('jobs', dict(player_id='p', count=2)).kind == 'ack'
        # two attempts unanswered (0.5 s, then about 1 s): past the worker timeout, yet not given up
        assert time.monotonic() - started > 1.0 and worker.resends == 2
        assert [m.kind for m in commander.seen] == ['jobs'] * 3
        assert [m.body['request_number'] for m in commander.seen] == [1, 1, 1]
    finally:
        commander.close()
        heartbeats.join()
        worker.client.close()
        worker.context.destroy(linger=0)
