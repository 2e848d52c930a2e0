"""The checks of :mod:`sparring.worker.env.check` that replay a game: seeds, and who acts in a turn-based game.

* :func:`compare_seeds`: the same seed must give the same games (with the same moves); another seed
  usually gives others (a game without chance gives the same: that is reported, not refused).
* :func:`who_acts`: in a turn-based game the seat to move acts and the waiting seat does not. From
  positions of a random game, copies of the single game are stepped with other actions: another legal
  action of the seat to move should change the game somewhere, another action of the waiting seat never.
  A game whose copies do not play as it does (``deepcopy`` misses some state) is not judged.
  This catches the classic slip of computing the masks before the turn passes, where the masks and
  the game disagree about who moves.
"""
from __future__ import annotations

import copy
from typing import Callable, List, Optional, Tuple

import numpy as np
from gymnasium import spaces

from sparring.worker.env.battle_api import NUM_SEATS
from sparring.worker.env.battle_step import BattleStep, seat_action_rows, seat_view, zero_actions


def random_actions(vec, step: BattleStep, rng: np.random.Generator):
    """A random legal action for every seat to move (0 for the others); uniform in the bounds for a Box. A game
    with roles: a list of one array per seat, each from that seat's space."""
    if vec.roles is not None:
        actions = zero_actions(vec)
        for s, space in enumerate(vec.action_spaces):
            seat = seat_action_rows(actions, s)
            if isinstance(space, spaces.Discrete):
                for j in np.flatnonzero(step.to_move[:, s]):
                    legal = np.flatnonzero(step.seat_mask(s)[j])
                    if legal.size:
                        seat[j] = rng.choice(legal)
            else:
                low, high = np.maximum(space.low, -1.0), np.minimum(space.high, 1.0)
                seat[:] = rng.uniform(low, high, seat.shape)
        return actions
    space, B = vec.action_space, vec.num_envs
    if isinstance(space, spaces.Discrete):
        actions = np.zeros((B, NUM_SEATS), np.int64)
        for j, s in np.argwhere(step.to_move):
            legal = np.flatnonzero(step.action_mask[j, s])
            if legal.size:
                actions[j, s] = rng.choice(legal)
        return actions
    low, high = np.maximum(space.low, -1.0), np.minimum(space.high, 1.0)  # unbounded: a unit range
    return rng.uniform(low, high, (B, NUM_SEATS) + tuple(space.shape)).astype(space.dtype)


def compare_seeds(make_single_form: Callable, seed: int, max_game_steps: int) -> Tuple[Optional[str], str]:
    """``(problem or None, note)`` from games of ``reset(seed)``, ``reset(seed + 1)`` and ``reset(seed)`` again."""
    vec = make_single_form()
    try:
        first, other, again = (_games(vec, s, max_game_steps) for s in (seed, seed + 1, seed))
    finally:
        vec.close()
    differs = _first_difference(first, again, vec.agents)
    if differs:
        return (f'seeds: reset(seed={seed}) twice gave different games ({differs}); expected the same game for the '
                f'same seed: draw the game\'s randomness from a generator seeded in reset(seed)'), ''
    if _first_difference(first, other, vec.agents) is None:
        return None, f'seeds: the same seed gave the same games; seeds {seed} and {seed + 1} too (as in a game without chance)'
    return None, 'seeds: the same seed gave the same games, another seed different ones'


def _games(vec, seed: int, max_game_steps: int, games: int = 3) -> list:
    """(obs, masks, rewards) of every position of the first ``games`` games from ``reset(seed)``, with the same
    random moves (several games: a game with little chance may repeat by luck)."""
    rng = np.random.default_rng(12345)
    step = vec.reset(seed=seed)
    positions = [_position(step, step.obs)]
    ended = 0
    for _ in range(games * max_game_steps):
        step = vec.step(random_actions(vec, step, rng))
        positions.append(_position(step, step.final_obs))
        if step.terminated[0] or step.truncated[0]:
            ended += 1
            if ended == games:
                break
            positions.append(_position(step, step.obs))
    return positions


def _position(step: BattleStep, obs) -> tuple:
    """Game 0's (observations, masks, rewards), each indexed by seat (copies)."""
    seats = range(step.num_seats)
    return ([seat_view(obs, s)[0].copy() for s in seats], [step.seat_mask(s)[0].copy() for s in seats],
            step.reward[0].copy())


def _first_difference(a: list, b: list, agents) -> Optional[str]:
    for t, (x, y) in enumerate(zip(a, b)):
        for what, u, v in zip(('observation', 'action_mask', 'reward'), x, y):
            for s, agent in enumerate(agents):
                if not np.array_equal(u[s], v[s]):
                    return f'first at position {t}: the {what} of {agent}'
    if len(a) != len(b):
        return f'one lasted {len(a)} positions, the other {len(b)}'
    return None


def who_acts(game, seed: int, positions: int = 60) -> List[Tuple[str, str]]:
    """``(kind, line)`` problems of a turn-based single game (see the module docstring); [] when it cannot be
    copied (the other checks still run)."""
    agents = list(game.possible_agents)
    if getattr(game.action_space(agents[0]), 'n', 0) < 2:
        return []
    rng = np.random.default_rng(seed)
    _, infos = game.reset(seed=seed)
    mover_mattered = tried = 0
    for t in range(positions):
        masks = [np.asarray(infos[a].get('action_mask', ()), bool) for a in agents]
        movers = [s for s in range(NUM_SEATS) if masks[s].any()]
        if len(movers) != 1:
            break  # the masks themselves are wrong: the step checks name it
        mover, waiting = movers[0], 1 - movers[0]
        legal = np.flatnonzero(masks[mover])
        chosen = int(rng.choice(legal))
        played = {agents[mover]: chosen, agents[waiting]: 0}
        try:
            base = _outcome(game, played)
            mover_changes = legal.size > 1 and not _same(base, _outcome(game, {**played, agents[mover]: int(
                legal[legal != chosen][0])}))
            waiting_changes = not _same(base, _outcome(game, {**played, agents[waiting]: 1}))  # 1, not the 0 played
            out = game.step(played)
        except Exception:  # noqa: BLE001 -- a game that cannot be copied is not checked here; the games
            return []  # played by the other checks report what its step() raises
        if not _same(base, out):
            return []  # a copy does not play as the game does (deepcopy misses state): nothing can be said
        if waiting_changes:
            line = (f'who acts, position {t}: the game changed with the action of {agents[waiting]}, whose '
                    f'action_mask is all False, and {agents[mover]} is the seat with legal actions; expected a '
                    f'turn-based game to play the action of the seat to move (are the masks made before the turn '
                    f'passes?)')
            return [('waiting_acts', line)]
        tried += legal.size > 1
        mover_mattered += mover_changes
        _, _, terminated, truncated, infos = out
        if any(terminated.values()) or any(truncated.values()):
            _, infos = game.reset()
    if tried >= 5 and not mover_mattered:
        line = (f'who acts: in {tried} positions, no other legal action of the seat to move changed the game; '
                f'expected the action of the seat to move to be played')
        return [('mover_ignored', line)]
    return []


def _outcome(game, actions) -> tuple:
    return copy.deepcopy(game).step(dict(actions))


def _same(a: tuple, b: tuple) -> bool:
    """Two step() outputs alike in observations, rewards and game ends (infos may hold anything)."""
    for x, y in zip(a[:4], b[:4]):
        if set(x) != set(y) or not all(np.array_equal(np.asarray(x[k]), np.asarray(y[k])) for k in x):
            return False
    return True
