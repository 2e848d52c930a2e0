"""V-trace's value targets and advantages: worked by hand, and equal to GAE with lambda 1 on-policy."""
import math

import numpy as np
import pytest

from sparring.policy.functional import gae, vtrace


def _chunk(rng, T=12, B=5):
    reward = rng.normal(size=(T, B))
    value = rng.normal(size=(T, B))
    next_value = np.concatenate([value[1:], rng.normal(size=(1, B))])
    terminated = rng.random((T, B)) < 0.15
    truncated = ~terminated & (rng.random((T, B)) < 0.1)
    # where an episode ended, next_value is the final observation's value (used only if truncated)
    next_value = np.where(terminated | truncated, rng.normal(size=(T, B)), next_value)
    return reward, value, next_value, terminated, truncated


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_on_policy_vtrace_equals_gae_with_lambda_one(seed):
    reward, value, next_value, terminated, truncated = _chunk(np.random.default_rng(seed))
    adv_gae, ret_gae = gae(reward, value, next_value, terminated, truncated, gamma=0.97, lam=1.0)
    adv, targets = vtrace(reward, value, next_value, terminated, truncated, np.zeros_like(reward), gamma=0.97)
    np.testing.assert_allclose(adv, adv_gae, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(targets, ret_gae, rtol=1e-5, atol=1e-5)


def test_on_policy_vtrace_targets_equal_gae_returns_for_any_lambda():
    reward, value, next_value, terminated, truncated = _chunk(np.random.default_rng(3))
    _, ret_gae = gae(reward, value, next_value, terminated, truncated, gamma=0.9, lam=0.8)
    _, targets = vtrace(reward, value, next_value, terminated, truncated, np.zeros_like(reward), gamma=0.9, lam=0.8)
    np.testing.assert_allclose(targets, ret_gae, rtol=1e-5, atol=1e-5)


def test_two_steps_worked_by_hand():
    # gamma 0.9; V(x0) 0.5, V(x1) 0.2, V(x2) 1.0 (bootstrap); rewards 1, 0; ratios pi/mu 2 and 0.5.
    # rho = c = (1, 0.5) after clipping at 1.
    # delta1 = 0 + 0.9 * 1.0 - 0.2 = 0.7; v1 = 0.2 + 0.5 * 0.7 = 0.55
    # delta0 = 1 + 0.9 * 0.2 - 0.5 = 0.68; v0 = 0.5 + 0.68 + 0.9 * 1 * 0.35 = 1.495
    # advantages: 0.5 * (0 + 0.9 * 1.0 - 0.2) = 0.35; 1 * (1 + 0.9 * 0.55 - 0.5) = 0.995
    col = lambda *v: np.array(v, dtype=np.float64)[:, None]  # noqa: E731
    no = np.zeros((2, 1), dtype=bool)
    adv, targets = vtrace(col(1, 0), col(0.5, 0.2), col(0.2, 1.0), no, no, col(math.log(2), math.log(0.5)), gamma=0.9)
    np.testing.assert_allclose(targets[:, 0], [1.495, 0.55], rtol=1e-6)
    np.testing.assert_allclose(adv[:, 0], [0.995, 0.35], rtol=1e-6)
    # Unweighted (for an objective with its own ratio): the same targets, the advantages without rho.
    unweighted, same_targets = vtrace(col(1, 0), col(0.5, 0.2), col(0.2, 1.0), no, no, col(math.log(2), math.log(0.5)),
                                      gamma=0.9, weight_advantages=False)
    np.testing.assert_allclose(same_targets, targets, rtol=1e-6)
    np.testing.assert_allclose(unweighted[:, 0], [0.995, 0.7], rtol=1e-6)


def test_a_terminal_step_ignores_its_next_value_and_cuts_the_trace():
    col = lambda *v: np.array(v, dtype=np.float64)[:, None]  # noqa: E731
    terminated = col(1, 0).astype(bool)
    truncated = np.zeros((2, 1), dtype=bool)
    adv, targets = vtrace(col(1, 2), col(0.5, 0.3), col(99.0, 0.4), terminated, truncated, col(0, 0), gamma=0.9)
    # step 0 ended the episode: v0 = r0 = 1, whatever follows; step 1 starts a new one
    np.testing.assert_allclose(targets[:, 0], [1.0, 2 + 0.9 * 0.4], rtol=1e-6)
    np.testing.assert_allclose(adv[:, 0], [0.5, 2 + 0.9 * 0.4 - 0.3], rtol=1e-6)


def test_a_truncated_step_bootstraps_from_the_final_observation():
    col = lambda *v: np.array(v, dtype=np.float64)[:, None]  # noqa: E731
    truncated = col(1, 0).astype(bool)
    terminated = np.zeros((2, 1), dtype=bool)
    adv, targets = vtrace(col(1, 2), col(0.5, 0.3), col(2.0, 0.4), terminated, truncated, col(0, 0), gamma=0.9)
    np.testing.assert_allclose(targets[:, 0], [1 + 0.9 * 2.0, 2 + 0.9 * 0.4], rtol=1e-6)


def test_importance_weights_are_clipped_at_rho_bar_and_c_bar():
    col = lambda *v: np.array(v, dtype=np.float64)[:, None]  # noqa: E731
    no = np.zeros((2, 1), dtype=bool)
    big = col(math.log(50.0), math.log(50.0))
    adv, targets = vtrace(col(1, 0), col(0.5, 0.2), col(0.2, 1.0), no, no, big, gamma=0.9, rho_bar=2.0, c_bar=1.5)
    # rho = 2, c = 1.5: v1 = 0.2 + 2 * 0.7 = 1.6; v0 = 0.5 + 2 * 0.68 + 0.9 * 1.5 * 1.4 = 3.75
    np.testing.assert_allclose(targets[:, 0], [3.75, 1.6], rtol=1e-6)
    np.testing.assert_allclose(adv[:, 0], [2 * (1 + 0.9 * 1.6 - 0.5), 2 * 0.7], rtol=1e-6)


def test_an_action_the_current_policy_never_takes_contributes_nothing():
    col = lambda *v: np.array(v, dtype=np.float64)[:, None]  # noqa: E731
    no = np.zeros((2, 1), dtype=bool)
    adv, targets = vtrace(col(5, 7), col(0.5, 0.2), col(0.2, 1.0), no, no, col(-np.inf, -np.inf), gamma=0.9)
    np.testing.assert_allclose(targets[:, 0], [0.5, 0.2])
    np.testing.assert_allclose(adv[:, 0], [0.0, 0.0])
