"""The trajectory chunk: columnar ``[T, B, ...]`` numpy arrays plus the metadata a learner needs.

``data`` holds ``obs, action, log_prob, value, reward, terminated, truncated, next_value`` (``action``
is ``[T, B]`` integers for a ``Discrete`` space, ``[T, B, *shape]`` floats for a ``Box``; and
optionally ``action_mask``, ``train_mask`` and, for policies that set ``needs_next_obs``,
``next_obs``: the observation after each step, a finished episode's final one). A recurrent
policy's chunk adds its state at the start of each truncated-BPTT window: ``window_state_<i>`` arrays ``[W, B, ...]`` (component i of
the state, W windows of T / W steps each). ``version`` is the parameter version that
produced the chunk (staleness = learner version - version); ``chunk_id`` makes every chunk
countable exactly once.
"""
from __future__ import annotations

import dataclasses
import uuid
from typing import Dict, List, Optional, Tuple

import numpy as np

from sparring.policy.chunk_spec import WINDOW_PREFIX

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
    # Env steps the chunk took. None: T * B (one column per env); a battle chunk has a column
    # per seat, so it says so itself.
    env_steps: Optional[int] = None

    def __post_init__(self) -> None:
        if self.env_steps is None:
            reward = self.data['reward']
            self.env_steps = int(reward.shape[0] * reward.shape[1])

    def validate(self) -> None:
        """Raise ValueError naming the first missing or mis-shaped array."""
        missing = [k for k in REQUIRED_KEYS if k not in self.data]
        if missing:
            raise ValueError(f'chunk {self.chunk_id}: missing arrays {missing}; expected {list(REQUIRED_KEYS)}')
        shape = self.data['reward'].shape
        if len(shape) != 2:
            raise ValueError(f'chunk {self.chunk_id}: reward must be [T, B], got shape {shape}')
        windows = set()
        for key, arr in self.data.items():
            if key.startswith(WINDOW_PREFIX) and isinstance(arr, np.ndarray) and arr.ndim >= 2 \
                    and arr.shape[1] == shape[1] and arr.shape[0] >= 1 and shape[0] % arr.shape[0] == 0:
                windows.add(arr.shape[0])
                continue
            if key.startswith(WINDOW_PREFIX):
                got = getattr(arr, 'shape', type(arr).__name__)
                raise ValueError(f'chunk {self.chunk_id}: window array {key!r} must be [W, B, ...] with B = '
                                 f'{shape[1]} and W dividing T = {shape[0]}, got {got}')
            if not isinstance(arr, np.ndarray) or arr.shape[:2] != shape:
                got = getattr(arr, 'shape', type(arr).__name__)
                raise ValueError(f'chunk {self.chunk_id}: array {key!r} must start with [T, B] = {shape}, got {got}')
        if len(windows) > 1:
            raise ValueError(f'chunk {self.chunk_id}: window arrays disagree on the number of windows: '
                             f'{sorted(windows)}')
