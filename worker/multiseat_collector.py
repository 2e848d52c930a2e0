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
are (:mod:`sparring.league.multiseat`).

Feed-forward policies with discrete actions (recurrent ones and searches are for the two-seat collector).
"""
from __future__ import annotations

import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from sparring.policy.base import Policy
from sparring.policy.chunk_spec import PER_STEP, ChunkSpaces
from sparring.worker.chunk import Chunk
from sparring.worker.collector import CollectorCounters
from sparring.worker.env.multiseat_api import MultiSeatStep
from sparring.worker.inference_wave import ActCall, act_together
from sparring.worker.recurrent_state import is_recurrent

OpponentsSampler = Callable[[int], Tuple[Sequence[str], Sequence[Policy]]]
FIELDS = ('obs', 'action_mask', 'action', 'log_prob', 'value', 'reward', 'terminated', 'truncated', 'next_obs',
          'train_mask', 'value_mask', 'next_value')


class MultiSeatCollector(CollectorCounters):
    """Collects the home player's ``[T, S * B, ...]`` chunks from games of S seats (see the module docstring).

    Args:
        env: the vectorised S-seat env (B games; :mod:`sparring.worker.env.multiseat_api`).
        policy: the home player's policy.
        n_steps: vector steps per chunk (T).
        sample_opponents: ``sample_opponents(slot) -> (player_ids, policies)``, called whenever a slot's game ends.
        player_id: the home player's name, which its chunks carry.
        train_own_seats: learn from the seats the league gave the home player itself, not only from its own.
    """

    def __init__(self, env, policy: Policy, n_steps: int, sample_opponents: OpponentsSampler,
                 player_id: Optional[str] = None, train_own_seats: bool = True) -> None:
        super().__init__(n_steps)
        if is_recurrent(policy):
            raise ValueError('multi-seat collector: the home policy is recurrent; games of three or more seats are '
                             'collected for feed-forward policies')
        self.env, self.policy, self.sample_opponents = env, policy, sample_opponents
        self.player_id, self.train_own_seats = player_id, train_own_seats
        B, S = env.num_envs, env.num_seats
        self.seats = S
        self.spec = policy.chunk_spec(ChunkSpaces(env.observation_space, env.action_space, battle=True))
        missing = [f.name for f in self.spec if f.per == PER_STEP and f.required and f.name not in FIELDS]
        if missing:
            raise ValueError(f'multi-seat collector: the policy learns from {missing}, which this collection does not '
                             f'record')
        self._fields = [f.name for f in self.spec if f.per == PER_STEP and f.name in FIELDS]
        self.home_seat = np.arange(B) % S
        self.job_ids: List[Sequence[str]] = [()] * B
        self.seat_policy: List[List[Optional[Policy]]] = [[None] * S for _ in range(B)]
        self.seat_job_index = np.zeros((B, S), np.int64)  # the position in the job's player ids of each seat's player
        self.current: Optional[MultiSeatStep] = None

    def close(self) -> None:
        """Close the collector's envs."""
        self.env.close()

    def _assign(self, slot: int) -> None:
        """Seat the home player and a newly drawn job's opponents in ``slot``."""
        player_ids, opponents = self.sample_opponents(slot)
        if len(player_ids) != self.seats or len(opponents) != self.seats - 1:
            raise ValueError(f'multi-seat collector: a job for {self.seats} seats gave {len(player_ids)} player ids '
                             f'and {len(opponents)} opponents; expected {self.seats} and {self.seats - 1}')
        home = int(self.home_seat[slot])
        self.job_ids[slot] = tuple(player_ids)
        self.seat_policy[slot][home] = self.policy
        self.seat_job_index[slot, home] = 0
        for k, opponent in enumerate(opponents, start=1):
            seat = (home + k) % self.seats
            self.seat_policy[slot][seat] = opponent
            self.seat_job_index[slot, seat] = k

    def _home_columns(self) -> np.ndarray:
        """``[B, S]`` the seats the home policy acts for: its own, plus its self-play seats."""
        B = self.env.num_envs
        held = np.array([[p is self.policy for p in seats] for seats in self.seat_policy])
        if not self.train_own_seats:
            own = np.zeros_like(held)
            own[np.arange(B), self.home_seat] = True
            return own
        return held

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
        for t in range(T):
            step = nxt
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
            returns += nxt.reward
            cut = np.flatnonzero(nxt.truncated & ~nxt.terminated)
            if len(cut):
                bootstrap[t, cut] = self._values(nxt.final_obs[cut])
            for slot in np.flatnonzero(nxt.terminated | nxt.truncated).tolist():
                order = np.argsort(self.seat_job_index[slot])  # seats in job order
                results.append((tuple(self.job_ids[slot]), tuple(int(r) for r in nxt.rank[slot, order]),
                                None if teams is None else tuple(int(teams[s]) for s in order)))
                episode_returns.append(float(returns[slot, self.home_seat[slot]]))
                returns[slot] = 0.0
                self.home_seat[slot] = (self.home_seat[slot] + 1) % S
                self._assign(slot)
        self._next_values(buf, bootstrap, nxt.obs)
        data = {k: v.reshape(T, B * S, *v.shape[3:]) for k, v in buf.items()}
        self.env_steps += T * B
        self.episodes += len(results)
        self.collect_seconds += time.perf_counter() - started
        return Chunk(data=data, version=version, player_id=self.player_id, rankings=results, env_steps=T * B,
                     episode_returns=episode_returns)

    def _act(self, step: MultiSeatStep) -> Tuple[np.ndarray, Dict[str, np.ndarray]]:
        """Every seat's action ``[B, S]`` and the home policy's outputs where it holds a seat."""
        B, S = self.env.num_envs, self.seats
        controlled = self._home_columns()
        held_by_home = np.array([[p is self.policy for p in seats] for seats in self.seat_policy])
        rows, seats = np.nonzero(held_by_home)
        groups: Dict[int, Tuple[Policy, List[Tuple[int, int]]]] = {}
        for b, s in zip(*np.nonzero(step.to_move & ~held_by_home)):
            policy = self.seat_policy[b][s]
            groups.setdefault(id(policy), (policy, []))[1].append((int(b), int(s)))
        calls = [ActCall(self.policy, step.obs[rows, seats], None, step.action_mask[rows, seats])]
        index = [(np.array([b for b, _ in cells]), np.array([s for _, s in cells])) for _, cells in groups.values()]
        calls += [ActCall(policy, step.obs[r, c], None, step.action_mask[r, c])
                  for (policy, _), (r, c) in zip(groups.values(), index)]
        out, *others = act_together(calls)
        actions = np.zeros((B, S), np.int64)
        actions[rows, seats] = out.action
        home = dict(action=actions.copy(), log_prob=np.zeros((B, S), np.float32),
                    value=np.zeros((B, S), np.float32), controlled=controlled)
        home['log_prob'][rows, seats] = out.log_prob
        home['value'][rows, seats] = out.value
        for (r, c), o in zip(index, others):
            actions[r, c] = o.action
        return actions, home

    def _next_values(self, buf: Dict[str, np.ndarray], bootstrap: np.ndarray, last_obs: np.ndarray) -> None:
        """The value after each step: the next step's, the last observation's after the last, a finished game's
        ``bootstrap`` (0 where it ended by its rules, its final observation's value where it was cut short)."""
        next_value = buf['next_value']
        next_value[:-1] = buf['value'][1:]
        next_value[-1] = self._values(last_obs)
        done = buf['terminated'] | buf['truncated']
        next_value[done] = bootstrap[done]

    def _values(self, obs: np.ndarray) -> np.ndarray:
        """The home policy's values of observations ``[n, S, *obs_shape]``, shaped ``[n, S]``."""
        return self.policy.value(obs.reshape(-1, *obs.shape[2:])).reshape(obs.shape[:2])
