"""What the side-by-side runs against a peer library share: the process, the evaluation, the clocks, the statistics.

* :func:`prepare_process`: one torch thread and a fresh process's one-time costs paid before any clock starts.
* :func:`evaluate_greedy`: one evaluation function for both libraries, so that neither is judged by a protocol of
  its own: ``episodes`` greedy episodes on as many envs, one episode each, from the same seeded start states.
* :class:`Clocks`: wall and process CPU seconds since one starting point, with the evaluations' share kept apart,
  so that each library's time splits into training and evaluation.
* :func:`ratio_of_medians`: the ratio of two medians over paired runs (seed by seed) with a bootstrap interval.
"""
from __future__ import annotations

import math
import os
import time
from typing import Callable, Optional, Sequence, Tuple


def load() -> list:
    """The machine's load averages (1, 5, 15 minutes), rounded."""
    return [round(x, 2) for x in os.getloadavg()]


def prepare_process() -> None:
    """One torch thread, and the one-time costs of a fresh process paid before either clock starts: the first
    optimiser imports ``torch._dynamo`` (about a second here), which both libraries would pay."""
    import gymnasium  # noqa: F401
    import torch
    torch.set_num_threads(1)
    torch.optim.Adam([torch.zeros(1, requires_grad=True)])


def evaluate_greedy(act: Callable, env_id: str, episodes: int, seed: int) -> float:
    """Mean return of ``episodes`` episodes on as many envs (one each, all stepped together), the actions
    ``act(observations)``; the envs are seeded ``seed``, so every call starts from the same states."""
    import gymnasium as gym
    import numpy as np
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(env_id) for _ in range(episodes)],
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    obs, _ = envs.reset(seed=seed)
    returns, done, total = np.zeros(episodes), np.zeros(episodes, bool), np.zeros(episodes)
    while not done.all():
        obs, reward, terminated, truncated, _ = envs.step(act(obs))
        total += np.where(done, 0.0, reward)
        finished = (terminated | truncated) & ~done
        returns[finished] = total[finished]
        done |= finished
    envs.close()
    return float(returns.mean())


class Clocks:
    """Wall (``perf_counter``) and process CPU (``process_time``) seconds since it was made; the seconds spent
    inside :meth:`evaluation` are summed apart, so that ``total - evaluation`` is the training's share."""

    def __init__(self, wall: Callable[[], float] = time.perf_counter, cpu: Callable[[], float] = time.process_time):
        self._wall, self._cpu = wall, cpu
        self.started = (wall(), cpu())
        self.eval_wall = self.eval_cpu = 0.0

    def now(self) -> Tuple[float, float]:
        """(wall, CPU) seconds since the start."""
        return self._wall() - self.started[0], self._cpu() - self.started[1]

    def evaluation(self, evaluate: Callable[[], float]) -> float:
        """``evaluate()``, its wall and CPU seconds counted as evaluation."""
        wall, cpu = self._wall(), self._cpu()
        try:
            return evaluate()
        finally:
            self.eval_wall += self._wall() - wall
            self.eval_cpu += self._cpu() - cpu

    def split(self) -> dict:
        """The seconds so far: total, training and evaluation, wall and CPU."""
        wall, cpu = self.now()
        return dict(wall_seconds=wall, cpu_seconds=cpu, train_wall_seconds=wall - self.eval_wall,
                    train_cpu_seconds=cpu - self.eval_cpu, eval_wall_seconds=self.eval_wall,
                    eval_cpu_seconds=self.eval_cpu)


def median(values: Sequence[float]) -> float:
    """The median; ``inf`` (a run that never got there) counts as the slowest."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError('median of no values')
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def ratio_of_medians(ours: Sequence[float], theirs: Sequence[float], resamples: int = 10_000, level: float = 0.95,
                     seed: int = 0) -> dict:
    """``median(ours) / median(theirs)`` over paired runs (``ours[i]`` and ``theirs[i]`` share a seed and the
    machine's load), and its percentile bootstrap interval at ``level``: the seeds drawn with replacement
    ``resamples`` times, the pairs kept together. ``inf`` marks a run that never reached the target; a ratio
    or bound that is infinite or not a number (a median infinite) is reported as None."""
    import numpy as np
    if len(ours) != len(theirs) or not ours:
        raise ValueError(f'ratio_of_medians: paired runs expected, got {len(ours)} and {len(theirs)}')
    a, b = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    rows = np.random.default_rng(seed).integers(0, len(a), size=(resamples, len(a)))
    with np.errstate(invalid='ignore', divide='ignore'):
        ratios = np.median(a[rows], axis=1) / np.median(b[rows], axis=1)
    ratios = ratios[~np.isnan(ratios)]
    tail = (1.0 - level) / 2
    low, high = (np.quantile(ratios, [tail, 1.0 - tail], method='inverted_cdf') if len(ratios) else (None, None))
    top, bottom = median(list(a)), median(list(b))
    return dict(ratio=_number(top / bottom) if bottom not in (0.0, math.inf) else None,
                ci_low=_number(low), ci_high=_number(high), level=level, resamples=resamples, pairs=len(a))


def _number(x) -> Optional[float]:
    """A float for JSON, None for a missing or infinite value."""
    return None if x is None or not math.isfinite(float(x)) else float(x)
