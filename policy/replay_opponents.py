"""Whom the transitions in a self-play replay buffer were played against, and forgetting those that went stale.

In a league the opponents change while the buffer remembers: a transition played against a snapshot
that has since left the league, or that is many snapshots old, teaches values of a game no longer
played. Battle chunks that say whom each move was against (``opponent_id``: the player id, and
``opponent_version``: its parameter version, ``[T, B]`` arrays) have both stored with each transition;
the id as a small integer code (:class:`OpponentLedger`), so the buffer's columns keep fixed widths.

``replay.max_opponent_age`` (None: keep everything) bounds what is kept: :meth:`OpponentLedger.stale`
marks transitions against opponents absent from the league's roster, or more than that many
snapshots old. The roster maps each player in the league to its age in snapshots: 0 for active and
reference players, k for the k-th newest snapshot of a lineage (the newest is 1).
"""
from __future__ import annotations

from typing import Dict, Mapping, Optional

import numpy as np

UNTAGGED = -1  # the code of a transition whose chunk did not say whom it was played against


class OpponentLedger:
    def __init__(self) -> None:
        self.ids: list[str] = []
        self._codes: Dict[str, int] = {}

    def encode(self, opponent_id: np.ndarray) -> np.ndarray:
        """Player ids (strings) as int32 codes, new ids given the next code."""
        flat = np.asarray(opponent_id).reshape(-1)
        names, inverse = np.unique(flat.astype(str), return_inverse=True)
        codes = np.array([self._code(str(name)) for name in names], dtype=np.int32)
        return codes[inverse].reshape(np.shape(opponent_id))

    def _code(self, name: str) -> int:
        if name not in self._codes:
            self._codes[name] = len(self.ids)
            self.ids.append(name)
        return self._codes[name]

    def mix(self, codes: np.ndarray) -> Dict[str, float]:
        """The fraction of ``codes`` (a buffer's stored column) per opponent id, largest first."""
        if len(codes) == 0:
            return {}
        counts = np.bincount(np.asarray(codes)[np.asarray(codes) >= 0], minlength=len(self.ids))
        shares = {self.ids[i]: float(c) / len(codes) for i, c in enumerate(counts) if c}
        untagged = int(np.count_nonzero(np.asarray(codes) < 0))
        if untagged:
            shares['(untagged)'] = untagged / len(codes)
        return dict(sorted(shares.items(), key=lambda kv: -kv[1]))

    def stale(self, codes: np.ndarray, roster: Mapping[str, int], max_age: Optional[int]) -> np.ndarray:
        """Which of ``codes`` are against an opponent not in ``roster`` or older than ``max_age`` snapshots
        (untagged transitions are kept: nothing is known against them)."""
        codes = np.asarray(codes)
        keep_code = np.array([name in roster and (max_age is None or int(roster[name]) <= max_age)
                              for name in self.ids], dtype=bool)
        tagged = codes >= 0
        stale = np.zeros(len(codes), dtype=bool)
        stale[tagged] = ~keep_code[codes[tagged]]
        return stale

    def state_dict(self) -> dict:
        return dict(ids=list(self.ids))

    def load_state_dict(self, state: dict) -> None:
        self.ids, self._codes = [], {}
        for name in state['ids']:
            self._code(str(name))
