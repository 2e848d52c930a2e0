"""A short soak (benchmarks/soak.py): workers SIGKILLed in turn and a flood of forged messages, yet no game
is lost or counted twice and collection never stands still for a worker timeout."""
import importlib.util
import os

import pytest

pytestmark = pytest.mark.slow  # workers killed in turn for a while

_spec = importlib.util.spec_from_file_location(
    'soak', os.path.join(os.path.dirname(__file__), '..', '..', 'benchmarks', 'soak.py'))
soak = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(soak)


def test_a_short_soak_loses_and_doubles_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv('SPARRING_SECRET', raising=False)
    result = soak.soak(str(tmp_path), seconds=30.0, kill_every=2.0, flooders=2, flood_mb=4.0)
    assert result['games_lost'] == 0 and result['games_doubled'] == 0
    assert result['games_recorded'] > 0 and sum(result['kills'].values()) >= 4
    assert result['restarts'] >= sum(result['kills'].values()) - 1  # the last kill may come as the run ends
    assert not result['stalled'], result['longest_collection_stall_seconds']
    assert result['rejected_messages'].get('unauthenticated', 0) > 0
