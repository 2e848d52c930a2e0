"""Ready league configs for the board games; :func:`sparring_partners` holds the bots they share."""
from __future__ import annotations

from typing import List


def sparring_partners(heuristic_bot: str) -> List[dict]:
    """Reference players of graded strength for a line game (connect four, tic-tac-toe) with ``heuristic_bot``.

    Self-play alone learns to build lines but hardly to defend: a self that rarely completes a
    line never punishes a missed block. So beside the random bot (the Elo anchor) and the
    positional heuristic bot, two partners are tactical options of the heuristic: ``punisher``
    plays at random but takes every immediate win, ``blocker`` also blocks every immediate threat.
    All but the random bot are rated. A new list each call, so a config that edits it edits its own.
    """
    heuristic = f'bot:{heuristic_bot}'
    return [
        dict(player_id='random', param_ref='bot:random'),
        dict(player_id='heuristic', param_ref=heuristic, anchor=False),
        dict(player_id='blocker', param_ref=f'{heuristic}?positional=false', anchor=False),
        dict(player_id='punisher', param_ref=f'{heuristic}?positional=false&block=false', anchor=False),
    ]


def connect_four_sparring_partners() -> List[dict]:
    """The reference players of the connect-four leagues (PPO and DQN): :func:`sparring_partners` of its heuristic."""
    return sparring_partners('connect_four_heuristic')
