"""What a training run returns: :class:`RunSummary`, the dict ``serial_pipeline`` and ``parallel_pipeline`` give back.

A ``TypedDict``, so it stays the plain dict users index (``summary['eval_mean']``) while the code that builds
and reads it is type-checked. Every run has the first keys; the others depend on the kind of run (a league or
one agent) and the mode (serial or parallel), as their comments say.
"""
from __future__ import annotations

from typing import Dict, List, NotRequired, Optional, TypedDict


class RunSummary(TypedDict):
    exp_dir: str
    env_steps: int
    wall_seconds: float
    reached_stop_value: bool  # env.stop_value was reached by the first player
    stop_env_steps: Optional[int]  # ... after this many env steps
    stop_seconds: Optional[float]  # ... and seconds
    checkpoint: str  # the serial checkpoint or the commander's state file
    # A league run's (and a parallel run's of either kind):
    eval: NotRequired[Dict[str, dict]]  # the last evaluation report, by player
    history: NotRequired[List[dict]]  # one entry per periodic evaluation round
    exact: NotRequired[dict]  # the last exact analysis (small zero-sum games)
    pictures: NotRequired[List[str]]  # the closing report's pictures
    league_table: NotRequired[Optional[str]]
    rounds: NotRequired[int]  # serial: rounds played
    # A single-agent run's:
    eval_mean: NotRequired[float]  # the last evaluation's mean return
    eval_std: NotRequired[float]
    train_iter: NotRequired[int]  # serial: learner iterations
    collect_steps_per_second: NotRequired[float]  # serial: the collector's own speed
    # A parallel run's:
    env_steps_per_second: NotRequired[float]
    train_iterations: NotRequired[Dict[str, int]]  # by player
    stop_reason: NotRequired[str]
    games: NotRequired[int]
    counters: NotRequired[Dict[str, int]]  # games, chunks, what was refused or dropped ...
    worker_stats: NotRequired[Dict[str, Dict[str, float]]]  # by worker id
    restarts: NotRequired[Dict[str, int]]  # worker processes restarted, by worker id
    rejected_messages: NotRequired[Dict[str, int]]  # by reason
