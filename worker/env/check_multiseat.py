"""``sparring check-env`` for games of three or more seats: random legal games checked against the API of
:mod:`sparring.worker.env.multiseat_api`.

What it checks, in ``games`` random games of B = 4 side by side: the spaces (a ``Box`` observed, ``Discrete``
actions or a ``Box`` of finite bounds, at least two seats, ``teams`` one index per seat when set); every step's
arrays in their shapes and dtypes, observations inside the ``Box``; a seat to move with at least one legal action
and a seat that waits with none (one seat to move in a turn-based game; a Box game's one-column mask equal to
``to_move``); each finished game's ranks in ``0..S-1`` with one seat ranked first
and teammates sharing their rank; every game ending within ``max_game_steps``; and the same seed playing the same
games. It returns the two-seat checker's :class:`~sparring.worker.env.check.EnvCheckReport`.
"""
from __future__ import annotations

from typing import List, Mapping, Sequence, Union

import numpy as np
from gymnasium import spaces

from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.battle_step import is_continuous, mask_width
from sparring.worker.env.check import MAX_GAME_STEPS, EnvCheckReport, check_env
from sparring.worker.env.errors import EnvError
from sparring.worker.env.gym_env import complete_section, import_env_modules
from sparring.worker.env.multiseat_api import is_multiseat_env

NUM_ENVS = 4


def check_any_env(env: Union[str, Mapping], games: int = 20, seed: int = 0, import_names: Sequence[str] = (),
                  max_game_steps: int = MAX_GAME_STEPS) -> EnvCheckReport:
    """``check-env``: a game of three or more seats checked here, any other by the two-seat checker
    (:func:`~sparring.worker.env.check.check_env`, whose arguments these are)."""
    import_env_modules(import_names)
    name = env if isinstance(env, str) else dict(env).get('type')
    if isinstance(name, str) and name in ENV_REGISTRY and is_multiseat_env(ENV_REGISTRY.get(name)):
        section = complete_section('env', {'type': env} if isinstance(env, str) else dict(env))
        return check_multiseat_env(ENV_REGISTRY.get(name), section, games, seed, max_game_steps)
    return check_env(env, games=games, seed=seed, import_names=import_names, max_game_steps=max_game_steps)


def check_multiseat_env(cls, section, games: int, seed: int, max_game_steps: int) -> EnvCheckReport:
    """Play ``games`` random legal games of the multi-seat env class ``cls`` (config ``section``) and report."""
    report = EnvCheckReport(section.type)
    try:
        env = cls(section, NUM_ENVS, seed)
    except Exception as err:  # noqa: BLE001 -- a user's env failing to build is the finding, not a crash
        report.problems.append(f'building {cls.__name__}(cfg, {NUM_ENVS}, seed={seed}) raised {err!r}')
        return report
    try:
        report.problems += _spaces_problems(env)
        if report.problems:
            return report
        first = _play(env, games, seed, max_game_steps, report.problems)
        if not report.problems:
            env.close()
            env = cls(section, NUM_ENVS, seed)
            again = _play(env, games, seed, max_game_steps, [])
            if len(first) != len(again) or any(not np.array_equal(a, b) for a, b in zip(first, again)):
                report.problems.append(f'two runs with seed {seed} played different games; expected the env\'s '
                                       f'randomness to come from self.np_random, seeded by the constructor')
        report.notes.append(f'{len(first)} random games of {env.num_seats} seats, {NUM_ENVS} side by side'
                            + (f', teams {tuple(env.teams)}' if env.teams is not None else ', each seat for itself'))
    finally:
        env.close()
    return report


def _spaces_problems(env) -> List[str]:
    problems = []
    if not isinstance(env.observation_space, spaces.Box):
        problems.append(f'observation_space is {env.observation_space!r}; expected a Box')
    action = env.action_space
    if isinstance(action, spaces.Box):
        if not (np.isfinite(action.low).all() and np.isfinite(action.high).all()):
            problems.append(f'action_space is {action!r}; expected a Box of finite bounds (its actions are clipped '
                            f'to them)')
    elif not isinstance(action, spaces.Discrete):
        problems.append(f'action_space is {action!r}; expected Discrete (indices) or a Box (continuous actions)')
    if not isinstance(getattr(env, 'num_seats', None), int) or env.num_seats < 2:
        problems.append(f'num_seats is {getattr(env, "num_seats", None)!r}; expected an int >= 2')
    elif env.teams is not None and (len(env.teams) != env.num_seats or len(set(env.teams)) < 2):
        problems.append(f'teams is {env.teams!r}; expected one team index per seat ({env.num_seats}) and two teams '
                        f'or more, or None')
    return problems


def _play(env, games: int, seed: int, max_game_steps: int, problems: List[str]) -> List[np.ndarray]:
    """Random legal games until ``games`` ended; each finished game's ranks, in the order they ended."""
    rng = np.random.default_rng(seed)
    B, S, A = NUM_ENVS, env.num_seats, mask_width(env.action_space)
    shape = (B, S) + tuple(env.observation_space.shape)
    ended: List[np.ndarray] = []
    length = np.zeros(B, np.int64)
    try:
        step = env.reset()
        while len(ended) < games and not problems:
            where = f'after {len(ended)} finished games'
            problems += _step_problems(env, step, shape, (B, S, A), where)
            if problems:
                break
            step = env.step(_random_actions(env, step, rng))
            length += 1
            done = step.terminated | step.truncated
            for b in np.flatnonzero(done):
                problems += _rank_problems(env, step.rank[b], f'game {b} {where}')
                ended.append(step.rank[b].copy())
            length[done] = 0
            if (length > max_game_steps).any():
                problems.append(f'a game went on for {max_game_steps} steps without ending; expected every game to '
                                f'end by its rules (or set truncated)')
    except EnvError as err:
        problems.append(f'the env refused a random legal move or a reset: {err}')
    return ended


def _random_actions(env, step, rng: np.random.Generator) -> np.ndarray:
    """A random legal action for every seat to move: uniform in a Box (its bounds widened by half, so the env's
    clipping is played too), among the legal ones otherwise."""
    B, S = step.to_move.shape
    if is_continuous(env.action_space):
        low, high = env.action_space.low, env.action_space.high
        margin = (high - low) / 4
        return rng.uniform(low - margin, high + margin, (B, S) + env.action_space.shape).astype(np.float32)
    actions = np.zeros((B, S), np.int64)
    for b, s in zip(*np.nonzero(step.to_move)):
        actions[b, s] = rng.choice(np.flatnonzero(step.action_mask[b, s]))
    return actions


def _step_problems(env, step, shape, mask_shape, where: str) -> List[str]:
    found = []
    for name, want, kind in (('obs', shape, 'f'), ('action_mask', mask_shape, 'b'), ('to_move', shape[:2], 'b'),
                             ('reward', shape[:2], 'f'), ('terminated', shape[:1], 'b'), ('truncated', shape[:1], 'b'),
                             ('rank', shape[:2], 'iu'), ('final_obs', shape, 'f')):
        value = np.asarray(getattr(step, name))
        if value.shape != want or value.dtype.kind not in kind:
            found.append(f'step.{name} has shape {value.shape} and dtype {value.dtype} {where}; expected {want} of '
                         f'kind {kind!r}')
    if found:
        return found
    if not env.observation_space.contains(step.obs.reshape(-1, *shape[2:])[0]):
        found.append(f'an observation {where} lies outside observation_space {env.observation_space}')
    moving = step.action_mask.any(axis=2)
    if (moving != step.to_move).any():
        found.append(f'a seat to move has no legal action, or a seat that waits has one, {where}; expected '
                     f'action_mask rows all False exactly where to_move is False')
    if env.turn_based and (step.to_move.sum(axis=1) != 1).any():
        found.append(f'{int(step.to_move.sum(axis=1).max())} seats to move in one game {where}; a turn_based game '
                     f'moves one seat at a time')
    return found


def _rank_problems(env, rank: np.ndarray, where: str) -> List[str]:
    S = env.num_seats
    if rank.min() < 0 or rank.max() >= S or rank.min() != 0:
        return [f'{where} ended with ranks {rank.tolist()}; expected ranks in 0..{S - 1} with at least one seat at 0']
    if env.teams is not None:
        teams = np.asarray(env.teams)
        for team in set(env.teams):
            if len(set(rank[teams == team].tolist())) > 1:
                mates = np.flatnonzero(teams == team).tolist()
                return [f'{where} ended with ranks {rank.tolist()}: teammates {mates} differ; expected one rank per team']
    return []
