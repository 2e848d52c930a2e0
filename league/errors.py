"""Exceptions raised by the league for things a caller can get wrong."""
from __future__ import annotations


class LeagueError(ValueError):
    """A malformed job result, player update or league state, or an impossible request."""


class UnknownPlayerError(LeagueError, KeyError):
    """A player id that the league (or payoff, or rating table) does not know."""

    def __str__(self) -> str:  # KeyError would print the message inside quotes
        return str(self.args[0]) if self.args else ''


def unknown_player(player_id, known, where: str) -> UnknownPlayerError:
    """Build the error for an unknown id, listing a few known ids so the typo is visible."""
    known = list(known)
    shown = ', '.join(repr(k) for k in known[:8]) + (f', ... ({len(known)} in all)' if len(known) > 8 else '')
    return UnknownPlayerError(f'{where}: unknown player id {player_id!r}; known ids: {shown or "(none)"}')
