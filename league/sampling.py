"""Opponent sampling: PFSP weightings, NaN-safe weighted draws, uniform and softmax draws.

Prioritised fictitious self-play (PFSP) turns the home player's win rate ``x`` against each
candidate into a weight: ``squared`` ``(1-x)^2`` (hardest opponents first), ``variance``
``x(1-x)`` (opponents of similar strength), ``linear`` ``1-x`` and ``linear_capped``
``min(0.5, 1-x)``. Any callable mapping a win-rate array to a weight array works too, and
:func:`register_pfsp_weighting` gives one a name a config can use.

When every weight is zero (a player that beats, or loses to, every candidate) the draw is
uniform instead of the NaN probabilities a plain ``w / w.sum()`` would give.
"""
from __future__ import annotations

import bisect
import itertools
from typing import Callable, Dict, Union

import numpy as np

from sparring.league.errors import LeagueError

Weighting = Callable[[np.ndarray], np.ndarray]

PFSP_WEIGHTINGS: Dict[str, Weighting] = {
    'squared': lambda x: (1.0 - x) ** 2,
    'variance': lambda x: x * (1.0 - x),
    'linear': lambda x: 1.0 - x,
    'linear_capped': lambda x: np.minimum(0.5, 1.0 - x),
}


def register_pfsp_weighting(name: str, fn: Weighting, force: bool = False) -> Weighting:
    """Name a weighting so that a config can choose it with ``pfsp_weighting='name'``."""
    if not callable(fn):
        raise TypeError(f'register_pfsp_weighting({name!r}): expected a callable, got {fn!r}')
    if name in PFSP_WEIGHTINGS and PFSP_WEIGHTINGS[name] is not fn and not force:
        raise LeagueError(f'PFSP weighting {name!r} is already registered; pass force=True to replace it')
    PFSP_WEIGHTINGS[name] = fn
    return fn


def get_pfsp_weighting(weighting: Union[str, Weighting]) -> Weighting:
    if callable(weighting):
        return weighting
    try:
        return PFSP_WEIGHTINGS[weighting]
    except (KeyError, TypeError):
        raise LeagueError(f'unknown PFSP weighting {weighting!r}; expected one of '
                          f'{", ".join(sorted(PFSP_WEIGHTINGS))} or a callable') from None


def pfsp_weights(win_rates, weighting: Union[str, Weighting] = 'squared') -> np.ndarray:
    """Unnormalised PFSP weights, checked to be finite and non-negative."""
    x = np.asarray(win_rates, dtype=np.float64)
    weights = np.asarray(get_pfsp_weighting(weighting)(x), dtype=np.float64)
    if weights.shape != x.shape:
        raise LeagueError(f'PFSP weighting {weighting!r} returned shape {weights.shape} '
                          f'for win rates of shape {x.shape}; expected the same shape')
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise LeagueError(f'PFSP weighting {weighting!r} returned weights that are negative or '
                          f'not finite: {weights!r}; expected finite weights >= 0')
    return weights


def normalise(weights: np.ndarray) -> np.ndarray:
    """Probabilities proportional to ``weights``; uniform when they are all zero."""
    total = weights.sum()
    if total <= 0.0:
        return np.full(len(weights), 1.0 / len(weights)) if len(weights) else weights
    return weights / total


def pfsp_probabilities(win_rates, weighting: Union[str, Weighting] = 'squared') -> np.ndarray:
    """PFSP probabilities of choosing each candidate; never NaN."""
    return normalise(pfsp_weights(win_rates, weighting))


def sample_weighted(weights: np.ndarray, rng: np.random.Generator) -> int:
    """Index drawn with probability proportional to ``weights`` (uniform if all zero).

    One uniform number and a search in the cumulative sum: cheaper than ``rng.choice(p=...)``
    and it consumes exactly one draw, which keeps replays after a restart simple.
    """
    n = len(weights)
    if n == 0:
        raise LeagueError('cannot sample from an empty set of candidates')
    cumulative = np.cumsum(weights)
    total = cumulative[-1]
    u = rng.random()
    if total <= 0.0:
        return min(int(u * n), n - 1)
    index = int(np.searchsorted(cumulative, u * total, side='right'))
    # u * total can round up to total itself; the last candidate with weight takes it.
    return index if index < n else int(np.flatnonzero(weights > 0)[-1])


def pfsp_sample(win_rates, rng: np.random.Generator, weighting: Union[str, Weighting] = 'squared') -> int:
    """Index of the candidate chosen by PFSP."""
    return sample_weighted(pfsp_weights(win_rates, weighting), rng)


def uniform_sample(n: int, rng: np.random.Generator) -> int:
    if n <= 0:
        raise LeagueError('cannot sample from an empty set of candidates')
    return min(int(rng.random() * n), n - 1)


def softmax(scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(scores - scores.max())  # shift by the max: no overflow for large scores
    return shifted / shifted.sum()


class FixedSampler:
    """Draws an index for a fixed list of weights: one uniform number and a bisection.

    Used for branch choice, which happens on every job with weights that never change.
    """

    def __init__(self, weights) -> None:
        weights = [float(w) for w in weights]
        if not weights or any(w < 0 or w != w for w in weights) or sum(weights) <= 0:
            raise LeagueError(f'FixedSampler: expected weights >= 0 with a positive sum, got {weights!r}')
        self._cumulative = list(itertools.accumulate(weights))
        self._total = self._cumulative[-1]
        self._last_positive = max(i for i, w in enumerate(weights) if w > 0)

    def sample(self, rng: np.random.Generator) -> int:
        index = bisect.bisect_right(self._cumulative, rng.random() * self._total)
        return index if index <= self._last_positive else self._last_positive
