"""Exact analysis of policies in the zero-sum matrix games (see :mod:`sparring.league.exact_analysis`).

A policy's profile is its mixed strategy in each seat, ``[2, A]``: its action probabilities on
the seat's observation (the seat one-hot). Everything else is linear algebra on the game's
``payoffs[seat, own, opponent]``; a mixture of policies is the weighted mean of their strategies,
since a one-shot game has no later decision for reach to reweight.
"""
from __future__ import annotations

from typing import Sequence, Union

import numpy as np

from sparring.league.exact_analysis import ExactAnalysis


class MatrixGameAnalysis(ExactAnalysis):
    def __init__(self, payoffs: np.ndarray, nash: np.ndarray) -> None:
        self.payoffs = np.asarray(payoffs, np.float64)  # [seat, own, opponent]
        self.nash = np.asarray(nash, np.float64)  # [seat, action]
        self.num_actions = self.payoffs.shape[1]

    def profile(self, policy) -> np.ndarray:
        seats = np.eye(2, dtype=np.float32)
        mask = np.ones((2, self.num_actions), bool)
        probs = np.asarray(policy.action_probabilities(seats, mask), np.float64)
        if probs.shape != (2, self.num_actions) or not np.allclose(probs.sum(axis=1), 1.0, atol=1e-4):
            raise ValueError(f'{type(policy).__name__}.action_probabilities returned {probs.tolist()}; expected '
                             f'one distribution over {self.num_actions} actions per seat')
        return probs / probs.sum(axis=1, keepdims=True)

    def seat_values(self, rows: Sequence[np.ndarray], cols: Sequence[np.ndarray]) -> np.ndarray:
        seat_0 = np.stack([p[0] for p in rows])
        seat_1 = np.stack([p[1] for p in cols])
        return seat_0 @ self.payoffs[0] @ seat_1.T

    def exploitability(self, profile: np.ndarray) -> float:
        x, y = profile
        best_0 = (self.payoffs[0] @ y).max()  # seat 0's best pure reply to y
        best_1 = (self.payoffs[1] @ x).max()
        value_0, value_1 = x @ self.payoffs[0] @ y, y @ self.payoffs[1] @ x
        return float((best_0 - value_0 + best_1 - value_1) / 2.0)

    def mixture(self, profiles: Sequence[np.ndarray], weights: Union[Sequence[float], np.ndarray]) -> np.ndarray:
        """The mixed strategy per seat of drawing profile k with probability ``weights[k]``."""
        w = np.asarray(weights, np.float64)
        return np.tensordot(w / w.sum(), np.stack(profiles), axes=1)

    def population_exploitability(self, profiles: Sequence[np.ndarray], weights: Union[Sequence[float], np.ndarray]) -> float:
        return self.exploitability(self.mixture(profiles, weights))

    def distance_to_nash(self, profile: np.ndarray) -> float:
        """The largest difference, over seats and actions, from the game's equilibrium strategy."""
        return float(np.abs(np.asarray(profile) - self.nash).max())

    def report(self, profiles, active) -> dict:
        report = super().report(profiles, active)
        mixed = self.mixture([profiles[i] for i in profiles], list(report['meta_strategy'].values()))
        report.update(meta_strategy_actions=mixed.tolist(), meta_distance_to_nash=self.distance_to_nash(mixed),
                      distance_to_nash={pid: self.distance_to_nash(profiles[pid]) for pid in active})
        return report
