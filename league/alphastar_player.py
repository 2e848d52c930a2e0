"""AlphaStar's league roles: main players, main exploiters and league exploiters.

* :class:`MainPlayer` — ``pfsp`` over all snapshots; ``sp`` against a main player, or, when
  that opponent is too strong (win rate not above ``min_valid_win_rate``), PFSP-variance over
  its snapshots; ``verification`` against main exploiters' snapshots it loses to, else against
  past selves of a main player it has forgotten how to beat (falls back to ``sp``). Never reset.
* :class:`MainExploiter` — plays a main player while its win rate against it is above
  ``min_valid_win_rate``, else that player's snapshots by PFSP-variance; snapshots once it beats
  the main players; always reset after a snapshot.
* :class:`LeagueExploiter` — PFSP (``linear_capped``) over all snapshots; reset after a
  snapshot with probability ``mutate_prob``.

With several categories (AlphaStar's races) the league has these three kinds in every category, and
"a main player", "all snapshots" and "main exploiters' snapshots" mean those of every category, as in
AlphaStar, where each race's agents meet all races: a main exploiter of one race trains against the main
players of all races. A player's ``opponent_categories`` (``'own'`` or ``'others'``) narrows each of these
groups to its own category or to the other ones.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Tuple

import numpy as np

from sparring.config.schema import in_range
from sparring.config.registry import PLAYER_REGISTRY
from sparring.league.player import ActivePlayer, Player
from sparring.league.roster import PlayerGroup


def forgotten_prefix_length(win_rates: np.ndarray) -> int:
    """How many of a player's snapshots (oldest first) may be *forgotten* opponents.

    A trailing run over which the win rate keeps falling (or stays flat) is ordinary progress:
    newer snapshots are harder. Only the snapshots before that run count; none if the whole
    sequence falls.
    """
    i = len(win_rates) - 1
    while i > 0 and win_rates[i - 1] >= win_rates[i]:
        i -= 1
    return i + 1 if i > 0 else 0


class _BeatsOrSnapshotsMixin:
    """Play ``opponent`` unless it is too strong; then PFSP over its snapshots."""

    # What the mixin reads of its host (an ActivePlayer), declared for the type checker.
    league: Any
    index: int
    cfg: Any  # an EasyDict

    if TYPE_CHECKING:  # the host's methods, as ActivePlayer defines them; nothing here at run time
        def _pfsp(self, group: PlayerGroup, weighting=None,
                  win_rates: Optional[np.ndarray] = None) -> Optional[Player]: ...

        def opponent_categories(self) -> Optional[Tuple[str, ...]]: ...

    def _opponent_or_its_snapshots(self, opponent: Player, weighting=None) -> Player:
        if float(self.league.payoff.win_rates_by_index(self.index, [opponent.index])[0]) > self.cfg.min_valid_win_rate:
            return opponent
        # No snapshot of it yet: it is still the best opponent there is.
        return self._pfsp(self.league.roster.snapshots_of(opponent.player_id), weighting) or opponent


@PLAYER_REGISTRY.register('main_player')
class MainPlayer(_BeatsOrSnapshotsMixin, ActivePlayer):
    """AlphaStar's main agent (see the module docstring)."""

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            super().default_config(),
            branch_probs=dict(pfsp=0.5, sp=0.35, verification=0.15),
            min_valid_win_rate=0.3,  # self-play only against main players it beats this often
            verification=dict(
                exploiter_win_rate=0.3,  # exploiter snapshots beaten less often than this are a threat
                forgotten_win_rate=0.7,  # past selves beaten less often than this are forgotten
            ),
        )

    config_constraints = dict(ActivePlayer.config_constraints, **{
        'min_valid_win_rate': in_range(0.0, 1.0),
        'verification.exploiter_win_rate': in_range(0.0, 1.0),
        'verification.forgotten_win_rate': in_range(0.0, 1.0),
    })

    def _main_players(self) -> PlayerGroup:
        return self.league.roster.active(MainPlayer, self.opponent_categories())

    def _any_main_player(self) -> Player:
        main = self._uniform(self._main_players())
        assert main is not None  # never empty: a main player itself or (validated) one in every other category
        return main

    def _sp_branch(self) -> Player:
        # AlphaStar: opponents of similar strength (variance) among a too-strong player's snapshots.
        return self._opponent_or_its_snapshots(self._any_main_player(), 'variance')

    def _verification_branch(self) -> Optional[Player]:
        roster, thresholds = self.league.roster, self.cfg.verification
        exploiter_snapshots = roster.historical(parent_type=MainExploiter, categories=self.opponent_categories())
        if len(exploiter_snapshots):
            rates = self.win_rates(exploiter_snapshots)
            if rates.min() < thresholds.exploiter_win_rate:
                return self._pfsp(exploiter_snapshots, 'squared', rates)
        past_selves = roster.snapshots_of(self._any_main_player().player_id)
        rates = self.win_rates(past_selves)
        keep = forgotten_prefix_length(rates)
        if keep and rates[:keep].min() < thresholds.forgotten_win_rate:
            return self._pfsp(PlayerGroup(past_selves.players[:keep], past_selves.indices[:keep]), 'squared',
                              rates[:keep])
        return None  # nothing to verify: the player falls back to self-play


@PLAYER_REGISTRY.register('main_exploiter')
class MainExploiter(_BeatsOrSnapshotsMixin, ActivePlayer):
    """AlphaStar's main exploiter (see the module docstring)."""

    requires = (MainPlayer,)

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            super().default_config(),
            branch_probs=dict(main_players=1.0),
            min_valid_win_rate=0.1,  # below this, train on the main player's snapshots instead
            pfsp_weighting='variance',
            mutate_prob=1.0,  # always restart from the initial parameters after a snapshot
        )

    config_constraints = dict(ActivePlayer.config_constraints, min_valid_win_rate=in_range(0.0, 1.0))

    def _main_players_branch(self) -> Optional[Player]:
        main = self._uniform(self.league.roster.active(MainPlayer, self.opponent_categories()))
        return None if main is None else self._opponent_or_its_snapshots(main)

    def _snapshot_opponents(self) -> PlayerGroup:
        return self.league.roster.active(MainPlayer, self.opponent_categories())


@PLAYER_REGISTRY.register('league_exploiter')
class LeagueExploiter(ActivePlayer):
    """AlphaStar's league exploiter (see the module docstring)."""

    @classmethod
    def default_config(cls) -> dict:
        return dict(super().default_config(), branch_probs=dict(pfsp=1.0), pfsp_weighting='linear_capped',
                    mutate_prob=0.25)
