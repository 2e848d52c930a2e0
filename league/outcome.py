"""Game outcomes: the strings 'win' / 'draw' / 'loss' and their compact integer codes.

Outcomes are always given from the *home* player's point of view; the away player's view is
the reverse (a win for the home player is a loss for the away player). DI-engine's spellings
``'wins'``, ``'draws'`` and ``'losses'`` are read as the same outcomes.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import List

import numpy as np

from sparring.league.errors import LeagueError

WIN, DRAW, LOSS = 0, 1, 2
OUTCOMES = ('win', 'draw', 'loss')
OUTCOME_CODE = {name: code for code, name in enumerate(OUTCOMES)}
# What a result may say: the names above and DI-engine's plural spellings of them.
ACCEPTED_OUTCOMES = {**OUTCOME_CODE, 'wins': WIN, 'draws': DRAW, 'losses': LOSS}
_EXPECTED = f'{", ".join(map(repr, OUTCOMES))} (or DI-engine\'s \'wins\', \'draws\', \'losses\')'
# Index by code: the same game seen from the other side.
REVERSED_CODE = (LOSS, DRAW, WIN)
# Index by code: the points the home player scores (Elo's "actual score").
SCORE = (1.0, 0.5, 0.0)


def outcome_code(outcome, where: str = 'result') -> int:
    """The code of one outcome string, or a :class:`LeagueError` naming what was expected."""
    try:
        return ACCEPTED_OUTCOMES[outcome]
    except (KeyError, TypeError):  # TypeError: an unhashable value such as a nested list
        raise LeagueError(f'{where}: expected one of {_EXPECTED}, got {outcome!r}') from None


def parse_outcomes(outcomes, where: str = 'result') -> List[int]:
    """Codes of a flat, non-empty sequence (or 1-D array) of outcome strings, home player's view."""
    if isinstance(outcomes, np.ndarray):
        if outcomes.ndim != 1:
            raise LeagueError(f'{where}: expected a flat list of outcomes, got an array of shape {outcomes.shape}')
        outcomes = outcomes.tolist()
    # list / tuple first: the abstract Sequence check is slow on the finish_job hot path.
    if type(outcomes) not in (list, tuple) and (isinstance(outcomes, (str, bytes)) or not isinstance(outcomes, Sequence)):
        raise LeagueError(f'{where}: expected a flat list of outcomes ({_EXPECTED}) '
                          f'from the home player\'s view, got {type(outcomes).__name__} {outcomes!r}')
    if not outcomes:
        raise LeagueError(f'{where}: expected at least one outcome, got an empty list')
    codes = []
    for position, outcome in enumerate(outcomes):
        code = ACCEPTED_OUTCOMES.get(outcome) if isinstance(outcome, str) else None
        if code is None:
            hint = ' (nested per-env lists are not accepted: flatten them in episode order)' \
                if isinstance(outcome, (list, tuple)) else ''
            raise LeagueError(f'{where}[{position}]: expected one of {_EXPECTED}, '
                              f'got {outcome!r}{hint}')
        codes.append(code)
    return codes
