"""Multi-seat collector: the home player's experience from B games of S seats against a tuple of league opponents.

Each slot's job comes from ``sample_opponents(slot) -> (player_ids, policies)``: the S player ids of a league job
(the home player first, then one opponent per other seat) and the S-1 opponents' policies, drawn anew whenever
the slot's game ends. The home player's seat starts at ``b % S`` in slot b and moves on by one seat every game, so
it plays every position (who acts first matters in poker); the opponents take the other seats in job order,
going round from the seat after the home player's.

Chunks are columnar ``[T, S * B, ...]``, column ``S * b + s`` being seat s of slot b, as the two-seat battle
collector's ``[T, 2B]`` (:mod:`sparring.worker.battle_collector`). The home policy acts, and its value is kept,
for every seat it holds: its own, and with ``train_own_seats`` the seats where the league drew the player itself
(self-play); ``value_mask`` marks them, ``train_mask`` those of them that had to move. Every finished game is
reported once in ``chunk.rankings`` as ``(player_ids, ranks, teams)``, the ranks (0 the best) and, in a team game
(the env's ``teams``), the teams in job order (None in a free-for-all), which a league of S seats records as they
are (:mod:`sparring.league.multiseat`). A step asks every policy at once
(:func:`~sparring.worker.inference_wave.act_together`): where the networks run on a forward-pass worker, the home
network and every opponent network in one round trip.

**Recurrent policies.** The home policy's state is kept per (slot, seat), each recurrent opponent's per (slot,
seat) it plays (:class:`~sparring.worker.recurrent_state.OpponentStates`), both zeroed when a slot's game ends
and a new job is seated. A recurrent opponent acts at every step of its games, also where it is not to move (its
action is then ignored), as the home policy does, so a snapshot sees the game as it did while learning. The chunk
carries the home state at the start of every BPTT window as ``window_state_<i>`` ``[W, S * B, ...]`` and the games'
ends in ``terminated`` / ``truncated`` on every seat's column, from which the learner replays each window. A
collection whose ``n_steps`` are not whole windows (an evaluation's few steps: a training config must hold whole
windows, ``policy.collect.n_steps``) records no window states, and a learner refuses its chunks.

**Continuous actions.** In a game with a ``Box`` action space ``action`` is float32 ``[T, S * B, *action_shape]``
as the policy sampled it (the env clips), every policy is asked with ``action_mask=None``, and the chunk has no
``action_mask``.

What the chunk holds is what the home policy's chunk spec names. A replay policy (SAC, DQN) learns from these chunks
too, transition by transition along each seat's column; its record of whom each move was against (``opponent``,
``opponent_version``) says "untagged" (:data:`~sparring.policy.replay_opponents.UNTAGGED`, version 0), as a game of S
seats has S-1 opponents at once, so a replay that forgets by opponent (``replay.max_opponent_age``) is refused when
the collector is built, as is a policy that learns from anything else these games do not record.
"""
from __future__ import annotations

import time
from typing import Dict, List, Optional, Sequence, Tuple, Callable

import numpy as np

from sparring.policy.base import Policy
from sparring.policy.chunk_spec import PER_STEP, ChunkSpaces
from sparring.policy.replay_opponents import UNTAGGED
from sparring.worker.chunk import Chunk
from sparring.worker.collector import CollectorCounters
from sparring.worker.env.battle_step import action_layout, is_continuous
from sparring.worker.env.multiseat_api import MultiSeatStep
from sparring.worker.inference_wave import ActCall, act_together
from sparring.worker.recurrent_state import (OpponentStates, State, WindowStates, initial_state, is_recurrent,
                                             put_rows, take_rows, zero_rows)

OpponentsSampler = Callable[[int], Tuple[Sequence[str], Sequence[Policy]]]
FIELDS = ('obs', 'action_mask', 'action', 'log_prob', 'value', 'reward', 'terminated', 'truncated', 'next_obs',
          'train_mask', 'value_mask', 'next_value', 'opponent', 'opponent_version')


class MultiSeatCollector(CollectorCounters):
    """Collects the home player's ``[T, S * B, ...]`` chunks from games of S seats (see the module docstring).

    Args:
        env: the vectorised S-seat env (B games; :mod:`sparring.worker.env.multiseat_api`).
        policy: the home player's policy (feed-forward or recurrent; discrete or Box actions as the env's).
        n_steps: vector steps per chunk (T; whole BPTT windows for a recurrent policy's chunks to be learnt from).
        sample_opponents: ``sample_opponents(slot) -> (player_ids, policies)``, called whenever a slot's game ends.
        player_id: the home player's name, which its chunks carry.
        train_own_seats: learn from the seats the league gave the home player itself, not only from its own.
    """

    def __init__(self, env, policy: Policy, n_steps: int, sample_opponents: OpponentsSampler,
                 player_id: Optional[str] = None, train_own_seats: bool = True) -> None:
        super().__init__(n_steps)
        self.env, self.policy, self.sample_opponents = env, policy, sample_opponents
        self.player_id, self.train_own_seats = player_id, train_own_seats
        B, S = env.num_envs, env.num_seats
        self.seats = S
        self.spec = policy.chunk_spec(ChunkSpaces(env.observation_space, env.action_space, battle=True))
        missing = [f.name for f in self.spec if f.per == PER_STEP and f.required and f.name not in FIELDS]
        if missing:
            name = getattr(policy, 'registry_name', type(policy).__name__)
            raise ValueError(f'multi-seat collector: policy {name!r} learns from {missing}, which games of three or '
                             f'more seats do not record; they are collected for PPO (feed-forward or recurrent), DQN '
                             f'and SAC policies, discrete or Box actions')
        max_age = (getattr(policy, 'cfg', None) or {}).get('replay', {}).get('max_opponent_age')
        if 'opponent' in self.spec and max_age is not None:
            raise ValueError(f'multi-seat collector: policy.replay.max_opponent_age = {max_age} forgets moves by the '
                             f'one opponent they were played against, but a game of {S} seats has {S - 1} at once '
                             f'and its moves are untagged; expected None')
        self._fields = [f.name for f in self.spec if f.per == PER_STEP and f.name in FIELDS]
        window = self.spec.window_len
        self._windows = window if window is None or n_steps % window == 0 else None  # None: no window states
        self.continuous = is_continuous(env.action_space)
        self.action_shape, self.action_dtype = action_layout(env.action_space)
        self.home_seat = np.arange(B) % S
        self.job_ids: List[Sequence[str]] = [()] * B
        self.seat_policy: List[List[Optional[Policy]]] = [[None] * S for _ in range(B)]
        self.seat_job_index = np.zeros((B, S), np.int64)  # the position in the job's player ids of each seat's player
        self.held = np.zeros((B, S), bool)  # the seats the home policy plays
        self.recurrent_opponent = np.zeros((B, S), bool)  # the seats a recurrent opponent plays
        state = initial_state(policy, B * S)  # the home policy's, per (slot, seat): each part [B, S, ...]
        self.home_state: State = None if state is None else tuple(p.reshape(B, S, *p.shape[1:]) for p in state)
        self.opponent_states = OpponentStates((B, S))
        self.current: Optional[MultiSeatStep] = None

    def close(self) -> None:
        """Close the collector's envs."""
        self.env.close()

    def _assign(self, slot: int) -> None:
        """Seat the home player and a newly drawn job's opponents in ``slot``, each at a new game's state."""
        player_ids, opponents = self.sample_opponents(slot)
        if len(player_ids) != self.seats or len(opponents) != self.seats - 1:
            raise ValueError(f'multi-seat collector: a job for {self.seats} seats gave {len(player_ids)} player ids '
                             f'and {len(opponents)} opponents; expected {self.seats} and {self.seats - 1}')
        home = int(self.home_seat[slot])
        self.job_ids[slot] = tuple(player_ids)
        self.seat_policy[slot][home] = self.policy
        self.seat_job_index[slot, home] = 0
        zero_rows(self.home_state, slot)
        for k, opponent in enumerate(opponents, start=1):
            seat = (home + k) % self.seats
            self.seat_policy[slot][seat] = opponent
            self.seat_job_index[slot, seat] = k
            if opponent is not self.policy:
                self.opponent_states.seat(opponent, (slot, seat))
        self.held[slot] = [p is self.policy for p in self.seat_policy[slot]]
        self.recurrent_opponent[slot] = [is_recurrent(p) and p is not self.policy for p in self.seat_policy[slot]]
        self.opponent_states.keep(p for seats in self.seat_policy for p in seats)

    def _home_columns(self) -> np.ndarray:
        """``[B, S]`` the seats the home policy learns from: its own, plus its self-play seats."""
        if self.train_own_seats:
            return self.held.copy()
        own = np.zeros_like(self.held)
        own[np.arange(self.env.num_envs), self.home_seat] = True
        return own

    def _columns(self, state: State) -> State:
        """A ``[B, S, ...]`` state as the chunk's ``[S * B, ...]`` columns (None passes)."""
        return None if state is None else tuple(p.reshape(-1, *p.shape[2:]) for p in state)

    def collect(self) -> Chunk:
        started = time.perf_counter()
        if self.current is None:
            self.current = self.env.reset()
            for slot in range(self.env.num_envs):
                self._assign(slot)
        T, B, S = self.n_steps, self.env.num_envs, self.seats
        nxt: MultiSeatStep = self.current
        buf = self.spec.allocate((T, B, S), self._fields)
        results: List[Tuple[Tuple[str, ...], Tuple[int, ...], Optional[Tuple[int, ...]]]] = []
        teams = getattr(self.env, 'teams', None)
        version = self.policy.version
        returns = np.zeros((B, S))
        bootstrap = np.zeros((T, B, S), np.float32)  # the value of a game cut short, at its final observation
        episode_returns: List[float] = []
        windows = WindowStates(self._windows, T)
        record = self._windows is not None  # a feed-forward policy's state is None: nothing recorded either way
        for t in range(T):
            step = nxt
            windows.record(t, self._columns(self.home_state) if record else None)
            actions, home = self._act(step)
            buf['obs'][t] = step.obs
            if 'action_mask' in buf:
                buf['action_mask'][t] = step.action_mask
            for name in ('action', 'log_prob', 'value'):
                buf[name][t] = home[name]
            buf['value_mask'][t] = home['controlled']
            buf['train_mask'][t] = home['controlled'] & step.to_move
            nxt = self.current = self.env.step(actions)
            buf['reward'][t] = nxt.reward
            buf['terminated'][t] = nxt.terminated[:, None]
            buf['truncated'][t] = nxt.truncated[:, None]
            if 'next_obs' in buf:
                buf['next_obs'][t] = nxt.final_obs
            if 'opponent' in buf:  # S - 1 opponents at once: no one opponent to name (see the module docstring)
                buf['opponent'][t] = UNTAGGED
                buf['opponent_version'][t] = 0
            returns += nxt.reward
            cut = np.flatnonzero(nxt.truncated & ~nxt.terminated)
            if len(cut):
                bootstrap[t, cut] = self._values(nxt.final_obs[cut], take_rows(self.home_state, cut))
            for slot in np.flatnonzero(nxt.terminated | nxt.truncated).tolist():
                order = np.argsort(self.seat_job_index[slot])  # seats in job order
                results.append((tuple(self.job_ids[slot]), tuple(int(r) for r in nxt.rank[slot, order]),
                                None if teams is None else tuple(int(teams[s]) for s in order)))
                episode_returns.append(float(returns[slot, self.home_seat[slot]]))
                returns[slot] = 0.0
                self.home_seat[slot] = (self.home_seat[slot] + 1) % S
                self.opponent_states.zero(slot)
                self._assign(slot)
        self._next_values(buf, bootstrap, nxt.obs)
        data = {k: v.reshape(T, B * S, *v.shape[3:]) for k, v in buf.items()}
        data.update(windows.arrays())
        self.env_steps += T * B
        self.episodes += len(results)
        self.collect_seconds += time.perf_counter() - started
        return Chunk(data=data, version=version, player_id=self.player_id, rankings=results, env_steps=T * B,
                     episode_returns=episode_returns)

    def _act(self, step: MultiSeatStep) -> Tuple[np.ndarray, Dict[str, np.ndarray]]:
        """Every seat's action ``[B, S, *action_shape]`` and the home policy's outputs where it holds a seat.

        The home policy acts for every seat it holds; every other opponent once for the seats it plays, where they
        are to move (a recurrent one at every seat it plays, to keep its state in step with the game)."""
        B, S = self.env.num_envs, self.seats
        mask = None if self.continuous else step.action_mask
        rows, seats = np.nonzero(self.held)
        groups: Dict[int, Tuple[Policy, List[Tuple[int, int]]]] = {}
        for b, s in zip(*np.nonzero((step.to_move | self.recurrent_opponent) & ~self.held)):
            policy = self.seat_policy[b][s]
            groups.setdefault(id(policy), (policy, []))[1].append((int(b), int(s)))
        index = [(np.array([b for b, _ in cells]), np.array([s for _, s in cells])) for _, cells in groups.values()]
        calls = [ActCall(self.policy, step.obs[rows, seats], take_rows(self.home_state, (rows, seats)),
                         None if mask is None else mask[rows, seats])]
        calls += [ActCall(policy, step.obs[r, c], take_rows(self.opponent_states.of(policy), (r, c)),
                          None if mask is None else mask[r, c])
                  for (policy, _), (r, c) in zip(groups.values(), index)]
        out, *others = act_together(calls)
        put_rows(self.home_state, (rows, seats), out.state)
        actions = np.zeros((B, S) + self.action_shape, self.action_dtype)
        actions[rows, seats] = out.action
        home = dict(action=actions.copy(), log_prob=np.zeros((B, S), np.float32),
                    value=np.zeros((B, S), np.float32), controlled=self._home_columns())
        home['log_prob'][rows, seats] = out.log_prob
        home['value'][rows, seats] = out.value
        for (policy, _), (r, c), o in zip(groups.values(), index, others):
            put_rows(self.opponent_states.of(policy), (r, c), o.state)
            moves = step.to_move[r, c]
            actions[r[moves], c[moves]] = np.asarray(o.action)[moves]
        return actions, home

    def _next_values(self, buf: Dict[str, np.ndarray], bootstrap: np.ndarray, last_obs: np.ndarray) -> None:
        """The value after each step: the next step's, the last observation's after the last, a finished game's
        ``bootstrap`` (0 where it ended by its rules, its final observation's value where it was cut short)."""
        next_value = buf['next_value']
        next_value[:-1] = buf['value'][1:]
        next_value[-1] = self._values(last_obs, self.home_state)
        done = buf['terminated'] | buf['truncated']
        next_value[done] = bootstrap[done]

    def _values(self, obs: np.ndarray, state: State) -> np.ndarray:
        """The home policy's values of observations ``[n, S, *obs_shape]`` (from its states ``[n, S, ...]``),
        shaped ``[n, S]``."""
        return self.policy.value(obs.reshape(-1, *obs.shape[2:]), self._columns(state)).reshape(obs.shape[:2])
