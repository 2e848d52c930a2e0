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

Both modes forget through :func:`forget_stale_opponents`: the serial run after each snapshot with the
league's roster, a parallel learner whenever the roster in the commander's reply to its ``publish``
changes. That roster travels trimmed by :func:`roster_to_send` (only the players still young enough:
the rest are forgotten either way) and is checked on arrival by :func:`roster_problem`.
"""
from __future__ import annotations

import functools
import hashlib
from typing import Callable, Dict, Iterable, Mapping, Optional, Union

import numpy as np

UNTAGGED = -1  # the code of a transition whose chunk did not say whom it was played against
MAX_ROSTER = 100_000  # players in a roster sent over the wire (a league with more is beyond any run here)
MAX_AGE = 2 ** 31 - 1  # the largest snapshot age a roster may name


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


Roster = Mapping[str, int]


def forget_stale_opponents(policies: Iterable, roster: Union[Roster, Callable[[], Roster]]) -> int:
    """Let every policy whose replay forgets by opponent (a ``forget_opponents(roster)`` method, as SAC's) drop its
    transitions against stale opponents; returns how many went. ``roster`` may be a function (the league's
    ``opponent_ages``): it is called once, and only if some policy forgets."""
    forgotten, ages = 0, None
    for policy in policies:
        forget = getattr(policy, 'forget_opponents', None)
        if forget is not None:
            if ages is None:
                ages = roster() if callable(roster) else roster
            forgotten += forget(ages)
    return forgotten


def roster_to_send(league, max_age: Optional[int]) -> Dict[str, Dict[str, int]]:
    """The fields a commander adds to its reply to a learner's ``publish``: none without ``replay.max_opponent_age``
    (nothing to forget) or for a league without opponents (no ``opponent_ages()``: a single-agent run), else
    ``opponent_ages``, the players no older than ``max_age`` (leaving the older out forgets the same transitions
    and bounds the message). The league is asked only when something will be sent."""
    ages = getattr(league, 'opponent_ages', None)
    if max_age is None or ages is None:
        return {}
    return dict(opponent_ages={str(pid): int(age) for pid, age in ages().items() if int(age) <= max_age})


def roster_problem(value) -> Optional[str]:
    """A message field check: a roster is at most ``MAX_ROSTER`` player ids, each with an int age in [0, MAX_AGE]."""
    if not isinstance(value, dict):
        return f'must be a dict of player id -> age, got {type(value).__name__}'
    if len(value) > MAX_ROSTER:
        return f'holds {len(value)} players; at most {MAX_ROSTER} expected'
    for pid, age in value.items():
        if not isinstance(pid, str) or isinstance(age, bool) or not isinstance(age, int) or not 0 <= age <= MAX_AGE:
            return f'[{str(pid)[:40]!r}] must map a player id to an int age in [0, {MAX_AGE}], got {str(age)[:40]}'
    return None
