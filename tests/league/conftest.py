"""Shared helpers for the league tests: statistical tolerances, payoff set-up, state comparison."""
import math

import numpy as np
import pytest

from sparring.league import OneVsOneLeague

# Tolerances are Z binomial standard errors: |freq - p| <= Z * sqrt(p (1 - p) / n). The draws
# are seeded, so a test either always passes or always fails; Z = 4.5 only guards against a
# seed that happens to be unlucky (two-sided probability ~7e-6 per check).
Z = 4.5


def binomial_tolerance(p: float, n: int) -> float:
    return Z * math.sqrt(p * (1.0 - p) / n) + 1e-12


def assert_frequency(count: int, n: int, p: float, what: str = '') -> None:
    freq = count / n
    tol = binomial_tolerance(p, n)
    assert abs(freq - p) <= tol, f'{what}: frequency {freq:.4f} vs probability {p:.4f} (tolerance {tol:.4f}, n={n})'


def record(league, home: str, away: str, wins: int = 0, draws: int = 0, losses: int = 0) -> None:
    """Add games to the league's payoff (ordered wins, then draws, then losses)."""
    league.payoff.record(home, away, ['win'] * wins + ['draw'] * draws + ['loss'] * losses)


def assert_states_equal(a, b, path='state'):
    """Deep equality of two state dicts (numpy arrays compared elementwise)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), path
        assert a.shape == b.shape and np.array_equal(a, b), path
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f'{path}: keys {sorted(a)} vs {sorted(b)}'
        for k in a:
            assert_states_equal(a[k], b[k], f'{path}.{k}')
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_states_equal(x, y, f'{path}[{i}]')
    else:
        assert a == b, f'{path}: {a!r} != {b!r}'


def advance(league, player_id: str, step: int, agent_steps=None) -> dict:
    """Report ``step`` (and ``agent_steps`` if given) for a player and judge a snapshot; returns
    judge_snapshot's answer."""
    info = dict(player_id=player_id, train_iteration=step)
    if agent_steps is not None:
        info['agent_steps'] = agent_steps
    league.update_active_player(info)
    return league.judge_snapshot(player_id)


@pytest.fixture
def exact_payoff_cfg():
    """Payoff settings that make win rates exact fractions: no decay, no minimum games."""
    return dict(decay=1.0, min_win_rate_games=0)


@pytest.fixture
def naive_league(exact_payoff_cfg):
    return OneVsOneLeague(dict(payoff=exact_payoff_cfg))


@pytest.fixture
def helpers():
    """The helpers above (test modules cannot import conftest under --import-mode=importlib)."""
    import types
    return types.SimpleNamespace(binomial_tolerance=binomial_tolerance, assert_frequency=assert_frequency,
                                 record=record, assert_states_equal=assert_states_equal, advance=advance)
