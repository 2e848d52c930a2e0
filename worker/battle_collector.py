"""Battle collector: the home player's experience from B two-seat games against league opponents.

Each slot's opponent comes from ``sample_opponent(slot) -> (opponent_id, policy)`` (in a
league run: ``league.get_job_info`` and the policy pool), drawn anew whenever the slot's game
ends, so opponents differ per slot and per game. Chunks are columnar ``[T, 2B, ...]``: column
``2b + s`` is seat s of slot b. ``train_mask`` marks the steps to learn from: the home seat
where it had to move, plus, in self-play games when ``train_both_sides`` is on, the other
seat too. Steps where a seat did not move (turn-based games) stay in the time line, so GAE
carries the reward back to that seat's previous move; they train the value (``value_mask``)
but not the policy. Every
finished game is reported once in ``chunk.results``. A recurrent home policy's state (kept by the
arena per slot and seat, zeroed when a game ends) is recorded at the start of every BPTT window
as ``window_state_<i>`` arrays ``[W, 2B, ...]``, column for column like the rest of the chunk.
In a team env (``team_size`` N) every agent is a column: chunks are ``[T, 2B * N, ...]``, column
``(2b + s) * N + i`` being agent i of seat s in slot b. With a ``search`` (expert iteration) the home
player's moves are the search's, and chunks add its visit distributions ``search_policy`` ``[T, 2B, A]``
and its values of the positions ``search_value`` ``[T, 2B]`` (and the solver's targets near the end, the
search's ``label_columns``). In a game with continuous (``Box``) actions
``action`` is float32 ``[T, 2B, *action_shape]`` as the policy sampled it (the env clips), and the chunk
has no ``action_mask``: every action is legal, and a placeholder would only cost bytes on the wire.
"""
from __future__ import annotations

import time
from typing import Callable, Tuple

import numpy as np

from sparring.policy.base import Policy
from sparring.policy.replay_opponents import opponent_code
from sparring.worker.battle_arena import Arena
from sparring.worker.chunk import Chunk
from sparring.worker.collector import CollectorCounters
from sparring.worker.recurrent_state import WindowStates, take_rows

OpponentSampler = Callable[[int], Tuple[str, Policy]]


class BattleCollector(CollectorCounters):
    def __init__(self, env, policy: Policy, n_steps: int, sample_opponent: OpponentSampler,
                 player_id: str = None, train_both_sides: bool = True, search=None) -> None:
        super().__init__(n_steps)
        self.arena = Arena(env, policy, search=search)
        self.policy = policy
        self.sample_opponent = sample_opponent
        self.player_id = player_id
        self.train_both_sides = train_both_sides
        self._started = False

    def close(self) -> None:
        """Close the collector's envs."""
        self.arena.env.close()

    def _assign(self, slot: int) -> None:
        opponent_id, policy = self.sample_opponent(slot)
        self.arena.set_opponent(slot, opponent_id, policy)

    def collect(self) -> Chunk:
        arena = self.arena
        if not self._started:
            arena.reset()
            for slot in range(arena.num_envs):
                self._assign(slot)
            self._started = True
        started = time.perf_counter()
        T, B = self.n_steps, arena.num_envs
        obs0 = arena.step_result.obs
        obs_shape = obs0.shape[2 + len(arena.agent_shape):]
        shape2 = (T, B, 2, *arena.agent_shape)
        buf = dict(
            obs=np.empty((*shape2, *obs_shape), dtype=obs0.dtype),
            action=np.empty((*shape2, *arena.action_shape), dtype=arena.action_dtype), log_prob=np.empty(shape2, dtype=np.float32),
            value=np.empty(shape2, dtype=np.float32), reward=np.empty(shape2, dtype=np.float32),
            terminated=np.empty(shape2, dtype=bool), truncated=np.empty(shape2, dtype=bool),
            train_mask=np.empty(shape2, dtype=bool), value_mask=np.empty(shape2, dtype=bool),
        )
        if not arena.continuous:
            buf['action_mask'] = np.empty((*shape2, arena.step_result.action_mask.shape[-1]), dtype=bool)
        if getattr(self.policy, 'needs_next_obs', False):  # it bootstraps from these itself (DQN)
            buf['next_obs'] = np.empty_like(buf['obs'])
        if getattr(self.policy, 'records_opponents', False):  # whom each move was against (a replay forgets by it)
            buf['opponent'] = np.empty(shape2, dtype=np.int64)
            buf['opponent_version'] = np.empty(shape2, dtype=np.int64)
        if arena.search is not None:
            buf['search_policy'] = np.empty((*shape2, buf['action_mask'].shape[-1]), dtype=np.float32)
            buf['search_value'] = np.empty(shape2, dtype=np.float32)
        label_columns = getattr(arena.search, 'label_columns', None) or {}  # the solver's targets near the end
        for name, (shape, dtype) in label_columns.items():
            buf[name] = np.empty((*shape2, *shape), dtype)
        bootstrap = np.zeros(shape2, dtype=np.float32)
        results = []
        version = self.policy.version
        windows = WindowStates(self.policy, T)
        for t in range(T):
            step = arena.step_result
            windows.record(t, arena.columns(arena.home_state))
            actions, home = arena.act()
            learnable = home['home_controlled'].copy()
            if not self.train_both_sides:
                learnable[:] = False
                learnable[np.arange(B), arena.home_seat] = True
            buf['obs'][t] = step.obs
            if 'action_mask' in buf:
                buf['action_mask'][t] = step.action_mask
            buf['action'][t] = home['action']
            buf['log_prob'][t] = home['log_prob']
            buf['value'][t] = home['value']
            if 'search_policy' in buf:
                buf['search_policy'][t] = home['search_policy']
                buf['search_value'][t] = home['search_value']
            for name in label_columns:
                buf[name][t] = home[name]
            buf['value_mask'][t] = learnable
            if 'opponent' in buf:
                per_slot = (B,) + (1,) * (len(shape2) - 2)
                buf['opponent'][t] = np.array([opponent_code(o) for o in arena.opponent_ids]).reshape(per_slot)
                buf['opponent_version'][t] = np.array([int(getattr(o, 'version', 0)) for o in arena.opponents]
                                                      ).reshape(per_slot)
            buf['train_mask'][t] = learnable & arena.per_agent(step.to_move)
            nxt = arena.step(actions)
            buf['reward'][t] = nxt.reward
            buf['terminated'][t] = arena.per_agent(nxt.terminated[:, None])
            buf['truncated'][t] = arena.per_agent(nxt.truncated[:, None])
            if 'next_obs' in buf:
                buf['next_obs'][t] = nxt.final_obs  # equal to nxt.obs where the game goes on
            cut = nxt.truncated & ~nxt.terminated
            if cut.any():
                # A game cut by a step limit is bootstrapped from its last observation.
                rows = np.flatnonzero(cut)
                bootstrap[t, rows] = self.policy.value(nxt.final_obs[rows].reshape(-1, *obs_shape),
                                                       arena.columns(take_rows(arena.home_state, rows))) \
                    .reshape(len(rows), *shape2[2:])
            for slot, opponent_id, outcome in arena.finished(nxt):
                results.append((opponent_id, outcome))
                self._assign(slot)
        last_obs = arena.step_result.obs
        next_value = np.empty(shape2, dtype=np.float32)
        next_value[:-1] = buf['value'][1:]
        next_value[-1] = self.policy.value(last_obs.reshape(-1, *obs_shape),
                                           arena.columns(arena.home_state)).reshape(B, *shape2[2:])
        done = buf['terminated'] | buf['truncated']
        next_value[done] = bootstrap[done]
        buf['next_value'] = next_value
        data = {k: v.reshape(T, -1, *v.shape[len(shape2):]) for k, v in buf.items()}
        data.update(windows.arrays())
        self.env_steps += T * B
        self.episodes += len(results)
        self.collect_seconds += time.perf_counter() - started
        return Chunk(data=data, version=version, player_id=self.player_id, results=results, env_steps=T * B)
