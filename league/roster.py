"""The league's players in the order they joined, with cached groups for opponent choice.

Branches ask for groups such as "all historical players", "the snapshots of player X" or "the main
players of these categories" on every job; with thousands of snapshots, building those lists each time
would dominate, so a group is built once (players plus their payoff indices as a numpy array), cached, and extended
in place when a player joins.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Hashable, List, NamedTuple, Optional, Tuple

import numpy as np

from sparring.league.errors import LeagueError, unknown_player


class PlayerGroup(NamedTuple):
    """Players and their payoff indices, aligned."""

    players: Tuple
    indices: np.ndarray

    def __len__(self) -> int:
        return len(self.players)

    @property
    def ids(self) -> List[str]:
        return [p.player_id for p in self.players]

    def last(self, n: int) -> 'PlayerGroup':
        """The ``n`` most recent members (all of them if ``n`` >= the group's size)."""
        return PlayerGroup(self.players[-n:], self.indices[-n:]) if 0 < n < len(self.players) else self

    @classmethod
    def of(cls, players) -> 'PlayerGroup':
        players = tuple(players)
        return cls(players, np.fromiter((p.index for p in players), dtype=np.int64, count=len(players)))


class Roster:
    """Players by id and in joining order (the payoff's index order)."""

    def __init__(self) -> None:
        self.players: List = []
        self.by_id: Dict[str, Any] = {}  # the players (not named: player.py imports this module)
        self._groups: Dict[Hashable, Tuple[Callable[[Any], bool], PlayerGroup]] = {}

    def add(self, player) -> None:
        """Add a player that already has its payoff index."""
        if player.player_id in self.by_id:
            raise LeagueError(f'league: a player with id {player.player_id!r} already exists')
        self.players.append(player)
        self.by_id[player.player_id] = player
        for key, (keep, group) in self._groups.items():
            if keep(player):
                self._groups[key] = (keep, PlayerGroup(group.players + (player,), np.append(group.indices, player.index)))

    def get(self, player_id: str, where: str = 'league'):
        player = self.by_id.get(player_id) if isinstance(player_id, str) else None
        if player is None:
            raise unknown_player(player_id, self.by_id, where)
        return player

    def __len__(self) -> int:
        return len(self.players)

    def __iter__(self):
        return iter(self.players)

    def group(self, key: Hashable, keep: Callable[[Any], bool]) -> PlayerGroup:
        """The cached group named ``key`` of the players for which ``keep`` is true."""
        found = self._groups.get(key)
        if found is None:
            found = self._groups[key] = (keep, PlayerGroup.of(p for p in self.players if keep(p)))
        return found[1]

    def historical(self, parent_type: Optional[type] = None, categories: Optional[Tuple[str, ...]] = None) -> PlayerGroup:
        """All snapshots, or those whose parent is an instance of ``parent_type``; of every category, or only of
        ``categories``."""
        if parent_type is None and categories is None:
            return self.group('historical', lambda p: p.kind == 'historical')
        return self.group(('historical', parent_type, categories), lambda p: p.kind == 'historical' and (
            parent_type is None or isinstance(self.by_id.get(p.parent_id), parent_type)) and (
            categories is None or p.category in categories))

    def snapshots_of(self, player_id: str) -> PlayerGroup:
        """The snapshots of one player, oldest first."""
        return self.group(('snapshots', player_id),
                          lambda p: p.kind == 'historical' and p.parent_id == player_id)

    def active(self, of_type: Optional[type] = None, categories: Optional[Tuple[str, ...]] = None) -> PlayerGroup:
        """All active players, or those of ``of_type``; of every category, or only of ``categories``."""
        if categories is None:
            return self.group(('active', of_type), lambda p: p.kind == 'active' and (
                of_type is None or isinstance(p, of_type)))
        return self.group(('active', of_type, categories), lambda p: p.kind == 'active' and (
            of_type is None or isinstance(p, of_type)) and p.category in categories)

    def of_category(self, category: str) -> PlayerGroup:
        """The active and historical players of ``category``, in joining order."""
        return self.group(('category', category), lambda p: p.kind != 'reference' and p.category == category)

    def reference(self, categories: Optional[Tuple[str, ...]] = None) -> PlayerGroup:
        """The reference players; with ``categories``, those that meet them: of no category, or of one of them."""
        if categories is None:
            return self.group('reference', lambda p: p.kind == 'reference')
        return self.group(('reference', categories), lambda p: p.kind == 'reference' and (
            p.category is None or p.category in categories))
