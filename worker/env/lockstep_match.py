"""Two policies playing one game per env of a vectorised battle env, all games at once, to the first ending.

For benchmarks and tests that pit bots or players against each other without the league's machinery:
each env's first game counts; later games the env starts on its own are ignored.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from sparring.worker.env.battle_api import VecBattleEnv


def first_game_results(env: VecBattleEnv, policies: Sequence) -> np.ndarray:
    """Seat 0's result (+1 win, 0 draw, -1 loss) of the first game in each env; ``policies[k]`` plays seat k.

    Each policy is asked for every env at every step (``act(obs, action_mask=...)``, as bots and PPO
    policies take it); the env only applies the seat to move's action.
    """
    step = env.reset()
    results = np.zeros(env.num_envs, np.int64)
    finished = np.zeros(env.num_envs, bool)
    while not finished.all():
        actions = np.stack([policies[k].act(step.obs[:, k], action_mask=step.action_mask[:, k]).action
                            for k in range(len(policies))], axis=1)
        step = env.step(actions)
        ended = (step.terminated | step.truncated) & ~finished
        results[ended] = step.result[ended, 0]
        finished |= ended
    return results
