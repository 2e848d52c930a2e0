"""Parallel mode under abuse: lost chunks give their credit back, hostile headers are dropped, not fatal."""
import json
import os

import numpy as np
import pytest

from sparring.framework.commander import Commander
from sparring.framework.messaging import decode
from sparring.worker.remote.wire import MAGIC, MessageError, Signer
from tests.scripts import load_script

SECRET = b'a shared secret of at least 16 bytes'

helpers = load_script('tests/framework/test_parallel_commander.py', 'commander_helpers')
Clock, join, publish, report, req, start = (helpers.Clock, helpers.join, helpers.publish, helpers.report,
                                            helpers.req, helpers.start)


def _one_player(tmp_path):
    commander, clock, learners = start(tmp_path, active_players=dict(naive_sp=1))
    pid = commander.coordinator.player_ids[0]
    collectors = [join(commander, 'collector')[0] for _ in range(3)]
    assert commander.collect.max_ahead == 2
    return commander, clock, learners[pid], pid, collectors


def _task(commander, session):
    return commander.handle(req('collect_task', session=session))


def _heartbeat(commander, session, **body):
    return commander.handle(req('heartbeat', session=session, **body))


def test_a_chunk_whose_collector_died_gives_its_credit_back(tmp_path):
    commander, clock, learner, pid, (a, b, c) = _one_player(tmp_path)
    first, second = _task(commander, a), _task(commander, b)
    report(commander, a, pid, [], chunk_id='lost', task_id=first[1]['task_id'])
    report(commander, b, pid, [], chunk_id='kept', task_id=second[1]['task_id'])
    assert _task(commander, c)[0] == 'wait'  # two chunks ahead of the learner
    _heartbeat(commander, learner, received=['kept'])  # arrived, still in the learner's queue
    clock.now += 1.0
    _heartbeat(commander, a)
    commander.drop_worker(a, 'process exited with code -9')  # killed while pushing 'lost'
    assert _task(commander, c)[0] == 'wait'  # 'lost' may still be on its way
    clock.now += commander.par.worker_timeout_seconds + 1.0
    _heartbeat(commander, learner)
    _heartbeat(commander, b)
    _heartbeat(commander, c)
    commander.tick()
    assert commander.coordinator.counters['chunks_reclaimed'] == 1 and commander.collect.chunks_ahead(pid) == 1
    assert _task(commander, c)[0] == 'task'  # collection goes on
    assert commander.collect.expected_chunks(pid) == 1  # a draining learner does not wait for 'lost'


def test_a_chunk_overtaken_by_a_later_one_of_its_collector_is_lost(tmp_path):
    commander, _, learner, pid, (a, _, _) = _one_player(tmp_path)
    report(commander, a, pid, [], chunk_id='c1')
    report(commander, a, pid, [], chunk_id='c2')
    _heartbeat(commander, learner, received=['c2'])  # one collector's chunks travel in order
    assert commander.coordinator.counters['chunks_reclaimed'] == 1 and commander.collect.expected_chunks(pid) == 1
    _heartbeat(commander, learner, received=['c1'])  # it arrived after all: its credit is taken again
    assert commander.coordinator.counters['chunks_reclaimed'] == 0 and commander.collect.expected_chunks(pid) == 2


def test_chunks_a_collector_could_not_deliver_are_reclaimed_at_once(tmp_path):
    commander, _, _, pid, (a, _, _) = _one_player(tmp_path)
    report(commander, a, pid, [], chunk_id='c1')
    report(commander, a, pid, [], chunk_id='c2')
    assert commander.handle(req('collect_task', session=a, undelivered=['c1', 'c2']))[0] == 'task'
    assert commander.coordinator.counters['chunks_reclaimed'] == 2 and commander.collect.chunks_ahead(pid) == 0


def test_a_client_that_reports_and_never_pushes_cannot_stop_collection(tmp_path):
    commander, clock, learner, pid, (a, b, c) = _one_player(tmp_path)
    report(commander, a, pid, [], chunk_id='never-1')
    report(commander, a, pid, [], chunk_id='never-2')
    assert _task(commander, c)[0] == 'wait'
    for _ in range(3):  # everyone stays alive; the learner has nothing queued
        clock.now += commander.par.worker_timeout_seconds - 1.0
        for session in (learner, a, b, c):
            _heartbeat(commander, session, stats=dict(queued=0.0))
        commander.tick()
    assert commander.coordinator.counters['chunks_reclaimed'] == 2
    assert _task(commander, c)[0] == 'task'


@pytest.mark.parametrize('header, why', [
    (b'[' * 100_000 + b']' * 100_000, 'nested too deeply'),
    (json.dumps(dict(kind='goodbye', id='x', time=float('nan'), body=dict(session='s'), arrays=[])).encode(),
     'finite'),
    (b'{"kind": "goodbye", "id": "x", "time": 1e999, "body": {"session": "s"}, "arrays": []}', 'finite'),
])
def test_hostile_headers_are_malformed_messages_not_crashes(header, why):
    signer = Signer(SECRET)
    frames = [MAGIC, header, signer.tag([MAGIC, header])]
    with pytest.raises(MessageError, match=why) as err:
        decode(frames, signer=signer)
    assert err.value.reason == 'malformed'


def test_a_schema_error_does_not_echo_a_flood_of_keys():
    signer = Signer(SECRET)
    body = dict(session='s', **{f'key{i}': i for i in range(100_000)})
    header = json.dumps(dict(kind='goodbye', id='x', body=body, arrays=[])).encode()
    with pytest.raises(MessageError) as err:
        decode([MAGIC, header, signer.tag([MAGIC, header])], signer=signer)
    assert len(str(err.value)) < 300 and '99995 more' in str(err.value)


def _played_commander(tmp_path, chunks=3, save_after=None):
    commander, _, learners = start(tmp_path)
    a, _ = join(commander, 'collector')
    pid = commander.coordinator.player_ids[0]
    for i in range(chunks):
        _, batch, _ = commander.handle(req('jobs', session=a, player_id=pid, count=2))
        report(commander, a, pid, [[j['job_id'], 'win'] for j in batch['jobs']])
        if save_after == i:
            commander.save()
    publish(commander, learners[pid], pid, 3, 3)
    return commander


def _journal_lines(commander):
    """The journal's entries, one line each (after its format-version line)."""
    with open(os.path.join(commander.dir, 'journal.jsonl'), 'rb') as f:
        return f.read().split(b'\n')[1:-1]


def _write_journal(commander, lines, tail=b''):
    with open(os.path.join(commander.dir, 'journal.jsonl'), 'rb') as f:
        header = f.readline()
    with open(os.path.join(commander.dir, 'journal.jsonl'), 'wb') as f:
        f.write(header + b''.join(line + b'\n' for line in lines) + tail)


def test_a_torn_last_line_is_cut_before_the_next_entry_is_appended(tmp_path):
    from sparring.framework.journal import Journal
    commander = _played_commander(tmp_path)
    expected = commander.coordinator.league.state_dict()['payoff']
    commander.close()
    lines = _journal_lines(commander)
    _write_journal(commander, lines, tail=b'{"op":"games","chu')  # killed while writing
    resumed = Commander(commander.cfg, resume=True, clock=Clock())
    np.testing.assert_equal(resumed.coordinator.league.state_dict()['payoff'], expected)
    session, _ = join(resumed, 'collector')
    resumed.handle(req('jobs', session=session, player_id=resumed.coordinator.player_ids[0], count=1))  # a new entry
    expected = resumed.coordinator.league.state_dict()['payoff']
    resumed.close()
    journal = Journal(os.path.join(commander.dir, 'journal.jsonl'))
    entries = journal.read()
    assert not journal.missing and [e['seq'] for e in entries] == list(range(1, len(lines) + 2))
    again = Commander(commander.cfg, resume=True, clock=Clock())
    np.testing.assert_equal(again.coordinator.league.state_dict()['payoff'], expected)


def test_a_journal_that_lost_committed_entries_is_refused_with_what_was_lost(tmp_path):
    from sparring.framework.journal import JournalDamaged
    commander = _played_commander(tmp_path)
    commander.close()
    lines = _journal_lines(commander)
    damaged = list(lines)
    damaged[2] = damaged[2][:10] + b'X' + damaged[2][11:]  # a flipped byte in a committed entry
    _write_journal(commander, damaged)
    with pytest.raises(JournalDamaged, match=r'lost 1 committed entry \(sequence numbers 3\)'):
        Commander(commander.cfg, resume=True, clock=Clock())
    _write_journal(commander, lines[:2] + lines[3:])  # a whole entry gone
    with pytest.raises(JournalDamaged, match='sequence numbers 3'):
        Commander(commander.cfg, resume=True, clock=Clock())


def test_damage_a_snapshot_covers_is_not_a_loss(tmp_path):
    commander = _played_commander(tmp_path, save_after=2)
    expected = commander.coordinator.league.state_dict()['payoff']
    commander.close()
    lines = _journal_lines(commander)
    lines[1] = b'garbage'
    _write_journal(commander, lines)
    resumed = Commander(commander.cfg, resume=True, clock=Clock())
    np.testing.assert_equal(resumed.coordinator.league.state_dict()['payoff'], expected)


def test_an_unreadable_state_file_is_rebuilt_from_the_journal(tmp_path):
    commander = _played_commander(tmp_path, save_after=1)
    expected = commander.coordinator.league.state_dict()
    steps, games = commander.coordinator.env_steps, commander.coordinator.counters['games']
    commander.close()
    state = os.path.join(commander.dir, 'state.npz')
    with open(state, 'rb') as f:
        data = f.read()
    with open(state, 'wb') as f:
        f.write(data[:len(data) // 2])  # torn
    with open(os.path.join(commander.dir, '.state.npz.x1.tmp'), 'wb') as f:
        f.write(b'half')
    resumed = Commander(commander.cfg, resume=True, clock=Clock())
    np.testing.assert_equal(resumed.coordinator.league.state_dict()['payoff'], expected['payoff'])
    assert (resumed.coordinator.env_steps, resumed.coordinator.counters['games']) == (steps, games)
    assert not [n for n in os.listdir(commander.dir) if n.endswith('.tmp')]


def test_what_an_unauthenticated_peer_costs_is_bounded():
    """Oversized headers are refused unread, and a peer that keeps failing to authenticate is ignored unhashed."""
    import time

    import zmq

    from sparring.framework.messaging import Security
    from sparring.worker.remote.transport import Server
    context = zmq.Context()
    server = Server(context, '127.0.0.1', 0, Security(Signer(SECRET)), queue=4, max_header_bytes=1024,
                    max_message_bytes=1 << 20)
    try:
        raw = context.socket(zmq.DEALER)
        server.security.client(raw)  # past the CURVE handshake: a peer with the secret, forging signatures
        raw.connect(server.address)
        raw.send_multipart([MAGIC, b'{' + b' ' * 4096 + b'}', b'x' * 32])  # a header no request needs
        for _ in range(6):
            raw.send_multipart([MAGIC, b'{"kind":"goodbye"}', b'x' * 32])  # forged signatures
        raw.send_multipart([MAGIC, b'{}', b'x' * 32, b'z' * (2 << 20)])  # over the size limit: never delivered
        deadline = time.monotonic() + 5
        while sum(server.rejected.counts.values()) < 7 and time.monotonic() < deadline:
            server.recv(0.1)
        counts = server.rejected.counts
        assert counts.get('malformed') == 1 and counts.get('unauthenticated') == 3 and counts.get('blocked') == 3
    finally:
        context.destroy(linger=0)


def test_drop_counts_reach_the_log_and_tensorboard_as_they_happen(tmp_path):
    commander, _, learner, pid, (a, _, _) = _one_player(tmp_path)
    logger = commander.report.logger = helpers.RecordingLogger()
    commander.report.transport_rejects = lambda: {'unauthenticated': 7}
    report(commander, a, pid, [[12345, 'win']])  # an unknown job: refused
    _heartbeat(commander, learner, stats=dict(rejected_schema=2.0))  # chunks its socket refused: not the spec's
    commander.report.log_progress()
    seen = logger.scalars_seen
    assert seen['run/dropped/results_refused'] == 1 and seen['run/dropped/rejected_unauthenticated'] == 7
    assert seen['run/dropped/learner_rejected_schema'] == 2
    assert 'dropped=10' in logger.lines[-1]


def test_a_worker_that_chose_to_exit_is_restarted_with_its_last_words_in_the_log(tmp_path):
    from types import SimpleNamespace
    from easydict import EasyDict
    from sparring.framework.parallel import ParallelRun

    class Launcher:
        def __init__(self):
            self.processes, self.restarts = {}, {}
            self.roles = {'collector-1': ('collector', None, 0), 'learner-p': ('learner', 'p', 0)}

        def tail(self, worker_id):
            return ('INFO registered\nERROR collector-1: no answer to \'jobs\' from tcp://127.0.0.1:5 for 20 s\n'
                    if worker_id == 'collector-1' else 'INFO training\n')

        def restart(self, worker_id):
            self.restarts[worker_id] = self.restarts.get(worker_id, 0) + 1
            return 4321

    lines, dropped = [], []
    run = ParallelRun.__new__(ParallelRun)
    run.launcher = Launcher()
    run.cfg = EasyDict(parallel=dict(max_restarts=2, learner_replicas=1))
    run.logger = SimpleNamespace(line=lines.append)
    run.commander = SimpleNamespace(coordinator=SimpleNamespace(phase='collect'), drop_worker_id=lambda wid, why: dropped.append((wid, why)))
    run._exited('collector-1', 3)
    run._exited('learner-p', -9)  # killed: its output ends mid-work, nothing to quote
    assert dropped == [('collector-1', 'process exited with code 3'), ('learner-p', 'process exited with code -9')]
    assert lines == [("collector-1 exited with code 3; restarted as pid 4321 (restart 1 of at most 2); its last "
                      "words: ERROR collector-1: no answer to 'jobs' from tcp://127.0.0.1:5 for 20 s"),
                     'learner-p exited with code -9; restarted as pid 4321 (restart 1 of at most 2)']


def test_chunks_tasked_to_a_restarted_learner_go_to_its_successor_instead_of_stalling_collection(tmp_path):
    """The soak's 12 s stall: both collectors' tasks named the learner that was killed, they reported after its
    successor joined, and their chunks (pushed to the dead address) were waited for as the successor's."""
    commander, _, learner, pid, (a, b, c) = _one_player(tmp_path)
    first, second = _task(commander, a), _task(commander, b)
    old = first[1]['endpoint']
    commander.drop_worker(learner, 'process exited with code -9')
    successor, _ = join(commander, 'learner', player_id=pid, worker_id=f'learner-{pid}')
    # reported before the successor says where it listens: nowhere to send it, so it is lost at once
    reply = report(commander, a, pid, [], chunk_id='early', task_id=first[1]['task_id'])
    assert 'endpoint' not in reply[1] and commander.coordinator.counters['chunks_reclaimed'] == 1
    publish(commander, successor, pid, 1, 1)
    new = commander.sessions.learner_endpoints(pid)[0]
    assert new != old
    reply = report(commander, b, pid, [], chunk_id='late', task_id=second[1]['task_id'])
    assert reply[1]['endpoint'] == new  # the collector pushes it to the learner that listens now
    assert commander.collect.chunks_ahead(pid) == 1 and _task(commander, c)[0] == 'task'  # collection goes on
    _heartbeat(commander, successor, received=['late'])
    assert commander.coordinator.counters['chunks_reclaimed'] == 1 and commander.collect.expected_chunks(pid) == 1
    # a task that names the current learner is answered without a new address
    publish(commander, successor, pid, 2, 2, consumed=1)
    task = _task(commander, a)
    assert 'endpoint' not in report(commander, a, pid, [], task_id=task[1]['task_id'])[1]


def test_a_lead_learner_that_registers_again_is_told_where_its_replica_group_meets(tmp_path):
    """A restarted lead learner registers once its old session's lease expired, before a tick dropped it: ending the
    old session must not take away the meeting address its new session was just given, or the group cannot form
    again."""
    cfg = helpers._cfg(tmp_path, active_players=dict(naive_sp=1))
    cfg.parallel.learner_replicas = 2
    clock = Clock()
    commander = Commander(cfg, clock=clock)
    pid = commander.coordinator.player_ids[0]
    _, first = join(commander, 'learner', player_id=pid, replica=0, worker_id=f'learner-{pid}')
    assert first['group_address'].startswith('tcp://127.0.0.1:')
    clock.now += cfg.parallel.worker_timeout_seconds + 1
    _, again = join(commander, 'learner', player_id=pid, replica=0, worker_id=f'learner-{pid}')
    assert again['group_address'] is not None and again['group_address'] == commander.sessions.group_address[pid]
    _, replica = join(commander, 'learner', player_id=pid, replica=1)  # the other replica can join the new group
    assert replica['replica'] == 1 and replica['group_address'] == again['group_address']


def test_a_worker_whose_id_was_held_by_another_is_restarted_without_counting_toward_the_limit(tmp_path):
    from types import SimpleNamespace
    from easydict import EasyDict
    from sparring.framework.local_launcher import LocalLauncher
    from sparring.framework.parallel import ParallelRun
    from sparring.worker.remote.base import EXIT_ID_HELD

    launcher = LocalLauncher.__new__(LocalLauncher)
    launcher.processes, launcher.restarts, launcher.exp_dir, started = {}, {}, str(tmp_path), []
    launcher.roles = {'collector-1': ('collector', None, 0)}
    launcher.start = lambda worker_id, *role: started.append(worker_id) or 4321
    lines = []
    run = ParallelRun.__new__(ParallelRun)
    run.launcher = launcher
    run.cfg = EasyDict(parallel=dict(max_restarts=2, learner_replicas=1))
    run.logger = SimpleNamespace(line=lines.append)
    run.commander = SimpleNamespace(coordinator=SimpleNamespace(phase='collect'), drop_worker_id=lambda wid, why: None)
    for _ in range(6):  # more than max_restarts: a peer registering under its id must not end the run
        run._exited('collector-1', EXIT_ID_HELD)
    assert started == ['collector-1'] * 6 and launcher.restarts.get('collector-1', 0) == 0
    assert lines[-1] == 'collector-1 found its id held by another live worker; restarted as pid 4321 (not counted as a failure)'
    run._exited('collector-1', 3)  # its own failure still counts
    assert launcher.restarts['collector-1'] == 1
