"""A worker whose id is held by another live worker waits for the lease to expire, then says so by its exit."""
import pytest

from sparring.worker.remote import base
from sparring.worker.remote.base import IdHeld, Worker
from sparring.worker.remote.wire import ID_HELD, MessageError


class Client:
    """Refuses ``refusals`` registers with ``reason``, then registers."""

    def __init__(self, refusals, reason=ID_HELD):
        self.refusals, self.reason, self.asked = refusals, reason, 0

    def request(self, kind, body, timeout):
        self.asked += 1
        if self.asked <= self.refusals:
            raise MessageError(self.reason, "worker id 'collector-1' is held by a live worker")
        return 'registered'


def _worker(client, timeout):
    worker = Worker.__new__(Worker)
    worker.client, worker.timeout = client, timeout
    return worker


def test_a_held_id_is_asked_for_again_until_the_lease_has_expired(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(base.time, 'monotonic', lambda: clock[0])
    monkeypatch.setattr(base.time, 'sleep', lambda s: clock.__setitem__(0, clock[0] + s))
    client = Client(refusals=5)
    assert _worker(client, timeout=10.0)._register_when_free({}) == 'registered' and client.asked == 6
    # held for longer than twice its timeout: IdHeld, which ends the process with EXIT_ID_HELD
    with pytest.raises(IdHeld, match='held by a live worker'):
        _worker(Client(refusals=100), timeout=10.0)._register_when_free({})
    with pytest.raises(MessageError):  # any other refusal as before
        _worker(Client(refusals=1, reason='schema'), timeout=10.0)._register_when_free({})
