"""The ledger of registered sessions: replays refused across a restart, and a file that stays bounded."""
import os
import uuid

from sparring.framework.sessions import LEDGER_SLACK, SessionLedger
from sparring.worker.remote.peer_guards import REPLAY_WINDOW_SECONDS


class Wall:
    def __init__(self):
        self.now = 1.7e9

    def __call__(self):
        return self.now


def _lines(path):
    with open(path) as f:
        return f.read().splitlines()


def test_the_ledger_stays_bounded_however_many_workers_registered(tmp_path):
    path, wall = str(tmp_path / 'commander' / 'sessions.txt'), Wall()
    ledger = SessionLedger(path, resume=False, wall=wall)
    horizon = 2 * REPLAY_WINDOW_SECONDS
    registers_per_horizon = int(horizon / 10.0)  # one register every 10 s
    sizes = []
    for _ in range(3_000):
        ledger.add(uuid.uuid4().hex)
        wall.now += 10.0
        sizes.append(len(_lines(path)))
    # never more than twice what a replay could still reach, plus the slack; not one line per register
    assert max(sizes) <= 2 * (registers_per_horizon + 1) + LEDGER_SLACK + 1
    assert len(ledger) <= 2 * (registers_per_horizon + 1) + LEDGER_SLACK + 1
    assert os.path.getsize(path) < 3_000 * 33 / 3
    ledger.close()


def test_a_session_within_the_replay_horizon_is_remembered_across_a_restart_and_an_older_one_forgotten(tmp_path):
    path, wall = str(tmp_path / 'sessions.txt'), Wall()
    ledger = SessionLedger(path, resume=False, wall=wall)
    ledger.add('old')
    wall.now += 2 * REPLAY_WINDOW_SECONDS - 5
    ledger.add('recent')
    ledger.close()
    resumed = SessionLedger(path, resume=True, wall=wall)
    assert 'old' in resumed and 'recent' in resumed  # a captured register of either could still be played back
    resumed.close()
    wall.now += 10  # 'old' is past the horizon: its signed register would be refused as stale anyway
    resumed = SessionLedger(path, resume=True, wall=wall)
    assert 'old' not in resumed and 'recent' in resumed
    assert [line.split()[0] for line in _lines(path)] == ['recent']
    resumed.close()
    fresh = SessionLedger(path, resume=False, wall=wall)  # a new run starts an empty ledger
    assert 'recent' not in fresh and _lines(path) == []
    fresh.close()
