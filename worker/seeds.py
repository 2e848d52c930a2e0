"""Where every env of a run takes its seed: one table, shared by the serial and the parallel mode.

Seeds are spread by large primes so that no two env groups of a run (a player's collector envs, a
parallel collector's envs, the evaluation envs) ever replay the same episodes.
"""
from __future__ import annotations

PLAYER_SEED_STRIDE = 7919  # a league player's collector envs (and a collector's copy of its policy)
COLLECTOR_SEED_STRIDE = 15_485_863  # parallel collector k: seed + stride * k, apart from the serial run's
LEAGUE_EVAL_SEED_OFFSET = 104_729  # a league's evaluation games (and the evaluator's opponent pool)
SINGLE_AGENT_EVAL_SEED_OFFSET = 1_000_003  # a single-agent run's evaluation episodes
WORKER_SEED_STRIDE = 1000  # a worker process's global RNGs: seed + stride * index + 17


def player_seed(base: int, player_index: int) -> int:
    """Seed of what a collector makes for league player ``player_index`` (its envs; in a parallel
    collector, its copy of the player's policy): ``base`` is the run's or the collector's seed."""
    return base + PLAYER_SEED_STRIDE * (player_index + 1)


def collector_seed(seed: int, collector_index: int) -> int:
    """Base seed of parallel collector ``collector_index``."""
    return seed + COLLECTOR_SEED_STRIDE * collector_index


def worker_rng_seed(seed: int, worker_index: int) -> int:
    """Global RNG seed of a worker process: different per worker and from the commander's."""
    return seed + WORKER_SEED_STRIDE * worker_index + 17
