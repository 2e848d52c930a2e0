"""Saving and restoring a whole league: the state that decides its future choices.

:class:`LeagueStateMixin` gives a league ``state_dict()`` / ``load_state_dict()`` (players,
payoff, ratings, RNG and counters as plain data) and ``save(path)`` / ``restore(path)`` /
``load(path)`` (that data in one file, through :mod:`sparring.league.persistence`). A restore
rebuilds the active and reference players from the league's config and takes everything else
from the state; on any error the league is left as it was.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, List, Optional

import numpy as np

from sparring.config.registry import LEAGUE_REGISTRY, RegistryError
from sparring.league.config_util import to_plain
from sparring.league.errors import LeagueError
from sparring.league.payoff import BattleSharedPayoff
from sparring.league.persistence import FORMAT_VERSION, load_state, save_state
from sparring.league.player import ActivePlayer, HistoricalPlayer, Player, ReferencePlayer
from sparring.league.rating import LeagueRatings
from sparring.league.roster import Roster
from sparring.worker.format_version import FORMAT_KEY, refusal


class LeagueStateMixin:
    """State of a league built on :class:`~sparring.league.base_league.BaseLeague`'s attributes
    (``cfg``, ``rng``, ``payoff``, ``ratings``, ``roster``, the job counters and its lock)."""

    # What the mixin reads of its host, declared for the type checker (BaseLeague sets and defines them).
    cfg: Any  # an EasyDict
    rng: np.random.Generator
    payoff: BattleSharedPayoff
    ratings: LeagueRatings
    roster: Roster
    _lock: threading.RLock
    _job_count: int
    _eval_cursor: dict

    if TYPE_CHECKING:  # the host's methods, as BaseLeague defines them; nothing here at run time
        def __init__(self, cfg: Optional[dict] = None) -> None: ...
        def _reset_state(self) -> None: ...
        def _new_active_players(self) -> List[ActivePlayer]: ...
        def _new_reference_players(self) -> List[ReferencePlayer]: ...
        def _add_player(self, player: Player, rate: bool = True, **rating) -> None: ...

    @property
    def type_name(self) -> Optional[str]:
        return type(self).__dict__.get('registry_name')

    def state_dict(self) -> dict:
        """Everything that decides the league's future: players, payoff, ratings, RNG, counters."""
        with self._lock:
            return dict(
                format_version=FORMAT_VERSION,  # a checkpoint embeds this dict: it carries its own version
                league_type=self.type_name,
                config=to_plain(self.cfg),
                rng_state=to_plain(self.rng.bit_generator.state),
                job_count=self._job_count,
                eval_cursor=dict(self._eval_cursor),
                players=[p.state_dict() for p in self.roster.players],
                payoff=self.payoff.state_dict(),
                ratings=self.ratings.state_dict(),
            )

    def load_state_dict(self, state: dict) -> None:
        """Restore a :meth:`state_dict`. The roster of active and reference players must match this
        league's config; the rest (snapshots, payoff, ratings, RNG) comes from ``state``. On any
        error the league is left as it was."""
        if not isinstance(state, Mapping):
            raise LeagueError(f'load_state_dict: expected a dict, got {type(state).__name__}')
        if state.get(FORMAT_KEY) != FORMAT_VERSION:
            raise LeagueError(refusal('checkpoint', 'league state', state.get(FORMAT_KEY), FORMAT_VERSION))
        if state.get('league_type') != self.type_name:
            raise LeagueError(f'league state: saved from a {state.get("league_type")!r} league, '
                              f'loading into {self.type_name!r}')
        with self._lock:
            saved_attrs = dict(self.__dict__)
            try:
                self._restore_from(state)
            except BaseException as err:
                self.__dict__.clear()
                self.__dict__.update(saved_attrs)
                if isinstance(err, (KeyError, TypeError, ValueError)) and not isinstance(err, LeagueError):
                    raise LeagueError(f'league state: malformed ({type(err).__name__}: {err})') from err
                raise

    def _restore_from(self, state: dict) -> None:
        self._reset_state()
        fresh = {p.player_id: p for p in self._new_active_players() + self._new_reference_players()}
        saved_players = state['players']
        saved_fixed = {s['player_id'] for s in saved_players if s['kind'] in ('active', 'reference')}
        if saved_fixed != set(fresh):
            raise LeagueError(f'league state: its active and reference players {sorted(saved_fixed)} differ from '
                              f'this config\'s {sorted(fresh)}')
        for saved in saved_players:
            player: Player
            if saved['kind'] == 'historical':
                snapshot = player = HistoricalPlayer.from_state_dict(saved)
                if snapshot.parent_id not in fresh:
                    raise LeagueError(f'league state: snapshot {snapshot.player_id!r} has unknown parent '
                                      f'{snapshot.parent_id!r}')
            else:
                player = fresh[saved['player_id']]
                if player.kind != saved['kind']:
                    raise LeagueError(f'league state: {player.player_id!r} was a {saved["kind"]} player, '
                                      f'configured as {player.kind}')
            self._add_player(player, rate=False)
        self.payoff.load_state_dict(state['payoff'])
        if list(self.payoff.player_ids) != [p.player_id for p in self.roster.players]:
            raise LeagueError('league state: the payoff\'s players differ from the saved players')
        self.ratings.load_state_dict(state['ratings'])
        for system in self.ratings.systems:
            missing = [p.player_id for p in self.roster.players if p.player_id not in system]
            if missing:
                raise LeagueError(f'league state: no {system.name} rating for {missing[:5]}')
        for saved in saved_players:
            if saved['kind'] == 'active':
                self.roster.by_id[saved['player_id']].load_state_dict(saved)
        self.rng.bit_generator.state = state['rng_state']
        self._job_count = int(state['job_count'])
        self._eval_cursor = {str(k): int(v) for k, v in state['eval_cursor'].items()}

    def save(self, path: str) -> str:
        """Write :meth:`state_dict` to ``path`` atomically; returns the path."""
        return save_state(self.state_dict(), path)

    def restore(self, path: str) -> None:
        """Load a file written by :meth:`save` into this league."""
        self.load_state_dict(load_state(path))

    @classmethod
    def load(cls, path: str, cfg: Optional[dict] = None) -> 'LeagueStateMixin':
        """A league rebuilt from a saved file (with the saved config unless ``cfg`` is given)."""
        state = load_state(path)
        league_cls: Callable[..., Any] = cls
        if cls.__dict__.get('registry_name') is None:  # BaseLeague.load: the saved type decides
            saved_type: Any = state.get('league_type')  # read from the file: the registry refuses a wrong one
            try:
                league_cls = LEAGUE_REGISTRY.get(saved_type)
            except RegistryError as err:
                raise LeagueError(f'{path}: {err}') from None
        league = league_cls(state['config'] if cfg is None else cfg)
        league.load_state_dict(state)
        return league
