"""Chunks the tests share: a small turn-based battle chunk whose moves carry the opponent they were played against."""
from __future__ import annotations

from typing import Dict, Sequence

import numpy as np

from sparring.policy.replay_opponents import opponent_code


def battle_chunk(opponents: Sequence[str], T: int = 6) -> Dict[str, np.ndarray]:
    """A turn-based chunk of ``len(opponents)`` columns, one opponent each (version 4), with 3 observation
    features and 3 actions; the home player is to move at every other row."""
    B = len(opponents)
    rng = np.random.default_rng(0)
    train = np.zeros((T, B), bool)
    train[::2] = True
    return dict(obs=rng.standard_normal((T, B, 3)).astype(np.float32),
                next_obs=rng.standard_normal((T, B, 3)).astype(np.float32),
                action=rng.integers(0, 3, (T, B)), action_mask=np.ones((T, B, 3), bool),
                reward=np.zeros((T, B), np.float32), terminated=np.zeros((T, B), bool),
                truncated=np.zeros((T, B), bool), train_mask=train,
                opponent=np.broadcast_to(np.array([opponent_code(o) for o in opponents]), (T, B)),
                opponent_version=np.full((T, B), 4))
