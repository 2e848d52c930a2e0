"""A worker process's role joins the run as it is built: its state exists whole once the worker does, heartbeats
carry the role's figures only from then on, and a worker whose building fails closes what it opened."""
import threading
from types import SimpleNamespace

import gymnasium as gym
import pytest

from sparring.worker.remote import base
from sparring.worker.remote.base import Worker
from sparring.worker.remote.security import Security
from sparring.worker.remote.wire import Message, Signer

CONFIG = dict(import_names=[], seed=0, torch_threads=1, exp_name='unused',
              parallel=dict(heartbeat_seconds=0.001, worker_timeout_seconds=60.0, request_timeout_seconds=60.0))


class _Commander:
    """Every client socket of the worker, faked: the main one registers it, the heartbeat's records what it sends."""

    def __init__(self):
        self.heartbeats, self.goodbyes, self.closed = [], [], 0
        self.beating = threading.Event()

    def client(self, context, address, security, sender, timeout):
        return SimpleNamespace(sender=sender, request=self.request, close=self.close)

    def request(self, kind, body, arrays=None, timeout=None):
        if kind == 'register':
            reply = dict(config=CONFIG, worker_id='collector-0', index=0, player_ids=['p'])
            return Message('registered', reply, {}, id='r', sender='commander', time=0.0)
        if kind == 'heartbeat':
            self.heartbeats.append(body['stats'])
            if len(self.heartbeats) >= 2:
                self.beating.set()
        if kind == 'goodbye':
            self.goodbyes.append(body)
        return Message('ack', dict(state='run'), {}, id='r', sender='commander', time=0.0)

    def close(self):
        self.closed += 1


@pytest.fixture
def commander(monkeypatch, tmp_path):
    fake = _Commander()
    monkeypatch.setattr(base, 'RequestClient', fake.client)
    spaces = (gym.spaces.Box(-1.0, 1.0, (2,)), gym.spaces.Discrete(2))
    monkeypatch.setattr(base, 'run_kind', lambda cfg: SimpleNamespace(spaces=lambda role=None: spaces))
    monkeypatch.setattr(base, 'seed_everything', lambda seed: None)
    monkeypatch.setattr(base, 'set_torch_threads', lambda n: None)
    fake.workdir = str(tmp_path)
    return fake


class _Role(Worker):
    role = 'collector'

    def __init__(self, commander, fail=False):
        super().__init__('tcp://127.0.0.1:1', Security(Signer(None)), workdir=commander.workdir)
        with self.joining():
            commander.beating.wait(10.0)  # heartbeats go on while the role builds its state (a slow policy, say)
            if fail:
                raise RuntimeError('no policy for this run')
            self.chunks = 3

    def stats(self):
        return dict(chunks=float(self.chunks))


def test_heartbeats_carry_the_roles_figures_once_its_state_is_built(commander):
    worker = _Role(commander)
    try:
        built_at = len(commander.heartbeats)
        assert built_at >= 2 and all(stats == dict(resends=0.0) for stats in commander.heartbeats[:built_at])
        assert worker.observation_space.shape == (2,) and worker.cfg.seed == 0  # what registering gave
        commander.heartbeats.clear()
        commander.beating.clear()
        commander.beating.wait(10.0)
        assert commander.heartbeats[-1] == dict(chunks=3.0, resends=0.0)
    finally:
        worker.close()


def test_a_worker_whose_state_cannot_be_built_closes_what_it_opened(commander):
    with pytest.raises(RuntimeError, match='no policy for this run'):
        _Role(commander, fail=True)
    assert commander.closed == 2  # its own client and its heartbeat's: no thread or socket left behind


def test_a_worker_says_goodbye_with_its_last_figures(commander):
    worker = _Role(commander)
    try:
        worker.chunks = 7  # work done after its last heartbeat
        worker.goodbye()
    finally:
        worker.close()
    assert commander.goodbyes == [dict(session=worker.session, stats=dict(chunks=7.0, resends=0.0))]
