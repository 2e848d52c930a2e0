"""Exact analysis of a game whose seats have roles: NashConv of a pair of role policies and each role's gain.

In a game with roles (a smuggler and a sheriff) each role has its own policy, so the symmetric tools of
:mod:`sparring.league.exact_analysis` (one policy in both seats, an antisymmetric meta-game) do not apply. What
does is the equilibrium test of the pair itself: with the smuggler's policy ``x`` and the sheriff's ``y``,

* a role's **best-response gain** is what it would win more by switching to a best response while the other
  role keeps its policy: ``gain_smuggler = max_x' u_smuggler(x', y) - u_smuggler(x, y)``, and likewise for the
  sheriff;
* the pair's **NashConv** is the sum of the two gains: 0 exactly at a Nash equilibrium, in general-sum games too.

An env class offers it as its ``exact_analysis(env_cfg)`` returning a :class:`RoleExactAnalysis` when the config
declares roles (OpenSpiel's two-player games do:
:class:`~sparring.dizoo.openspiel.role_analysis.OpenSpielRoleAnalysis`). :class:`LeagueRoleAnalysis` applies it to
a league of roles (``battle.exact_analysis``) and reports, each time the players are evaluated:

* ``nash_conv`` and ``gains`` (by role) of the *live pair*, the first active player of each role;
* ``exploitability`` by active player: the other role's best-response gain against it, the other role being
  played by that role's first active player (so the live pair's two figures sum to its NashConv);
* ``average_nash_conv`` of the *recent average*: each role's newest ``RECENT_WINDOW`` learnt players (its first
  active player and its newest snapshots) mixed with equal weights (drawn once before the game and followed
  throughout), and ``meta_exploitability``, half of it (OpenSpiel's exploitability is NashConv / 2), with the
  weights in ``meta_strategy``.

The league's ``nash`` branch keeps its default meta-game (the payoff's win rates) in a game with roles: a
meta-game of two populations is a bimatrix game, which the branch's zero-sum solver does not take.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from sparring.config.schema import ConfigError
from sparring.league.exact_analysis import ProfileCache
from sparring.worker.state_file import StateFileError

RECENT_WINDOW = 8  # learnt players per role in the recent average: the live one and the newest snapshots


class RoleExactAnalysis:
    """Exact evaluation of role policies in one game whose seats have ``roles`` (one per seat; subclasses implement
    :meth:`profile`, :meth:`pair` and :meth:`mixture`)."""

    roles: Tuple[str, ...] = ()

    def profile(self, policy, role: str) -> Any:
        """What the game needs to evaluate ``policy`` exactly in ``role``'s seat."""
        raise NotImplementedError

    def pair(self, profiles: Mapping[str, Any]) -> dict:
        """``dict(nash_conv, gains={role: gain}, values={role: its expected return})`` of the pair that plays
        ``profiles[role]`` in each role's seat."""
        raise NotImplementedError

    def mixture(self, profiles: Sequence[Any], weights: Sequence[float], role: str) -> Any:
        """The profile of "draw ``profiles[k]`` with probability ``weights[k]`` before the game, then follow it"."""
        raise NotImplementedError


class LeagueRoleAnalysis:
    """A :class:`RoleExactAnalysis` applied to a league of roles (see the module docstring): ``policy_of(ref,
    role)`` gives a live player's (ref = its id) or a snapshot's (ref = its param ref) policy for ``role``.
    ``damaged(ref, why)`` is told of a snapshot whose parameters cannot be read, which is then left out (as the
    symmetric :class:`~sparring.league.exact_analysis.LeagueExactAnalysis` does)."""

    def __init__(self, analysis, league, policy_of: Callable[..., Any],
                 damaged: Optional[Callable[[str, str], None]] = None, dropped: Optional[Mapping] = None) -> None:
        if not isinstance(analysis, RoleExactAnalysis):
            raise ConfigError(f'config key "battle.exact_analysis": the env\'s exact analysis ({type(analysis).__name__}) '
                              f'scores one policy playing both seats; expected one for a game whose seats have roles '
                              f'(a pair of role policies)')
        categories = set(league.cfg.get('player_category') or ())
        if categories != set(analysis.roles):
            raise ConfigError(f'config key "battle.exact_analysis": the league\'s categories {sorted(categories)} are '
                              f'not the game\'s roles {list(analysis.roles)}; expected the roles')
        self.analysis = analysis
        self.league = league
        self.policy_of = policy_of
        self.damaged = damaged
        self.dropped = dropped if dropped is not None else {}
        self.profiles = ProfileCache()  # snapshot profiles by param ref: a snapshot never changes

    def forget(self, ref: str) -> None:
        """A snapshot stored anew under ``ref``: its profile is out of date."""
        self.profiles.forget(ref)

    def report(self, active: Sequence[str]) -> dict:
        """The live pair's NashConv and gains, each active player's exploitability and the recent average's
        NashConv (see the module docstring)."""
        roles = self.analysis.roles
        role_of = {pid: self.league.get_player(pid).category for pid in active}
        live = {pid: self.analysis.profile(self.policy_of(pid, role_of[pid]), role_of[pid]) for pid in active}
        first = {}
        for role in roles:
            of_role = [pid for pid in active if role_of[pid] == role]
            if not of_role:
                raise ConfigError(f'exact analysis of roles: no active player of role {role!r} among {list(active)}; '
                                  f'expected one or more of each role {list(roles)}')
            first[role] = of_role[0]
        live_pair = self.analysis.pair({role: live[pid] for role, pid in first.items()})
        exploitability = {}
        for pid in active:
            mine = role_of[pid]
            other = next(role for role in roles if role != mine)
            figures = live_pair if pid == first[mine] else self.analysis.pair({mine: live[pid], other: live[first[other]]})
            exploitability[pid] = float(figures['gains'][other])
        mixed, weights, kept = {}, {}, []
        for role in roles:
            profiles, ids, refs = self._recent(role, first[role], live[first[role]])
            mixed[role] = self.analysis.mixture(profiles, [1.0] * len(profiles), role)
            weights.update({pid: 1.0 / len(ids) for pid in ids})
            kept += refs
        self.profiles.keep_only(kept)  # the recent averages' snapshots only: no more, however long the run
        average = self.analysis.pair(mixed)
        return dict(exploitability=exploitability, meta_exploitability=average['nash_conv'] / 2,
                    meta_strategy=weights, nash_conv=live_pair['nash_conv'],
                    gains={role: float(g) for role, g in live_pair['gains'].items()},
                    values={role: float(v) for role, v in live_pair['values'].items()},
                    average_nash_conv=average['nash_conv'], pair=dict(first))

    def _recent(self, role: str, live_id: str, live_profile) -> Tuple[List[Any], List[str], List[str]]:
        """The profiles and ids of ``role``'s recent average (its newest readable snapshots and its live player),
        and the snapshots' param refs."""
        snapshots = [p for p in self.league.historical_players if p.category == role and p.param_ref not in
                     self.dropped]
        profiles, ids, refs = [live_profile], [live_id], []
        for player in reversed(snapshots):
            if len(ids) >= RECENT_WINDOW:
                break
            profile = self._snapshot_profile(player.param_ref, role)
            if profile is not None:
                profiles.append(profile)
                ids.append(player.player_id)
                refs.append(player.param_ref)
        return profiles, ids, refs

    def _snapshot_profile(self, ref: str, role: str):
        try:
            return self.profiles.frozen(ref, lambda: self.analysis.profile(self.policy_of(ref, role), role))
        except StateFileError as err:
            if self.damaged is None:
                raise
            self.damaged(ref, str(err))
            return None


class RoleNashConvFigures:
    """How a :class:`LeagueRoleAnalysis` report is logged and drawn (the coordinator's ``exact_figures``)."""

    @staticmethod
    def scalars(report: dict) -> Dict[str, float]:
        """The report's TensorBoard scalars (under ``exact/``)."""
        return dict(nash_conv=report['nash_conv'], average_nash_conv=report['average_nash_conv'],
                    **{f'gain/{role}': g for role, g in report['gains'].items()},
                    **{f'exploitability/{pid}': e for pid, e in report['exploitability'].items()})

    @staticmethod
    def course_entry(report: dict) -> dict:
        """What the report page's chart keeps of the report: NashConv by series."""
        return dict(measure='NashConv', values={'live pair': report['nash_conv'],
                                                'recent average': report['average_nash_conv']})

    @staticmethod
    def figures(report: dict, pid: str) -> Dict[str, float]:
        """The log line's figures for player ``pid``: the live pair's NashConv and the player's exploitability."""
        return dict(nash_conv=report['nash_conv'], expl=report['exploitability'][pid])

    @staticmethod
    def line(report: dict) -> str:
        """The closing log line."""
        gains = ', '.join(f'{role} {g:.4f}' for role, g in report['gains'].items())
        return (f'exact: NashConv of the live pair {report["nash_conv"]:.4f} (best-response gains: {gains}), of the '
                f'recent average {report["average_nash_conv"]:.4f}')
