"""Whom the transitions in a self-play replay buffer were played against, and forgetting those that went stale.

In a league the opponents change while the buffer remembers: a transition played against a snapshot
that has since left the league, or that is many snapshots old, teaches values of a game no longer
played. Battle chunks that say whom each move was against carry two ``[T, B]`` int64 arrays:
``opponent``, the opponent's player id as :func:`opponent_code` (a stable 63-bit hash, so chunks stay
numeric on the wire and every process agrees on the code), and ``opponent_version``, its parameter
version; both are stored with each transition.

``replay.max_opponent_age`` (None: keep everything) bounds what is kept: :meth:`OpponentLedger.stale`
marks transitions against opponents absent from the league's roster, or more than that many
snapshots old. The roster maps each player in the league to its age in snapshots: 0 for active and
reference players, k for the k-th newest snapshot of a lineage (the newest is 1).
"""
from __future__ import annotations

import functools
import hashlib
from typing import Dict, Iterable, Mapping, Optional

import numpy as np

UNTAGGED = -1  # the code of a transition whose chunk did not say whom it was played against


@functools.lru_cache(maxsize=4096)  # a battle collector asks for every slot at every step: hash each id once
def opponent_code(player_id: str) -> int:
    """A player id as a non-negative int64, the same in every process (unlike ``hash``)."""
    digest = hashlib.blake2b(str(player_id).encode(), digest_size=8).digest()
    return int.from_bytes(digest, 'little') & (2 ** 63 - 1)


class OpponentLedger:
    """The player ids behind the codes seen, for reports (a code never named shows as ``#<hex>``)."""

    def __init__(self) -> None:
        self.names: Dict[int, str] = {}

    def remember(self, player_ids: Iterable[str]) -> Dict[str, int]:
        """Learn the codes of ``player_ids``; returns id -> code."""
        codes = {str(pid): opponent_code(pid) for pid in player_ids}
        self.names.update({code: pid for pid, code in codes.items()})
        return codes

    def name(self, code: int) -> str:
        return '(untagged)' if code == UNTAGGED else self.names.get(int(code), f'#{int(code):x}')

    def mix(self, codes: np.ndarray) -> Dict[str, float]:
        """The fraction of ``codes`` (a buffer's stored column) per opponent, largest first."""
        codes = np.asarray(codes)
        if len(codes) == 0:
            return {}
        values, counts = np.unique(codes, return_counts=True)
        order = np.argsort(-counts, kind='stable')
        return {self.name(values[i]): float(counts[i]) / len(codes) for i in order}

    def stale(self, codes: np.ndarray, roster: Mapping[str, int], max_age: Optional[int]) -> np.ndarray:
        """Which of ``codes`` are against an opponent not in ``roster`` or older than ``max_age`` snapshots
        (untagged transitions are kept: nothing is known against them)."""
        codes = np.asarray(codes)
        by_id = self.remember(roster)
        kept = np.array([code for pid, code in by_id.items() if max_age is None or int(roster[pid]) <= max_age],
                        dtype=np.int64)
        return (codes != UNTAGGED) & ~np.isin(codes, kept)

    def state_dict(self) -> dict:
        return dict(names=[self.names[code] for code in sorted(self.names)])

    def load_state_dict(self, state: dict) -> None:
        self.names = {}
        self.remember(state['names'])
