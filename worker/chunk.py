"""The trajectory chunk: columnar ``[T, B, ...]`` numpy arrays plus the metadata a learner needs.

``data`` holds the arrays the policy's chunk spec names (:mod:`sparring.policy.chunk_spec`): every chunk's
``obs, action, log_prob, value, reward, terminated, truncated, next_value`` (``action`` is ``[T, B]``
integers for a ``Discrete`` space, ``[T, B, *shape]`` floats for a ``Box``), a battle chunk's
``train_mask``, ``value_mask`` and ``action_mask``, and what the policy adds (``next_obs`` for those that
bootstrap from it, a recurrent policy's ``window_state_<i>`` arrays ``[W, B, ...]`` at the start of each
BPTT window, the search's visits and labels). :meth:`Chunk.validate` checks it against that spec.
``version`` is the parameter version that produced the chunk (staleness = learner version - version);
``chunk_id`` makes every chunk countable exactly once.
"""
from __future__ import annotations

import dataclasses
import uuid
from typing import Dict, List, Optional, Tuple

import numpy as np

from sparring.policy.chunk_spec import ChunkSpec

# The arrays every chunk holds whatever its policy (the wire's schema requires them before a spec is at hand).
REQUIRED_KEYS = ('obs', 'action', 'log_prob', 'value', 'reward', 'terminated', 'truncated', 'next_value')


@dataclasses.dataclass
class Chunk:
    data: Dict[str, np.ndarray]
    version: int
    player_id: Optional[str] = None
    chunk_id: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)
    episode_returns: List[float] = dataclasses.field(default_factory=list)
    episode_lengths: List[int] = dataclasses.field(default_factory=list)
    # Battle chunks: (opponent_id, 'win' | 'draw' | 'loss' from the home view) per finished game.
    results: List[Tuple[str, str]] = dataclasses.field(default_factory=list)
    # Chunks of games of three or more seats: (the job's player ids, each one's rank, each one's team or None in a
    # free-for-all) per finished game.
    rankings: List[Tuple[Tuple[str, ...], Tuple[int, ...], Optional[Tuple[int, ...]]]] = \
        dataclasses.field(default_factory=list)
    # Env steps the chunk took. None: T * B (one column per env); a battle chunk has a column
    # per seat, so it says so itself.
    env_steps: Optional[int] = None

    def __post_init__(self) -> None:
        if self.env_steps is None:
            reward = self.data['reward']
            self.env_steps = int(reward.shape[0] * reward.shape[1])

    def validate(self, spec: ChunkSpec) -> None:
        """Raise :class:`~sparring.policy.chunk_spec.ChunkError` (a ValueError) naming the first field that does not
        fit ``spec``: one it does not name, a required one missing, a wrong dtype or shape, a value out of range."""
        spec.validate(self.data, where=f'chunk {self.chunk_id}')
