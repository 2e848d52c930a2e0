"""Who controls which seat of B games whose seats have roles, and one batched step of acting for all of them.

The counterpart of :class:`~sparring.worker.battle_arena.Arena` for games with ``roles`` (a pursuer and an
evader, each role its own spaces): slot b holds a game between the *home* policy, which plays the seat of its
role in every game (a role has one seat here), and an opponent ``opponents[b]`` of another role, which plays
every other seat. There is no self-play (a policy plays one role) and no seat alternation.

What the collector and the evaluator read is the game **as the home seat sees it**: :attr:`current`, and
what :meth:`reset` and :meth:`step` return, are :class:`~sparring.worker.env.battle_step.BattleStep`\\ s of one
seat (``obs`` ``[B, 1, *obs_shape]``, ``reward``, ``to_move`` and ``result`` ``[B, 1]``, ...), so their chunks
hold only the home seat's columns, ``[T, B, ...]``, built from its own spaces (:attr:`home_spaces`), and
their code is the symmetric arena's with one seat per slot. :meth:`act` returns the actions every seat plays,
in the env's per-seat layout (a list of one array per seat), and the home outputs in the one-seat layout.

Recurrent policies get their state from here as in the symmetric arena: the home policy's per slot, each
recurrent opponent's per slot, zeroed when a slot's game ends (and an opponent's when it takes a slot).
"""
from __future__ import annotations

from typing import List, Optional, Tuple, cast

import numpy as np

from sparring.policy.base import Policy
from sparring.worker.battle_arena import Arena, group_by_policy
from sparring.worker.env.battle_api import RESULT_NAME
from sparring.worker.env.battle_step import BattleStep, is_continuous, seat_action_rows, zero_actions
from sparring.worker.inference_wave import ActCall, act_together
from sparring.worker.recurrent_state import (OpponentStates, State, initial_state, is_recurrent, put_rows,
                                             take_rows, zero_rows)


def home_seat_of(env, role: Optional[str]) -> int:
    """The seat a player of ``role`` plays in ``env`` (a game with roles), or ValueError naming the roles."""
    roles = list(env.roles)
    if role not in roles:
        raise ValueError(f'battle arena: role {role!r} is not one of the game\'s roles {roles}; expected the role '
                         f'of the player that plays it')
    if roles.count(role) != 1:
        raise ValueError(f'battle arena: the role {role!r} has {roles.count(role)} seats in {roles}; a player of a '
                         f'role plays one seat here')
    return roles.index(role)


def opposite_role(roles, role: str) -> str:
    """The one role of a two-role game other than ``role`` (ValueError where there is not exactly one)."""
    others = [r for r in dict.fromkeys(roles or ()) if r != role]
    if role not in (roles or ()) or len(others) != 1:
        raise ValueError(f'role {role!r} of the roles {list(roles or ())}: expected one of two roles')
    return others[0]


class RoleArena:
    """Games whose seats have roles, the home policy in the seat of ``role`` (see the module docstring).

    Args:
        env: a vectorised battle env with ``roles``.
        home: the home player's policy (built for its role's spaces).
        role: the role it plays.
        deterministic: greedy actions.
    """

    chunk_seats = 1  # the seats of a slot a chunk holds: the home seat alone
    agent_shape: Tuple[int, ...] = ()  # no teams in a game with roles
    agents_per_seat = 1
    search = None

    def __init__(self, env, home: Policy, role: str, deterministic: bool = False) -> None:
        if getattr(env, 'team_size', None) is not None:
            raise ValueError('battle arena: a game with roles and teams; expected one agent per seat')
        self.env = env
        self.home = home
        self.role = role
        self.deterministic = deterministic
        self.seat = home_seat_of(env, role)
        self.other_seats = [s for s in range(env.num_seats) if s != self.seat]
        B = env.num_envs
        self.home_seat = np.zeros(B, np.int64)  # in the home view, every slot's one seat
        self.opponents: List[Optional[Policy]] = [None] * B
        self.opponent_ids: List[Optional[str]] = [None] * B
        self.home_spaces = (env.observation_spaces[self.seat], env.action_spaces[self.seat])
        self._continuous = [is_continuous(space) for space in env.action_spaces]
        self.step_result: Optional[BattleStep] = None  # the env's own step, every seat
        self.home_state: State = None
        self.opponent_states = OpponentStates((B,))
        self._reset_home_state()

    @property
    def num_envs(self) -> int:
        return self.env.num_envs

    def _reset_home_state(self) -> None:
        state = initial_state(self.home, self.num_envs)
        self.home_state = None if state is None else tuple(p.reshape(self.num_envs, 1, *p.shape[1:]) for p in state)

    def columns(self, x):
        """``[B, 1, ...]`` -> ``[B, ...]``: a chunk's columns (state tuples too; None passes)."""
        if x is None:
            return None
        if isinstance(x, tuple):
            return tuple(self.columns(part) for part in x)
        return x.reshape(-1, *x.shape[2:])

    def per_agent(self, x: np.ndarray) -> np.ndarray:
        """A per-seat array as it is: no team axis to broadcast over."""
        return x

    def home_view(self, step: BattleStep) -> BattleStep:
        """``step`` as the home seat sees it: a step of one seat."""
        h = self.seat
        return BattleStep(step.seat_obs(h)[:, None], step.seat_mask(h)[:, None], step.to_move[:, h:h + 1],
                          step.reward[:, h:h + 1], step.terminated, step.truncated, step.result[:, h:h + 1],
                          step.seat_final_obs(h)[:, None])

    @property
    def current(self) -> BattleStep:
        """The step the games are at, as the home seat sees it."""
        if self.step_result is None:
            raise RuntimeError('battle arena: no games yet; call reset() first')
        return self.home_view(self.step_result)

    def set_opponent(self, slot: int, opponent_id: str, policy: Policy) -> None:
        if policy is self.home:
            raise ValueError(f'battle arena: slot {slot}: the home player cannot be its own opponent in a game with '
                             f'roles; expected a player of another role than {self.role!r}')
        self.opponent_ids[slot] = opponent_id
        self.opponents[slot] = policy
        self.opponent_states.seat(policy, slot)
        self.opponent_states.keep(self.opponents)

    def env_seat(self, home_seat: np.ndarray) -> np.ndarray:
        """The env's seat of each slot's home player (its role's), where :attr:`home_seat` says 0, the view's one."""
        return np.full_like(home_seat, self.seat)

    def self_play_slots(self) -> np.ndarray:
        return np.zeros(self.num_envs, bool)

    def reset(self) -> BattleStep:
        self.step_result = self.env.reset()
        self._reset_home_state()
        self.opponent_states.zero(slice(None))
        return self.current

    def _mask(self, step: BattleStep, seat: int, rows) -> Optional[np.ndarray]:
        return None if self._continuous[seat] else step.seat_mask(seat)[rows]

    def act(self) -> Tuple[List[np.ndarray], dict]:
        """Every seat's actions (the env's per-seat layout) for the current step, and the home policy's outputs
        ``action``, ``log_prob``, ``value`` and ``home_controlled`` in the one-seat layout ``[B, 1, ...]``."""
        if self.step_result is None:
            raise RuntimeError('battle arena: no games yet; call reset() first')
        step = self.step_result
        B, h = self.num_envs, self.seat
        rows = np.arange(B)
        home_state = None if self.home_state is None else tuple(p[:, 0] for p in self.home_state)
        calls = [ActCall(self.home, step.seat_obs(h), home_state, self._mask(step, h, rows), self.deterministic)]
        recurrent = np.array([is_recurrent(opp) for opp in self.opponents], dtype=bool)
        plan = []  # (seat, policy, slots, moving) of each opponent call
        for seat in self.other_seats:
            moving = step.to_move[:, seat]
            for policy, idx in group_by_policy(self.opponents, np.flatnonzero(moving | recurrent)):
                state = take_rows(self.opponent_states.of(policy), idx)
                calls.append(ActCall(policy, step.seat_obs(seat)[idx], state, self._mask(step, seat, idx),
                                     self.deterministic))
                plan.append((seat, policy, idx, moving[idx]))
        out, *opponent_outs = act_together(calls)
        actions = zero_actions(self.env)
        seat_action_rows(actions, h)[:] = out.action
        if self.home_state is not None:
            put_rows(self.home_state, (rows, np.zeros(B, np.int64)), out.state)
        for (seat, policy, idx, moves), o in zip(plan, opponent_outs):
            put_rows(self.opponent_states.of(policy), idx, o.state)
            seat_action_rows(actions, seat)[idx[moves]] = np.asarray(o.action)[moves]
        home = dict(action=np.asarray(out.action)[:, None].copy(), log_prob=np.asarray(out.log_prob)[:, None],
                    value=np.asarray(out.value)[:, None], home_controlled=np.ones((B, 1), bool))
        return cast(List[np.ndarray], actions), home

    def step(self, actions) -> BattleStep:
        self.step_result = self.env.step(actions)
        return self.current

    def finished(self, step: BattleStep) -> List[Tuple[int, str, str]]:
        """``(slot, opponent_id, outcome)`` for every game that just ended, outcome from the home seat's view."""
        done = np.flatnonzero(step.terminated | step.truncated)
        out = [(int(b), cast(str, self.opponent_ids[b]), RESULT_NAME[int(step.result[b, 0])]) for b in done]
        zero_rows(self.home_state, done)
        self.opponent_states.zero(done)
        return out


def make_arena(env, home: Policy, role: Optional[str] = None, deterministic: bool = False, search=None):
    """The arena of ``env``: :class:`RoleArena` for a game with roles (``role`` the home player's), else the
    symmetric :class:`~sparring.worker.battle_arena.Arena`."""
    if getattr(env, 'roles', None) is None:
        if role is not None:
            raise ValueError(f'battle arena: a player of role {role!r} in a game without roles; expected role None')
        return Arena(env, home, deterministic=deterministic, search=search)
    if search is not None:
        raise ValueError('battle arena: a search chooses moves in symmetric games; this game has roles')
    if role is None:
        raise ValueError(f'battle arena: a game with roles {tuple(env.roles)} needs the role of the home player')
    return RoleArena(env, home, role, deterministic=deterministic)
