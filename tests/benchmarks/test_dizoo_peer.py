"""``benchmarks/dizoo_peer.py``: the figures it computes for both libraries, on strategies worked by hand, and its
sparring runs recording the main player's strategy per seat (no DI-engine needed)."""
import importlib.util
import os
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'benchmarks',
                      'dizoo_peer.py')


@pytest.fixture(scope='module')
def peer():
    sys.path.insert(0, os.path.dirname(SCRIPT))
    spec = importlib.util.spec_from_file_location('dizoo_peer', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_equilibrium_is_at_distance_and_exploitability_zero(peer):
    out = peer.figures([[0.375, 0.625], [0.375, 0.625]])
    assert out == dict(seat_0_distance=0.0, seat_0_exploitability=0.0, distance=0.0, exploitability=0.0)


def test_a_pure_seat_0_is_exploited_by_the_best_reply(peer):
    # Seat 0 always plays action 0: the reply 1 takes -2 from it against the game's value -1/8: a gap of 1.875.
    # Seat 1 at the equilibrium; both seats' exploitability is the mean of the two seats' best-reply gains.
    out = peer.figures([[1.0, 0.0], [0.375, 0.625]])
    assert out['seat_0_distance'] == pytest.approx(0.625)
    assert out['seat_0_exploitability'] == pytest.approx(1.875)
    assert out['distance'] == pytest.approx(0.625)
    # Seat 0's best reply to seat 1 at equilibrium gains 0 over its value there; seat 1 gains 1.875: mean 0.9375.
    assert out['exploitability'] == pytest.approx(0.9375)


def test_the_summary_finds_the_first_point_near_the_equilibrium(peer):
    curve = [dict(seconds=s, env_steps=100 * s, seat_probs=[[p, 1 - p], [0.5, 0.5]])
             for s, p in ((1, 0.9), (2, 0.6), (3, 0.4), (4, 0.38), (5, 0.5))]
    out = peer.summarise(dict(seed=0, wall_seconds=5.0, env_steps=500, curve=curve))
    assert out['first_within'] == dict(seconds=3, env_steps=300)
    assert out['final']['seat_0_distance'] == pytest.approx(0.125)
    assert out['last_fifth_mean']['seat_0_distance'] == pytest.approx(0.125)


@pytest.mark.slow
def test_sparring_runs_record_the_main_players_strategy_per_seat(peer, tmp_path):
    for league in ('demo_roles', 'ready'):
        run = peer.run_sparring(league, str(tmp_path), seed=0, env_steps=6_000, seconds=60.0)
        assert run['curve'], league
        for point in run['curve']:
            assert len(point['seat_probs']) == 2 and all(abs(sum(p) - 1.0) < 1e-4 for p in point['seat_probs'])
        assert peer.summarise(run)['final']['env_steps'] <= run['env_steps']
