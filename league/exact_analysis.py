"""Exact game-theoretic evaluation of policies in small two-player zero-sum battle games.

A battle env class that can afford it offers ``exact_analysis(env_cfg)``, returning an
:class:`ExactAnalysis`. It turns a policy into a *profile* (whatever the game needs to evaluate
it exactly: a matrix game's mixed strategy per seat, a poker game's action probabilities at every
information state) and from profiles computes, with no sampling noise:

* ``seat_values(rows, cols)`` ``[N, M]``: seat 0's expected return when policy ``rows[i]`` holds
  seat 0 and ``cols[j]`` seat 1;
* ``exploitability(profile)``: ``NashConv / 2`` of the policy playing both seats;
* ``population_exploitability(profiles, weights)``: the same for the meta-strategy "draw policy k
  with probability ``weights[k]`` before the game and follow it".

From these the base class derives the *exact meta-game* of a population, the antisymmetric
matrix a player who takes both seats equally often sees (``(V - V^T) / 2``), and its Nash
mixture: what PSRO calls the meta-strategy. The league can sample opponents from it (its ``nash``
branch) instead of from the noisier win-rate table, and the evaluator reports how exploitable it is.

Profiles of frozen snapshots never change, so :class:`ProfileCache` keeps them by parameter ref.
:class:`LeagueExactAnalysis` applies an analysis to a league's players: the exact meta-game its ``nash``
branch samples from, and the exploitability report of a run.
"""
from __future__ import annotations

from typing import Any, Callable, Collection, Dict, Mapping, Optional, Sequence, Union

import numpy as np

from sparring.league.meta_strategy import symmetric_nash
from sparring.worker.state_file import StateFileError


class ExactAnalysis:
    """Exact evaluation of policies in one game (subclasses implement the three abstract methods)."""

    def profile(self, policy) -> Any:
        raise NotImplementedError

    def seat_values(self, rows: Sequence[Any], cols: Sequence[Any]) -> np.ndarray:
        raise NotImplementedError

    def exploitability(self, profile: Any) -> float:
        raise NotImplementedError

    def population_exploitability(self, profiles: Sequence[Any], weights: Union[Sequence[float], np.ndarray]) -> float:
        raise NotImplementedError

    # -- derived -----------------------------------------------------------------------------------
    def meta_game(self, profiles: Sequence[Any]) -> np.ndarray:
        """``[N, N]`` antisymmetric: i's expected return against j, averaged over the two seats."""
        values = self.seat_values(profiles, profiles)
        return 0.5 * (values - values.T)

    def meta_strategy(self, profiles: Sequence[Any]) -> np.ndarray:
        """The Nash mixture of :meth:`meta_game` (the most spread-out one when several exist)."""
        return symmetric_nash(self.meta_game(profiles))

    def report(self, profiles: Dict[str, Any], active: Sequence[str]) -> dict:
        """Exploitability of each ``active`` player and of the population's Nash meta-strategy over all
        ``profiles`` (active players included), with the meta-strategy's weights by player id."""
        ids = list(profiles)
        population = [profiles[i] for i in ids]
        weights = self.meta_strategy(population)
        return dict(exploitability={pid: self.exploitability(profiles[pid]) for pid in active},
                    meta_exploitability=self.population_exploitability(population, weights),
                    meta_strategy={pid: float(w) for pid, w in zip(ids, weights)})


class ProfileCache:
    """Profiles by parameter ref: a frozen snapshot is evaluated once; live players every time asked. An analysis
    whose profiles need more than a policy (a role's) keeps its snapshots' with :meth:`frozen` and no ``analysis``."""

    def __init__(self, analysis: Optional[ExactAnalysis] = None) -> None:
        self.analysis = analysis
        self._frozen: Dict[str, Any] = {}

    def profile(self, ref: str, policy_of: Callable[[str], Any], frozen: bool) -> Any:
        analysis = self.analysis
        if analysis is None:
            raise TypeError('ProfileCache.profile: this cache was built without an analysis; use frozen(ref, compute)')
        if not frozen:
            return analysis.profile(policy_of(ref))
        return self.frozen(ref, lambda: analysis.profile(policy_of(ref)))

    def frozen(self, ref: str, compute: Callable[[], Any]) -> Any:
        """The kept profile of snapshot ``ref``, computed by ``compute()`` the first time."""
        if ref not in self._frozen:
            self._frozen[ref] = compute()
        return self._frozen[ref]

    def forget(self, ref: str) -> None:
        self._frozen.pop(ref, None)

    def keep_only(self, refs: Collection[str]) -> None:
        """Drop every kept profile but those of ``refs``: an analysis that reads only its newest snapshots keeps no
        more than those, however long the run."""
        for ref in [r for r in self._frozen if r not in refs]:
            del self._frozen[ref]


class LeagueExactAnalysis:
    """An exact analysis applied to a league's players, by id: live players' profiles are computed each time
    they are asked for, snapshots' once (:class:`ProfileCache`); ``policy_of(ref)`` gives a live player's
    (ref = its id) or a snapshot's (ref = its param ref) policy."""

    def __init__(self, analysis: ExactAnalysis, league, policy_of: Callable[[str], Any],
                 damaged: Optional[Callable[[str, str], None]] = None, dropped: Optional[Mapping] = None) -> None:
        """``damaged(ref, why)`` is told of a snapshot whose parameters cannot be read (``policy_of`` raised
        :class:`~sparring.worker.state_file.StateFileError`): it should quarantine it, so that ``dropped`` (the
        quarantined param refs) then holds it. A quarantined snapshot stands in the meta-game as a player that
        ties everyone (a zero row and column: the league does not draw it anyway) and is left out of the report."""
        self.analysis = analysis
        self.league = league
        self.policy_of = policy_of
        self.damaged = damaged
        self.dropped = dropped if dropped is not None else {}
        self.profiles = ProfileCache(analysis)
        self._frozen_meta_game: Optional[tuple] = None  # (ids, matrix) of the last all-frozen group asked for

    def meta_game(self, player_ids: Sequence[str]) -> np.ndarray:
        """The exact meta-game of the players (the league's ``nash`` branch asks once per game)."""
        # A group of snapshots only changes when one is added, so its matrix is kept rather than
        # recomputed on every job.
        ids = tuple(player_ids)
        frozen = all(self.league.get_player(pid).kind != 'active' for pid in ids)
        if frozen and self._frozen_meta_game is not None and self._frozen_meta_game[0] == ids:
            return self._frozen_meta_game[1]
        profiles = self._profiles_of(ids)
        readable = [i for i, profile in enumerate(profiles) if profile is not None]
        if len(readable) == len(ids):
            matrix = self.analysis.meta_game(profiles)
        else:
            matrix = np.zeros((len(ids), len(ids)))
            matrix[np.ix_(readable, readable)] = self.analysis.meta_game([profiles[i] for i in readable])
        if frozen:
            self._frozen_meta_game = (ids, matrix)
        return matrix

    def forget(self, ref: str) -> None:
        """A snapshot stored anew under ``ref``: its profile and any kept meta-game are out of date."""
        self.profiles.forget(ref)
        self._frozen_meta_game = None

    def report(self, active: Sequence[str]) -> dict:
        """Exploitability of each ``active`` player and of the Nash meta-strategy over every learnt player."""
        ids = [p.player_id for p in self.league.active_players + self.league.historical_players]
        profiles = {pid: profile for pid, profile in zip(ids, self._profiles_of(ids)) if profile is not None}
        return self.analysis.report(profiles, active)

    def _profiles_of(self, player_ids: Sequence[str]) -> list:
        """Each player's profile; None for a quarantined snapshot (one found damaged now is reported first)."""
        profiles = []
        for pid in player_ids:
            player = self.league.get_player(pid)
            frozen = player.kind != 'active'
            ref = player.param_ref if frozen else pid
            profile = None
            if not (frozen and ref in self.dropped):
                try:
                    profile = self.profiles.profile(ref, self.policy_of, frozen)
                except StateFileError as err:
                    if not frozen or self.damaged is None:
                        raise
                    self.damaged(ref, str(err))
            profiles.append(profile)
        return profiles


class ExploitabilityFigures:
    """How an exploitability report (of :class:`LeagueExactAnalysis`, or of a game with roles) is logged and drawn."""

    @staticmethod
    def scalars(report: dict) -> Dict[str, float]:
        """The report's TensorBoard scalars (under ``exact/``)."""
        return dict(meta_exploitability=report['meta_exploitability'],
                    **{f'exploitability/{pid}': e for pid, e in report['exploitability'].items()})

    @staticmethod
    def course_entry(report: dict) -> dict:
        """What the report page's exploitability chart keeps of the report."""
        return dict(meta_exploitability=report['meta_exploitability'], exploitability=dict(report['exploitability']))

    @staticmethod
    def figures(report: dict, pid: str) -> Dict[str, float]:
        """The log line's figures for player ``pid``."""
        return dict(expl=report['exploitability'][pid], meta_expl=report['meta_exploitability'])

    @staticmethod
    def line(report: dict) -> str:
        """The closing log line."""
        return (f'exact: exploitability {report["exploitability"]}, population meta-strategy '
                f'{report["meta_exploitability"]:.4f}')


def exact_analysis_of(env_cls, env_cfg) -> Optional[ExactAnalysis]:
    """The env class's exact analysis for this config, or None where the game offers none."""
    make = getattr(env_cls, 'exact_analysis', None)
    return make(env_cfg) if make is not None else None
