"""The two ready leagues: naive self-play and AlphaStar's roster.

Both accept any registered active player type in ``active_players``; they differ in their
default roster and defaults:

* :class:`OneVsOneLeague` (``'one_vs_one'``) — by default one ``naive_sp`` player; the place
  for naive, ML-Agents (``mlagents_sp``) and OpenAI Five (``openai_five_sp``) self-play and for
  custom players.
* :class:`AlphaStarLeague` (``'alphastar'``) — by default one ``main_player``, one
  ``main_exploiter`` and two ``league_exploiter``; exploiters reset to ``init_param_ref``
  (in AlphaStar, the supervised agent's parameters).
"""
from __future__ import annotations

from sparring.config.registry import LEAGUE_REGISTRY
from sparring.league.base_league import BaseLeague


@LEAGUE_REGISTRY.register('one_vs_one')
class OneVsOneLeague(BaseLeague):
    """Two-player games; naive self-play by default."""

    DEFAULT_ACTIVE_PLAYERS = dict(naive_sp=1)


@LEAGUE_REGISTRY.register('alphastar')
class AlphaStarLeague(BaseLeague):
    """AlphaStar's league: main players, main exploiters and league exploiters."""

    DEFAULT_ACTIVE_PLAYERS = dict(main_player=1, main_exploiter=1, league_exploiter=2)
