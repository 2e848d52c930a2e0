"""Evaluator: plays greedy (or sampled) episodes on its own envs and says when the run may stop.

Episodes are spread evenly over the envs (a fixed quota per env), so short episodes on a fast
env cannot crowd out long ones and bias the mean. A recurrent policy's state is carried per env
and zeroed when its episode ends.
"""
from __future__ import annotations

import dataclasses
from typing import List, Optional

import numpy as np

from sparring.policy.base import Policy
from sparring.worker.recurrent_state import initial_state, zero_rows


@dataclasses.dataclass
class EvalResult:
    mean: float
    std: float
    min: float
    max: float
    returns: List[float]
    env_steps: int
    reached_stop_value: bool


class Evaluator:
    """Plays greedy episodes of a single-agent policy (its :meth:`~sparring.policy.base.Policy.greedy` actions)
    and says when the run may stop.

    Args:
        env_manager: the evaluator's own vectorised envs.
        policy: the policy evaluated.
        n_episodes: episodes per evaluation, spread evenly over the envs.
        stop_value: the mean return at which the run may stop (None: never).
        deterministic: False plays the actions the policy samples (``act``) instead of its greedy ones.
    """

    def __init__(self, env_manager, policy: Policy, n_episodes: int, stop_value: Optional[float] = None,
                 deterministic: bool = True) -> None:
        if n_episodes < 1:
            raise ValueError(f'Evaluator: n_episodes must be >= 1, got {n_episodes}')
        self.env = env_manager
        self.policy = policy
        self.n_episodes = n_episodes
        self.stop_value = stop_value
        self.deterministic = deterministic
        self.history: List[tuple] = []  # (version, mean return)

    def evaluate(self) -> EvalResult:
        B = self.env.num_envs
        quota = np.full(B, self.n_episodes // B)
        quota[: self.n_episodes % B] += 1
        returns: List[float] = []
        obs = self.env.reset()
        state = initial_state(self.policy, B)
        env_steps = 0
        while (quota > 0).any():
            action, state = self._actions(obs, state)
            step = self.env.step(action)
            env_steps += B
            zero_rows(state, step.terminated | step.truncated)
            finished = np.flatnonzero((step.terminated | step.truncated) & (quota > 0))
            for i in finished:
                returns.append(float(step.episode_return[i]))
                quota[i] -= 1
            obs = step.obs
        values = np.asarray(returns, dtype=np.float64)
        mean = float(values.mean())
        self.history.append((self.policy.version, mean))
        return EvalResult(mean=mean, std=float(values.std()), min=float(values.min()), max=float(values.max()),
                          returns=returns, env_steps=env_steps,
                          reached_stop_value=self.stop_value is not None and mean >= self.stop_value)

    def _actions(self, obs: np.ndarray, state):
        """(actions, next state): greedy ones, or sampled where the evaluator is not ``deterministic``."""
        if self.deterministic:
            return self.policy.greedy(obs, state)
        out = self.policy.act(obs, state)
        return out.action, out.state
