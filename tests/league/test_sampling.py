"""PFSP weightings, NaN-safety and the weighted draws."""
import numpy as np
import pytest

from sparring.league import (LeagueError, pfsp_probabilities, pfsp_weights, register_pfsp_weighting,
                             sample_weighted, uniform_sample)
from sparring.league.sampling import PFSP_WEIGHTINGS, FixedSampler, softmax

RATES = np.array([0.0, 0.2, 0.5, 0.8, 1.0])


@pytest.mark.parametrize('name, expected', [
    ('squared', (1 - RATES) ** 2),
    ('variance', RATES * (1 - RATES)),
    ('linear', 1 - RATES),
    ('linear_capped', np.minimum(0.5, 1 - RATES)),
])
def test_weightings_match_their_definitions(name, expected):
    np.testing.assert_allclose(pfsp_weights(RATES, name), expected)
    np.testing.assert_allclose(pfsp_probabilities(RATES, name), expected / expected.sum())


@pytest.mark.parametrize('rates, weighting', [
    ([1.0, 1.0, 1.0], 'squared'),  # beats everyone
    ([1.0, 1.0], 'linear'),
    ([0.0, 0.0, 0.0], 'variance'),  # loses to everyone
    ([1.0, 0.0, 1.0], 'variance'),
])
def test_all_zero_weights_give_uniform_probabilities_not_nan(rates, weighting):
    probs = pfsp_probabilities(rates, weighting)
    assert not np.any(np.isnan(probs))
    np.testing.assert_allclose(probs, np.full(len(rates), 1 / len(rates)))
    rng = np.random.default_rng(0)
    picks = [sample_weighted(pfsp_weights(rates, weighting), rng) for _ in range(300)]
    assert set(picks) == set(range(len(rates)))


def test_user_callable_weighting_and_registration():
    probs = pfsp_probabilities([0.1, 0.9], lambda x: (1 - x) ** 3)
    np.testing.assert_allclose(probs, np.array([0.9 ** 3, 0.1 ** 3]) / (0.9 ** 3 + 0.1 ** 3))
    register_pfsp_weighting('test_cubic', lambda x: (1 - x) ** 3)
    try:
        np.testing.assert_allclose(pfsp_probabilities([0.1, 0.9], 'test_cubic'), probs)
        with pytest.raises(LeagueError, match='already registered'):
            register_pfsp_weighting('test_cubic', lambda x: x)
    finally:
        PFSP_WEIGHTINGS.pop('test_cubic')


@pytest.mark.parametrize('fn, message', [
    (lambda x: x - 1.0, 'negative or not finite'),
    (lambda x: np.full_like(x, np.inf), 'negative or not finite'),
    (lambda x: x[:1], 'shape'),
])
def test_bad_user_weighting_is_rejected(fn, message):
    with pytest.raises(LeagueError, match=message):
        pfsp_weights([0.2, 0.7], fn)


def test_unknown_weighting_lists_the_known_ones():
    with pytest.raises(LeagueError, match='linear_capped'):
        pfsp_weights([0.5], 'cubic')


def test_weighted_draws_follow_the_weights(helpers):
    rng = np.random.default_rng(1)
    weights = np.array([0.0, 1.0, 3.0, 0.0, 6.0])
    n = 20000
    counts = np.bincount([sample_weighted(weights, rng) for _ in range(n)], minlength=5)
    assert counts[0] == counts[3] == 0  # zero weight: never drawn
    for i, p in enumerate(weights / weights.sum()):
        helpers.assert_frequency(counts[i], n, p, f'candidate {i}')


def test_fixed_sampler_and_uniform(helpers):
    rng = np.random.default_rng(2)
    sampler = FixedSampler([0.25, 0.0, 0.75])
    n = 20000
    counts = np.bincount([sampler.sample(rng) for _ in range(n)], minlength=3)
    assert counts[1] == 0
    helpers.assert_frequency(counts[0], n, 0.25, 'first')
    counts = np.bincount([uniform_sample(4, rng) for _ in range(n)], minlength=4)
    for c in counts:
        helpers.assert_frequency(c, n, 0.25, 'uniform')
    with pytest.raises(LeagueError):
        uniform_sample(0, rng)
    with pytest.raises(LeagueError):
        sample_weighted(np.zeros(0), rng)


def test_softmax_is_stable_for_large_scores():
    np.testing.assert_allclose(softmax(np.array([1000.0, 1000.0])), [0.5, 0.5])
