"""The exact analysis of a league of three or more seats: NashConv of its live networks, its meta-strategy and its
recent average.

A game of S seats whose env offers ``exact_analysis(env_cfg)`` (OpenSpiel's three-player Kuhn and Leduc:
:class:`~sparring.dizoo.openspiel.exploitability.OpenSpielNashConv`) gives an analysis that turns a policy into a
*profile* and scores profiles and mixtures of them by their NashConv, exactly. :class:`MultiSeatLeagueExact` applies
it to a league's players and reports the NashConv of

* each active player's network;
* the population's **meta-strategy**: a mixture of the newest :data:`META_WINDOW` snapshots and the live players,
  found by multiplicative weights on their exact S-player meta-game (the counterpart of the two-seat leagues' Nash
  meta-strategy, as S-player games have no cheap exact Nash solver; the window shrinks to what the game's
  meta-game fits: three-player Leduc's is huge);
* the **recent average**: the newest :data:`AVERAGE_WINDOW` snapshots with equal weight (the average of the last
  iterates, which smooths the oscillation a last iterate keeps in a game of three or more players).

The same multiplicative weights feed the league's ``nash`` branch (:meth:`MultiSeatLeagueExact.meta_strategy`, the
league's meta-strategy source): the mixture over the branch's candidates (the snapshots) on their exact S-player
meta-game, from which each other seat's opponent is drawn on its own, PSRO's meta-strategy in a symmetric game of S
players. The candidates are frozen, so the mixture is solved once per new snapshot.

Profiles of frozen snapshots never change, so they are computed once (:class:`~sparring.league.exact_analysis.ProfileCache`).
The parameters every player starts from (the league's initial snapshots) are not learnt, and are left out.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from sparring.league.exact_analysis import ProfileCache
from sparring.worker.state_file import StateFileError

META_WINDOW = 32  # the newest snapshots the meta-strategy mixes (with the live players): its meta-game has K^S entries
AVERAGE_WINDOW = 8  # the newest snapshots the recent average mixes with equal weight


class MultiSeatLeagueExact:
    """An S-player analysis applied to a league's players. ``policy_of(ref)`` gives a live player's (ref = its id)
    or a snapshot's (ref = its param ref) policy; ``initial_refs`` are the param refs of the parameters players start
    from; ``damaged(ref, why)`` is told of a snapshot whose parameters cannot be read (it should quarantine it, so
    that ``dropped`` holds it: a quarantined snapshot is left out)."""

    def __init__(self, analysis, league, policy_of: Callable[[str], Any], initial_refs: Sequence[str] = (),
                 damaged: Optional[Callable[[str, str], None]] = None, dropped: Optional[Mapping] = None) -> None:
        self.analysis, self.league, self.policy_of = analysis, league, policy_of
        self.initial_refs = set(initial_refs)
        self.damaged = damaged
        self.dropped = dropped if dropped is not None else {}
        self.profiles = ProfileCache(analysis)
        self._frozen_mixture: Optional[Tuple[tuple, np.ndarray]] = None  # (ids, weights) of the last frozen group

    def forget(self, ref: str) -> None:
        """A snapshot stored anew under ``ref``: its profile and any kept mixture are out of date."""
        self.profiles.forget(ref)
        self._frozen_mixture = None

    def meta_strategy(self, player_ids: Sequence[str]) -> np.ndarray:
        """The ``nash`` branch's mixture over the league's players ``player_ids`` (oldest first): multiplicative
        weights on the exact S-player meta-game of the newest :data:`META_WINDOW` of them (fewer where the game's
        meta-game fits fewer), as the report's meta-strategy; the older ones weigh nothing, which keeps the solve's
        cost bounded in a long run. A quarantined snapshot, or one whose parameters cannot be read, weighs nothing
        (uniform weights where none is readable: the league draws again past them anyway)."""
        ids = tuple(player_ids)
        players = [self.league.get_player(pid) for pid in ids]
        frozen = all(player.kind != 'active' for player in players)
        if frozen and self._frozen_mixture is not None and self._frozen_mixture[0] == ids:
            return self._frozen_mixture[1]
        window = min(META_WINDOW, self.analysis.meta_capacity())
        readable: Dict[int, Any] = {}
        for k in reversed(range(len(players))):  # the newest first, until the window is full
            if len(readable) == window:
                break
            player = players[k]
            live = player.kind == 'active'
            ref = player.player_id if live else player.param_ref
            if ref in self.dropped:
                continue
            try:
                readable[k] = self.profiles.profile(ref, self.policy_of, frozen=not live)
            except StateFileError as err:
                if self.damaged is None:
                    raise
                self.damaged(ref, str(err))
        weights = np.full(len(ids), 1.0 / max(1, len(ids)))
        if readable:
            kept = sorted(readable)
            weights = np.zeros(len(ids))
            weights[kept] = self.analysis.meta_strategy([readable[k] for k in kept])
        if frozen:
            self._frozen_mixture = (ids, weights)
        return weights

    def report(self, active: Sequence[str]) -> dict:
        """NashConv of each ``active`` player's network (``nash_conv``), of the meta-strategy (``meta_nash_conv``,
        with ``meta_support``: the candidates it weighs above 1e-3) and of the recent average
        (``average_nash_conv``; the first player's network's while there is no snapshot), and how many snapshots
        were learnt."""
        analysis = self.analysis
        live = {pid: self.profiles.profile(pid, self.policy_of, frozen=False) for pid in active}
        nash_conv = {pid: analysis.nash_conv(profile) for pid, profile in live.items()}
        capacity = analysis.meta_capacity()
        window = max(0, min(META_WINDOW, capacity - len(live)))
        snapshots, learnt = self._snapshot_profiles(max(window, AVERAGE_WINDOW))
        recent = snapshots[-AVERAGE_WINDOW:]
        average = analysis.population_nash_conv(recent, [1.0] * len(recent)) if recent else nash_conv[active[0]]
        candidates = snapshots[len(snapshots) - window:] + list(live.values())
        candidates = candidates[max(0, len(candidates) - capacity):]
        weights = analysis.meta_strategy(candidates)
        return dict(nash_conv=nash_conv, meta_nash_conv=analysis.population_nash_conv(candidates, weights),
                    average_nash_conv=average, snapshots=learnt, meta_support=int((weights > 1e-3).sum()))

    def _snapshot_profiles(self, newest: int) -> Tuple[List[Any], int]:
        """The profiles of the ``newest`` readable learnt snapshots, oldest first (a damaged one is reported and
        left out), and how many learnt snapshots the league holds. Only the newest :data:`META_WINDOW` and
        :data:`AVERAGE_WINDOW` profiles stay kept (the nash branch reads no older ones), so neither the work of a
        report nor the memory kept grows with the run's length."""
        def learnt() -> List[str]:
            return [p.param_ref for p in self.league.historical_players
                    if p.param_ref not in self.initial_refs and p.param_ref not in self.dropped]
        profiles: List[Any] = []
        for ref in reversed(learnt()):
            if len(profiles) == newest:
                break
            try:
                profiles.append(self.profiles.profile(ref, self.policy_of, frozen=True))
            except StateFileError as err:
                if self.damaged is None:
                    raise
                self.damaged(ref, str(err))
        refs = learnt()  # without the snapshots found damaged just now
        self.profiles.keep_only(refs[-max(META_WINDOW, AVERAGE_WINDOW):])
        return profiles[::-1], len(refs)


class NashConvFigures:
    """How a :class:`MultiSeatLeagueExact` report is logged and drawn."""

    @staticmethod
    def scalars(report: dict) -> Dict[str, float]:
        """The report's TensorBoard scalars (under ``exact/``)."""
        return dict(meta_nash_conv=report['meta_nash_conv'], average_nash_conv=report['average_nash_conv'],
                    **{f'nash_conv/{pid}': v for pid, v in report['nash_conv'].items()})

    @staticmethod
    def course_entry(report: dict) -> dict:
        """What the report page's chart keeps of the report: NashConv by series."""
        return dict(measure='NashConv', values={'meta-strategy': report['meta_nash_conv'],
                                                'recent average': report['average_nash_conv'],
                                                **report['nash_conv']})

    @staticmethod
    def figures(report: dict, pid: str) -> Dict[str, float]:
        """The log line's figures for player ``pid``."""
        return dict(nash_conv=report['nash_conv'][pid], meta_nash_conv=report['meta_nash_conv'])

    @staticmethod
    def line(report: dict) -> str:
        """The closing log line."""
        return (f'exact: NashConv {report["nash_conv"]}, meta-strategy {report["meta_nash_conv"]:.4f}, recent '
                f'average {report["average_nash_conv"]:.4f}')
