"""Trust boundaries (issue #28), defects 5, 8 and 13: with a shared secret every socket runs ZeroMQ CURVE with keys
derived from it, so a peer without the secret cannot make a commander or a learner buffer anything; a worker whose
clock is far off the commander's is told by how much."""
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import zmq

from sparring.worker.remote.protocol import PROTOCOL
from sparring.worker.remote.transport import DataPuller, DataPusher, RequestClient, Server, send_frames
from sparring.worker.remote.security import Security, ZapGuard, derived_curve_keys
from sparring.worker.remote.wire import MessageError, RequestTimeout, Signer
from tests.scripts import load_script

SECRET = b'a shared secret of at least 16 bytes'
pytestmark = pytest.mark.skipif(not zmq.has('curve'), reason='libzmq without CURVE')

# A peer without the secret, in a process of its own: ``connections`` sockets each sending messages of ``frames``
# frames of 2 MB (one buffer, sent without copies) until ``total_mb`` are handed to ZeroMQ (or 5 s passed); then it
# lingers a little for what it sent to arrive, and prints how many MB it handed over.
FLOODER = '''
import sys, time, zmq
address, kind, connections, frames, total_mb = sys.argv[1], getattr(zmq, sys.argv[2]), *map(int, sys.argv[3:])
context = zmq.Context()
sockets = []
for _ in range(connections):
    s = context.socket(kind)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(address)
    sockets.append(s)
frame = b'x' * (2 << 20)
sent, give_up = 0, time.monotonic() + 5  # without the secret, ZeroMQ soon stops taking more
while sent < total_mb and time.monotonic() < give_up:
    for s in sockets:
        try:
            s.send_multipart([b'SPR1'] + [frame] * frames, zmq.NOBLOCK, copy=False)
            sent += 2 * frames
        except zmq.Again:
            time.sleep(0.01)
time.sleep(2.0)
print(sent)
'''


def _security(secret=SECRET):
    return Security(Signer(secret), protocol=PROTOCOL)


def _rss_mb() -> float:
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def _flood_peak_growth(listener, kind: str, receive) -> tuple:
    """(MB the flooder handed over, the listener's peak RSS growth in MB) for an unauthenticated flood of 400 MB
    in messages of 100 frames, while ``receive`` serves the listener."""
    base, peak, stop = _rss_mb(), [0.0], threading.Event()

    def serve():
        while not stop.is_set():
            receive(0.02)
            peak[0] = max(peak[0], _rss_mb())  # sampled between reads: what ZeroMQ buffered shows here

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        flooder = subprocess.run([sys.executable, '-c', FLOODER, listener.address, kind, '2', '100', '400'],
                                 capture_output=True, text=True, timeout=120)
    finally:
        stop.set()
        thread.join()
    assert flooder.returncode == 0, flooder.stderr
    return int(flooder.stdout.split()[-1]), peak[0] - base


def test_derived_keys_are_the_same_for_one_secret_and_differ_between_secrets():
    one, again, other = derived_curve_keys(SECRET), derived_curve_keys(SECRET), derived_curve_keys(b'x' * 32)
    assert one == again and one.server_public != other.server_public and one.client_public != other.client_public
    assert zmq.curve_public(one.server_secret) == one.server_public and one.admitted == {one.client_public}
    assert one.server_public != one.client_public


def test_defect5_an_unauthenticated_multi_frame_flood_leaves_the_commanders_memory_flat():
    context = zmq.Context()
    # configured as ParallelRun configures the commander's socket: a few requests per peer, small headers
    server = Server(context, '127.0.0.1', 0, _security(), max_message_bytes=8 << 20, queue=4,
                    max_header_bytes=256 << 10)
    try:
        handed_over, growth = _flood_peak_growth(server, 'DEALER', server.recv)
        assert growth < 100, f'commander RSS grew {growth:.0f} MB while a flooder handed over {handed_over} MB'
        assert server.rejected.counts.get('unauthenticated', 0) >= 1  # refused at the handshake, and counted
        friend = RequestClient(context, server.address, _security(), 'friend', timeout=5.0)
        friend.socket.send_multipart([b'x'])  # a holder of the secret gets through the handshake: it is read
        deadline = time.monotonic() + 5.0
        while 'malformed' not in server.rejected.counts and time.monotonic() < deadline:
            server.recv(0.1)
        assert server.rejected.counts.get('malformed') == 1
    finally:
        context.destroy(linger=0)


def test_defect8_an_unauthenticated_multi_frame_flood_leaves_the_learners_memory_flat():
    context = zmq.Context()
    puller = DataPuller(context, '127.0.0.1', _security(), 'learner', queue=4, max_message_bytes=8 << 20,
                        max_header_bytes=256 << 10)
    try:
        handed_over, growth = _flood_peak_growth(puller, 'PUSH', puller.recv)
        assert growth < 100, f'learner RSS grew {growth:.0f} MB while a flooder handed over {handed_over} MB'
        assert puller.rejected.counts.get('unauthenticated', 0) >= 1
        # the collectors, holding the secret, still deliver
        pusher = DataPusher(context, puller.address, _security(), 'collector-0')
        arrays = dict(obs=np.zeros((4, 2, 3), np.float32), action=np.zeros((4, 2), np.int64),
                      log_prob=np.zeros((4, 2), np.float32), value=np.zeros((4, 2), np.float32),
                      reward=np.zeros((4, 2), np.float32), terminated=np.zeros((4, 2), bool),
                      truncated=np.zeros((4, 2), bool), next_value=np.zeros((4, 2), np.float32))
        assert pusher.send('chunk', dict(chunk_id='c1', player_id='p', version=0, env_steps=8), arrays, 5.0)
        message = puller.recv(5.0)
        assert message is not None and message.body['chunk_id'] == 'c1'
    finally:
        context.destroy(linger=0)


def test_a_worker_with_another_secret_is_told_at_once_and_a_stolen_server_key_is_not_enough():
    context = zmq.Context()
    server = Server(context, '127.0.0.1', 0, _security())
    try:
        stranger = RequestClient(context, server.address, _security(b'another secret, 16 bytes or more'), 's',
                                 timeout=10.0)
        started = time.monotonic()
        with pytest.raises(MessageError, match='refused the CURVE handshake.*shared secret') as refused:
            stranger.request('heartbeat', dict(session='x'))
        assert refused.value.reason == 'unauthenticated' and time.monotonic() - started < 5.0
        # the server's public key alone (leaked, say) does not get a client in: the handler admits only the
        # client key derived from the secret
        thief = context.socket(zmq.DEALER)
        thief.linger = 0
        thief.curve_serverkey = derived_curve_keys(SECRET).server_public
        thief.curve_publickey, thief.curve_secretkey = zmq.curve_keypair()
        thief.connect(server.address)
        thief.send_multipart([b'x'])
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            assert server.recv(0.1) is None
        assert 'malformed' not in server.rejected.counts  # its message never reached the reader
    finally:
        context.destroy(linger=0)


def test_listeners_of_one_context_share_one_handler_stopped_with_the_last():
    context = zmq.Context()
    try:
        first = Server(context, '127.0.0.1', 0, _security())
        second = DataPuller(context, '127.0.0.1', _security(b'a second secret, of 16 bytes too'), 'learner')
        guard = ZapGuard._by_context[id(context)]
        assert guard.users == 2 and sum(1 for n in guard.admitted.values() if n > 0) == 2
        first.close()
        assert guard.users == 1 and guard._thread.is_alive()
        pusher = DataPusher(context, second.address, _security(b'a second secret, of 16 bytes too'), 'c')
        pusher.socket.send(b'x')  # reaches the reader: the second secret's client key is still admitted
        deadline = time.monotonic() + 5.0
        while not second.rejected.counts and time.monotonic() < deadline:
            second.recv(0.1)
        assert second.rejected.counts == dict(malformed=1)
        second.close()
        assert not guard._thread.is_alive() and id(context) not in ZapGuard._by_context
    finally:
        context.destroy(linger=0)


def test_a_context_destroyed_before_its_listeners_close_ends_the_handler_thread():
    context = zmq.Context()
    server = Server(context, '127.0.0.1', 0, _security())
    guard = ZapGuard._by_context[id(context)]
    context.destroy(linger=0)  # must not hang on the handler's socket
    guard._thread.join(5.0)
    assert not guard._thread.is_alive() and server.socket.closed


# -- defect 13: a worker whose clock is far off is told by how much -------------------------------------------

def test_defect13_a_worker_refused_for_its_clock_says_how_far_off_the_commanders_clock_is():
    from sparring.worker.remote.base import CommanderLost, Worker
    from sparring.worker.remote.wire import MAGIC
    import json
    context = zmq.Context()
    server = Server(context, '127.0.0.1', 0, _security())
    stop = threading.Event()

    def serve():  # a commander whose clock is 700 s behind: it refuses the worker's messages as too new
        while not stop.is_set():
            got = server.recv(0.05)
            if got is not None:
                peer, message = got
                header = json.dumps(dict(kind='error', id='e1', time=time.time() - 700, sender='commander',
                                         reply_to=message.id, arrays=[], packed=0, body=dict(
                                             reason='stale', error='register message dated 700 s ahead'))).encode()
                send_frames(server.socket, [peer, MAGIC, header, Signer(SECRET).tag([MAGIC, header])])

    thread = threading.Thread(target=serve)
    thread.start()
    worker = Worker(server.address, _security(), worker_id='collector-0', timeout=5.0)
    try:
        with pytest.raises(CommanderLost, match=r"the commander's messages are 700 s behind this machine's clock "
                                                r"\(clock skew\)") as lost:
            worker.register()
        assert 'shared secret' not in str(lost.value) and 'CURVE' not in str(lost.value)
        assert worker.client.rejected.counts == dict(stale=1)
    finally:
        stop.set()
        thread.join()
        worker.close()
        context.destroy(linger=0)


def test_defect13_the_commander_writes_the_clock_skew_line_to_its_log_file(tmp_path):
    import os
    from sparring.framework.commander import Commander
    from sparring.worker.logger import RunLogger
    helpers = load_script('tests/framework/test_parallel_commander.py', 'commander_helpers')
    cfg = helpers._cfg(tmp_path)
    logger = RunLogger(cfg.exp_name, cfg.train.max_env_steps, False, False)
    commander = Commander(cfg, clock=helpers.Clock(), logger=logger)
    try:
        commander.report.transport_rejects = lambda: dict(stale=2)
        commander.tick()
    finally:
        commander.close()
        logger.close()
    text = open(os.path.join(cfg.exp_name, 'log.txt')).read()
    assert 'clock skew: 2 signed message(s) refused' in text and 'synchronise the clocks' in text


def test_a_request_to_nobody_still_times_out():
    context = zmq.Context()
    try:
        client = RequestClient(context, 'tcp://127.0.0.1:9', _security(), 'c', timeout=0.3)
        with pytest.raises(RequestTimeout):
            client.request('heartbeat', dict(session='s'))
    finally:
        context.destroy(linger=0)


def test_a_process_says_how_its_sockets_authenticate(tmp_path):
    from sparring.worker.remote.security import create_curve_keys
    assert Security(Signer(b's' * 32)).describe() == 'HMAC signatures and CURVE keys derived from the secret'
    assert Security(Signer(None)).describe() == 'no authentication'
    keys = create_curve_keys(str(tmp_path / 'keys'))
    assert Security(Signer(None), keys).describe() == f'CURVE keys from {keys}'
