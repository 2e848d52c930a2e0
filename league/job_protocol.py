"""The dicts a pipeline and a league exchange: their shapes (``TypedDict``s, so they stay DI-engine's plain dicts)
and the checks of what ``finish_job`` and ``update_active_player`` accept.

:class:`JobInfo` is what ``get_job_info`` returns, :class:`SnapshotVerdict` what ``judge_snapshot`` returns,
:class:`PlayerProgress` what ``update_active_player`` takes. A job result is the job info ``get_job_info`` returned plus its ``result`` (as DI-engine's commander
sends it), or just ``player_ids`` and ``result``; a progress report is a player id with its train
iteration and, optionally, its agent steps, parameter reference and model config. Each check raises
a :class:`LeagueError` that names the key and what was expected, before the league changes.
"""
from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, Callable, List, NotRequired, Optional, Tuple, TypedDict, cast

import numpy as np

from sparring.league.errors import LeagueError
from sparring.league.multiseat import RANK_EXAMPLE, parse_rankings, parse_teams
from sparring.league.outcome import parse_outcomes
from sparring.league.player import ActivePlayer, Player, PlayerInfo



class JobInfo(TypedDict):
    """One job: who plays whom (``get_job_info``)."""
    job_id: int
    launch_player: str  # the active player the job is for: the home player
    player_ids: List[str]  # [home, away]; with S seats [home, one opponent per other seat]
    branch: str  # the opponent rule that chose the away player ('eval' for an evaluation job); with S seats
    # the rules of every opponent joined by '+'
    eval_flag: bool
    episode_num: int
    players: List[PlayerInfo]  # [home, away]; with S seats, one per player id
    branches: NotRequired[List[str]]  # with S seats: the rule that chose each opponent, in order


class SnapshotVerdict(TypedDict):
    """``judge_snapshot``'s answer: on a snapshot, store the parameters at ``source_param_ref`` under
    ``historical_player['param_ref']``; on a reset, reload the player's parameters from ``reset_param_ref``."""
    player_id: str
    snapshot: bool
    historical_player: Optional[PlayerInfo]
    source_param_ref: Optional[str]
    reset: bool
    reset_param_ref: Optional[str]


class PlayerProgress(TypedDict):
    """A learner's progress report (``update_active_player``)."""
    player_id: str
    train_iteration: int
    agent_steps: NotRequired[int]  # ML-Agents' trainer steps, every agent of a team counted
    param_ref: NotRequired[str]  # where the player's current parameters are
    model: NotRequired[dict]  # its model config (after surgery)


def stored_ref(ref: Optional[str], whose: str) -> str:
    """A parameter reference the pipeline must find stored: a :class:`LeagueError` naming ``whose`` if it is None."""
    if ref is None:
        raise LeagueError(f'{whose} has no "param_ref"; expected the key its parameters are stored under')
    return ref


def no_snapshot(player_id: str) -> SnapshotVerdict:
    """The verdict that keeps ``player_id`` training as it is."""
    return SnapshotVerdict(player_id=player_id, snapshot=False, historical_player=None, source_param_ref=None,
                           reset=False, reset_param_ref=None)


# A job result is the job info get_job_info returned plus its ``result`` (as DI-engine's commander sends it).
JOB_INFO_KEYS = frozenset({'job_id', 'launch_player', 'player_ids', 'branch', 'eval_flag', 'episode_num', 'players',
                           'branches'})
JOB_RESULT_KEYS = JOB_INFO_KEYS | {'result', 'info', 'teams'}
PLAYER_INFO_KEYS = frozenset({'player_id', 'train_iteration', 'agent_steps', 'param_ref', 'model'})


def parse_job_result(job_result, roster) -> Tuple[Player, Player, List[int]]:
    """(home, away, outcome codes) of a two-seat ``finish_job`` argument, or a :class:`LeagueError` naming what is
    wrong."""
    home, away = _players_of(job_result, roster, 2, '[home_id, away_id]')
    if 'result' not in job_result:
        raise LeagueError('finish_job: missing "result", the list of outcomes from the home player\'s view')
    if 'teams' in job_result:
        raise LeagueError(f'finish_job: "teams" is for games of three or more seats; a two-seat result names '
                          f'its outcomes from the home player\'s view, got teams={job_result["teams"]!r}')
    return home, away, parse_outcomes(job_result['result'], 'finish_job result')


def parse_ranked_job_result(job_result, roster, seats: int) -> Tuple[List[Player], np.ndarray, Optional[np.ndarray]]:
    """(players, ranks ``[E, S]``, team indices ``[S]`` or None) of an S-seat ``finish_job`` argument (see
    :mod:`sparring.league.multiseat`), or a :class:`LeagueError` naming what is wrong."""
    players = _players_of(job_result, roster, seats, f'[home_id, ...] ({seats} ids, one per seat)')
    if 'result' not in job_result:
        raise LeagueError(f'finish_job: missing "result", one ranking per episode with a rank per player id, '
                          f'e.g. {RANK_EXAMPLE}')
    teams = parse_teams(job_result.get('teams'), seats)
    return players, parse_rankings(job_result['result'], seats, teams), teams


def _players_of(job_result, roster, count: int, shape: str) -> List[Player]:
    """The players a job result names (``count`` of them), once its keys and echoes are checked."""
    if not isinstance(job_result, dict):
        raise LeagueError(f'finish_job: expected a dict with player_ids and result, got '
                          f'{type(job_result).__name__} {job_result!r}')
    if not JOB_RESULT_KEYS.issuperset(job_result):
        raise LeagueError(unknown_keys_message('finish_job', job_result, JOB_RESULT_KEYS))
    ids = job_result.get('player_ids')
    if not isinstance(ids, (list, tuple)) or len(ids) != count:
        raise LeagueError(f'finish_job: "player_ids" must be {shape}, got {ids!r}')
    by_id = roster.by_id
    players = [by_id.get(pid) if isinstance(pid, str) else None for pid in ids]
    for pid, player in zip(ids, players):
        if player is None:
            roster.get(pid, 'finish_job player_ids')  # raises, naming it
    launch = job_result.get('launch_player')
    if launch is not None and launch not in ids:
        raise LeagueError(f'finish_job: launch_player {launch!r} is not one of player_ids {list(ids)}')
    echoed = job_result.get('players')
    if echoed is not None:
        echoed_ids = [p.get('player_id') if isinstance(p, Mapping) else p for p in echoed] \
            if isinstance(echoed, (list, tuple)) else echoed
        if echoed_ids != list(ids):
            raise LeagueError(f'finish_job: "players" (from the job info) are {echoed_ids!r}, but player_ids are '
                              f'{list(ids)}; expected the infos of the same {"two" if count == 2 else count} players, in the same order')
    return cast(List[Player], players)


def check_player_info(player_info, active: Callable[[Any, str], ActivePlayer]) -> ActivePlayer:
    """The active player an ``update_active_player`` argument reports on (``active(player_id, where)`` finds it),
    once every key is checked; a :class:`LeagueError` names what is wrong."""
    if not isinstance(player_info, dict):
        raise LeagueError(f'update_active_player: expected a dict, got {type(player_info).__name__} '
                          f'{player_info!r}')
    if not PLAYER_INFO_KEYS.issuperset(player_info):
        raise LeagueError(unknown_keys_message('update_active_player', player_info, PLAYER_INFO_KEYS))
    player = active(player_info.get('player_id'), 'update_active_player')
    step = player_info.get('train_iteration')
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < player.step:
        raise LeagueError(f'update_active_player: "train_iteration" of {player.player_id!r} must be an int '
                          f'>= its current step {player.step}, got {step!r}')
    _check_agent_steps(player, player_info)
    if 'param_ref' in player_info and not isinstance(player_info['param_ref'], str):
        raise LeagueError(f'update_active_player: "param_ref" must be a str, got {player_info["param_ref"]!r}')
    if 'model' in player_info and not isinstance(player_info['model'], dict):
        raise LeagueError(f'update_active_player: "model" must be a dict, got {player_info["model"]!r}')
    return player


def _check_agent_steps(player: ActivePlayer, player_info: dict) -> None:
    if 'agent_steps' not in player_info:
        if player.counts_agent_steps:
            raise LeagueError(f'update_active_player: {player.player_id!r} ({player.player_type}) counts its steps in '
                              f'agent steps, as ML-Agents\' self-play does; report "agent_steps" (the agent steps '
                              f'the player has trained on, every agent of a team counted) with "train_iteration"')
        return
    steps = player_info['agent_steps']
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < player.agent_steps:
        raise LeagueError(f'update_active_player: "agent_steps" of {player.player_id!r} must be an int >= its '
                          f'current count {player.agent_steps}, got {steps!r}')


def unknown_keys_message(where: str, given: dict, allowed) -> str:
    parts = []
    for key in given:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), sorted(allowed), n=1, cutoff=0.5)
            parts.append(repr(key) + (f' (did you mean {close[0]!r}?)' if close else ''))
    return f'{where}: unknown key(s) {", ".join(parts)}; expected keys among {", ".join(sorted(allowed))}'
