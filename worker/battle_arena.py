"""Who controls which seat of B two-seat games, and one batched step of acting for all of them.

Shared by the battle collector and the battle evaluator. Slot b holds a game between the
*home* policy and an opponent ``opponents[b]``. The home seat alternates between episodes in a
slot (and starts at ``b % 2``), so no player always moves first. Acting is batched: the home
policy acts once for its seat in every slot (plus the opponent seat where the opponent is the
home policy itself, i.e. self-play), and every other opponent acts once for the slots it plays
in (grouped by opponent), only where it is to move. The home policy's and the opponents' calls of a step are
made together (:func:`~sparring.worker.inference_wave.act_together`): where their networks run on a forward-pass
worker, that is one round trip a step; local policies act call for call as they always did.

A team env (``env.team_size`` = N, :mod:`sparring.worker.env.team`) has an agent axis after the
seat axis; a team's N agents are N rows of its policy's batch (one shared policy), and every
per-seat array here (actions, the home outputs, recurrent states) carries that axis too.

Recurrent policies get their state from here: the home policy's per (slot, seat), each recurrent
opponent's per slot. Both are zeroed when a slot's game ends (and an opponent's when it takes a
slot), and a recurrent opponent acts at every step of its games, also where it is not to move
(its action is then ignored), just as the home policy does: a snapshot of a learner must see the
game as it did while learning.

A game with continuous (``Box``) actions has an action axis at the end of ``actions`` and of the home
``action`` (float32 ``[B, 2, *action_shape]``, as sampled: the env clips), and no action mask: every policy
is asked with ``action_mask=None``.

With a ``search`` (expert iteration, ``battle.collect_search``) the home policy's moves come from
``search.act(home, obs, action_mask) -> (ActOutput, visit distribution, searched value)`` instead of
``home.act``, and the distribution and value are among the home outputs as ``search_policy`` and
``search_value``.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Tuple, cast

import numpy as np

from sparring.policy.base import Policy
from sparring.worker.env.battle_api import RESULT_NAME
from sparring.worker.env.battle_step import BattleStep, action_layout, is_continuous
from sparring.worker.inference_wave import ActCall, act_together
from sparring.worker.recurrent_state import (OpponentStates, State, initial_state, is_recurrent, put_rows,
                                             take_rows, zero_rows)


class Arena:
    chunk_seats = 2  # the seats of a slot a chunk holds: both (the home seat's, and in self-play the other's)

    def __init__(self, env, home: Policy, deterministic: bool = False, search=None) -> None:
        self.env = env
        self.home_spaces = (env.observation_space, env.action_space)  # what the home policy was built for
        self.home = home
        self.deterministic = deterministic
        self.search = search
        B = env.num_envs
        self.home_seat = np.arange(B) % 2
        self.opponents: List[Optional[Policy]] = [None] * B
        self.opponent_ids: List[Optional[str]] = [None] * B
        self.step_result: Optional[BattleStep] = None
        # Team envs: the agent axis after the seat axis (empty for one agent per seat).
        team_size = getattr(env, 'team_size', None)
        self.agent_shape: Tuple[int, ...] = () if team_size is None else (int(team_size),)
        self.agents_per_seat = int(np.prod(self.agent_shape))
        self.continuous = is_continuous(env.action_space)
        self.action_shape, self.action_dtype = action_layout(env.action_space)
        if search is not None and (self.agent_shape or is_recurrent(home) or self.continuous):
            raise ValueError('battle arena: a search chooses one feed-forward player\'s moves among discrete '
                             'actions; this game has teams or Box actions, or the player is recurrent')
        # The home policy's recurrent state per (slot, seat): each part [B, 2, ...]; None if feed-forward.
        self.home_state: State = None
        # Recurrent opponents' states, one row per slot (and team agent).
        self.opponent_states = OpponentStates((B, *self.agent_shape))
        self._reset_home_state()

    def _reset_home_state(self) -> None:
        state = initial_state(self.home, 2 * self.num_envs * self.agents_per_seat)
        self.home_state = None if state is None else tuple(
            p.reshape(self.num_envs, 2, *self.agent_shape, *p.shape[1:]) for p in state)

    def as_rows(self, x):
        """``[M, *agent_shape, ...]`` -> ``[M * agents, ...]`` (an array or a state tuple; None passes)."""
        if x is None or not self.agent_shape:
            return x
        if isinstance(x, tuple):
            return tuple(self.as_rows(part) for part in x)
        return x.reshape(-1, *x.shape[1 + len(self.agent_shape):])

    def from_rows(self, x):
        """The inverse of :meth:`as_rows`."""
        if x is None or not self.agent_shape:
            return x
        if isinstance(x, tuple):
            return tuple(self.from_rows(part) for part in x)
        x = np.asarray(x)
        return x.reshape(-1, *self.agent_shape, *x.shape[1:])

    def columns(self, x):
        """``[B, 2, *agent_shape, ...]`` -> ``[2 * B * agents, ...]``: a chunk's columns (state tuples too)."""
        if x is None:
            return None
        if isinstance(x, tuple):
            return tuple(self.columns(part) for part in x)
        return x.reshape(-1, *x.shape[2 + len(self.agent_shape):])

    def per_agent(self, x: np.ndarray) -> np.ndarray:
        """A per-seat (or per-game) array with trailing unit axes, to broadcast over a team's agents."""
        return x.reshape(*x.shape, *(1,) * len(self.agent_shape))

    @property
    def num_envs(self) -> int:
        return self.env.num_envs

    @property
    def current(self) -> BattleStep:
        """The step the games are at: the last ``reset`` or ``step``."""
        if self.step_result is None:
            raise RuntimeError('battle arena: no games yet; call reset() first')
        return self.step_result

    def set_opponent(self, slot: int, opponent_id: str, policy: Policy) -> None:
        self.opponent_ids[slot] = opponent_id
        self.opponents[slot] = policy
        if policy is not self.home:
            self.opponent_states.seat(policy, slot)  # a new game for it in this slot
        self.opponent_states.keep(self.opponents)

    def env_seat(self, home_seat: np.ndarray) -> np.ndarray:
        """The env's seat of each slot's home player, given :attr:`home_seat` (here the same)."""
        return home_seat

    def self_play_slots(self) -> np.ndarray:
        return np.array([opp is self.home for opp in self.opponents], dtype=bool)

    def reset(self) -> BattleStep:
        self.step_result = self.env.reset()
        self._reset_home_state()
        self.opponent_states.zero(slice(None))
        return self.step_result

    def act(self) -> Tuple[np.ndarray, dict]:
        """Actions ``[B, 2]`` (team envs: ``[B, 2, N]``; Box actions add ``*action_shape``) for the current
        step, and the home policy's outputs.

        The returned dict holds ``[B, 2]`` (``[B, 2, N]``) arrays ``action, log_prob, value`` and a bool
        ``home_controlled`` for the (slot, seat) pairs the home policy acted for; with a search, also
        ``search_policy`` ``[B, 2, A]``, the search's visit distribution where the home policy moved, and
        ``search_value`` ``[B, 2]``, the search's value of the position for the player to move there, and the
        search's ``label_columns`` (the solver's targets near the end) in the same layout.
        """
        step = self.current
        B = self.num_envs
        rows = np.arange(B)
        seats = self.home_seat
        selfplay = self.self_play_slots()
        # The home policy acts for its seat everywhere, and for the other seat in self-play slots.
        h_rows = np.concatenate([rows, rows[selfplay]])
        h_seats = np.concatenate([seats, 1 - seats[selfplay]])
        home_obs, home_mask = self.as_rows(step.obs[h_rows, h_seats]), self._mask_rows(step, h_rows, h_seats)
        # Other opponents: one batched call per distinct opponent, only where it is to move (a
        # recurrent one everywhere it plays, to keep its state in step with the game).
        opp_seats = 1 - seats
        moving = step.to_move[rows, opp_seats] & ~selfplay
        acting = moving | (np.array([is_recurrent(opp) for opp in self.opponents], dtype=bool) & ~selfplay)
        groups = list(group_by_policy(self.opponents, np.flatnonzero(acting)))
        calls = []
        if self.search is None:
            calls.append(ActCall(self.home, home_obs, self.as_rows(take_rows(self.home_state, (h_rows, h_seats))),
                                 home_mask, self.deterministic))
        for policy, idx in groups:
            kwargs = {}
            if getattr(policy, 'needs_game_state', False):
                kwargs['game_states'] = self.env.game_states(idx)
            state = self.opponent_states.of(policy)
            calls.append(ActCall(policy, self.as_rows(step.obs[idx, opp_seats[idx]]),
                                 self.as_rows(take_rows(state, idx)), self._mask_rows(step, idx, opp_seats[idx]),
                                 self.deterministic, kwargs))
        if self.search is not None:
            out, search_policy, search_value = self.search.act(self.home, home_obs, home_mask)
            opponent_outs = act_together(calls)
        else:  # the home policy and the opponents act at once: one round trip where their networks are remote
            out, *opponent_outs = act_together(calls)
        put_rows(self.home_state, (h_rows, h_seats), self.from_rows(out.state))
        seats_shape = (B, 2, *self.agent_shape)
        actions = np.zeros(seats_shape + self.action_shape, dtype=self.action_dtype)
        actions[h_rows, h_seats] = self.from_rows(out.action)
        home = dict(action=actions.copy(), log_prob=np.zeros(seats_shape, dtype=np.float32),
                    value=np.zeros(seats_shape, dtype=np.float32), home_controlled=np.zeros(seats_shape, dtype=bool))
        home['log_prob'][h_rows, h_seats] = self.from_rows(out.log_prob)
        home['value'][h_rows, h_seats] = self.from_rows(out.value)
        home['home_controlled'][h_rows, h_seats] = True
        if self.search is not None:
            home['search_policy'] = np.zeros((B, 2, step.action_mask.shape[-1]), dtype=np.float32)
            home['search_policy'][h_rows, h_seats] = search_policy
            home['search_value'] = np.zeros((B, 2), dtype=np.float32)
            home['search_value'][h_rows, h_seats] = search_value
            if getattr(self.search, 'label_columns', None):  # the solver's targets near the end, where it labels
                for name, column in self.search.exact_labels(home_obs, home_mask).items():
                    home[name] = np.zeros((B, 2, *column.shape[1:]), column.dtype)
                    home[name][h_rows, h_seats] = column
        for (policy, idx), o in zip(groups, opponent_outs):
            put_rows(self.opponent_states.of(policy), idx, self.from_rows(o.state))
            moves = moving[idx]
            actions[idx[moves], opp_seats[idx[moves]]] = self.from_rows(o.action)[moves]
        return actions, home

    def _mask_rows(self, step: BattleStep, rows: np.ndarray, seats: np.ndarray) -> Optional[np.ndarray]:
        """The action masks of (rows, seats) as policy rows; None in a Box game, which has none."""
        return None if self.continuous else self.as_rows(step.action_mask[rows, seats])

    def step(self, actions: np.ndarray) -> BattleStep:
        self.step_result = self.env.step(actions)
        return self.step_result

    def finished(self, step: BattleStep) -> List[Tuple[int, str, str]]:
        """``(slot, opponent_id, outcome)`` for every game that just ended, outcome from the home view;
        then the home seat of those slots flips for their next game."""
        done = np.flatnonzero(step.terminated | step.truncated)
        out = [(int(b), cast(str, self.opponent_ids[b]), RESULT_NAME[int(step.result[b, self.home_seat[b]])])
               for b in done]  # a slot whose game ended had an opponent
        self.home_seat[done] = 1 - self.home_seat[done]
        zero_rows(self.home_state, done)
        self.opponent_states.zero(done)
        return out


def group_by_policy(opponents: List[Optional[Policy]], slots: np.ndarray):
    groups: dict = {}
    for b in slots:
        policy = opponents[b]
        if policy is None:
            raise RuntimeError(f'battle arena: slot {b} has no opponent; call set_opponent first')
        groups.setdefault(id(policy), (policy, []))[1].append(b)
    for policy, idx in groups.values():
        yield policy, np.asarray(idx)


OpponentSampler = Callable[[int], Tuple[str, Policy]]
