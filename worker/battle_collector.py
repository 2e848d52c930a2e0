"""Battle collector: the home player's experience from B two-seat games against league opponents.

Each slot's opponent comes from ``sample_opponent(slot) -> (opponent_id, policy)`` (in a
league run: ``league.get_job_info`` and the policy pool), drawn anew whenever the slot's game
ends, so opponents differ per slot and per game. Chunks are columnar ``[T, 2B, ...]``: column
``2b + s`` is seat s of slot b. ``train_mask`` marks the steps to learn from: the home seat
where it had to move, plus, in self-play games when ``train_both_sides`` is on, the other
seat too. Steps where a seat did not move (turn-based games) stay in the time line, so GAE
carries the reward back to that seat's previous move; they train the value (``value_mask``)
but not the policy. The arrays a chunk holds are those the home policy's chunk spec names
(:mod:`sparring.policy.chunk_spec`): its buffers are allocated from the spec, and an optional field
(``next_obs``, whom each move was against, the search's records) is recorded exactly when the spec names it. Every
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
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from sparring.policy.base import Policy
from sparring.policy.chunk_spec import PER_STEP, ChunkSpaces
from sparring.policy.replay_opponents import opponent_code
from sparring.worker.role_arena import make_arena
from sparring.worker.chunk import Chunk
from sparring.worker.collector import CollectorCounters
from sparring.worker.recurrent_state import WindowStates, take_rows

OpponentSampler = Callable[[int], Tuple[str, Policy]]

# Per-step arrays this collector fills from the games themselves, whatever plays them.
GAME_FIELDS = ('obs', 'action_mask', 'reward', 'terminated', 'truncated', 'next_obs', 'train_mask', 'value_mask',
               'next_value', 'opponent', 'opponent_version')
# The home policy's outputs at each step (``Arena.act``), recorded under their own names; a search adds its own.
HOME_OUTPUTS = ('action', 'log_prob', 'value')
SEARCH_OUTPUTS = ('search_policy', 'search_value')


class BattleCollector(CollectorCounters):
    """Collects the home player's ``[T, 2B, ...]`` chunks from two-seat games (see the module docstring).

    Args:
        env: the vectorised battle env (B games).
        policy: the home player's policy.
        n_steps: vector steps per chunk (T).
        sample_opponent: ``sample_opponent(slot) -> (opponent_id, policy)``, called whenever a slot's game ends.
        player_id: the home player's name, which its chunks carry.
        train_both_sides: in self-play games, learn from both seats' moves.
        search: the expert-iteration search that chooses the home player's moves (``battle.collect_search``),
            or None to act with the policy.
        role: in a game whose seats have roles, the home player's role: it plays that seat only, and its chunks
            hold only that seat's columns ``[T, B, ...]`` (:mod:`~sparring.worker.role_arena`); None otherwise.
    """

    def __init__(self, env, policy: Policy, n_steps: int, sample_opponent: OpponentSampler,
                 player_id: Optional[str] = None, train_both_sides: bool = True, search=None,
                 role: Optional[str] = None) -> None:
        super().__init__(n_steps)
        self.arena = make_arena(env, policy, role=role, search=search)
        self.policy = policy
        self.sample_opponent = sample_opponent
        self.player_id = player_id
        self.train_both_sides = train_both_sides
        self._started = False
        obs_space, act_space = self.arena.home_spaces
        self.spec = policy.chunk_spec(ChunkSpaces(obs_space, act_space, battle=True))
        searched = () if search is None else SEARCH_OUTPUTS + tuple(getattr(search, 'label_columns', None) or ())
        self._home_outputs = [name for name in HOME_OUTPUTS + searched if name in self.spec]
        can_fill = set(GAME_FIELDS + HOME_OUTPUTS + searched)
        missing = [f.name for f in self.spec if f.per == PER_STEP and f.required and f.name not in can_fill]
        if missing:
            raise ValueError(f'battle collector: the policy learns from {missing}, which this collection does not '
                             f'record{"" if search else " (a search records its visits: battle.collect_search)"}')
        self._fields = [f.name for f in self.spec if f.per == PER_STEP and f.name in can_fill]

    def close(self) -> None:
        """Close the collector's envs."""
        self.arena.env.close()

    def _assign(self, slot: int) -> None:
        opponent_id, policy = self.sample_opponent(slot)
        self.arena.set_opponent(slot, opponent_id, policy)

    def _start(self) -> None:
        """The first games, and an opponent for every slot (later ones come as games end)."""
        self.arena.reset()
        for slot in range(self.arena.num_envs):
            self._assign(slot)
        self._started = True

    def collect(self) -> Chunk:
        if not self._started:
            self._start()
        started = time.perf_counter()
        arena = self.arena
        T, B = self.n_steps, arena.num_envs
        lead = (T, B, arena.chunk_seats, *arena.agent_shape)
        buf = self.spec.allocate(lead, self._fields)
        bootstrap = np.zeros(lead, dtype=np.float32)
        results: List[Tuple[str, str]] = []
        version = self.policy.version
        windows = WindowStates(self.spec.window_len, T)
        for t in range(T):
            windows.record(t, arena.columns(arena.home_state))
            nxt = arena.step(self._record_move(buf, t))
            self._record_outcome(buf, bootstrap, t)
            for slot, opponent_id, outcome in arena.finished(nxt):
                results.append((opponent_id, outcome))
                self._assign(slot)
        self._record_next_values(buf, bootstrap)
        data = {k: v.reshape(T, -1, *v.shape[len(lead):]) for k, v in buf.items()}
        data.update(windows.arrays())
        self.env_steps += T * B
        self.episodes += len(results)
        self.collect_seconds += time.perf_counter() - started
        return Chunk(data=data, version=version, player_id=self.player_id, results=results, env_steps=T * B)

    def _record_move(self, buf: Dict[str, np.ndarray], t: int) -> np.ndarray:
        """Step ``t``'s observations, the home policy's moves and what to learn from them; returns every seat's action."""
        arena, step = self.arena, self.arena.current
        actions, home = arena.act()
        learnable = home['home_controlled'].copy()
        if not self.train_both_sides:
            learnable[:] = False
            learnable[np.arange(arena.num_envs), arena.home_seat] = True
        buf['obs'][t] = step.obs
        if 'action_mask' in buf:
            buf['action_mask'][t] = step.action_mask
        for name in self._home_outputs:
            buf[name][t] = home[name]
        buf['value_mask'][t] = learnable
        buf['train_mask'][t] = learnable & arena.per_agent(step.to_move)
        if 'opponent' in buf:  # whom each move was against (a replay forgets by it)
            per_slot = (arena.num_envs,) + (1,) * (buf['opponent'].ndim - 2)
            buf['opponent'][t] = np.array([opponent_code(o) for o in arena.opponent_ids]).reshape(per_slot)
            buf['opponent_version'][t] = np.array([int(getattr(o, 'version', 0)) for o in arena.opponents]
                                                  ).reshape(per_slot)
        return actions

    def _record_outcome(self, buf: Dict[str, np.ndarray], bootstrap: np.ndarray, t: int) -> None:
        """Step ``t``'s rewards and endings; a game cut by a step limit is valued at its last observation."""
        arena, nxt = self.arena, self.arena.current
        buf['reward'][t] = nxt.reward
        buf['terminated'][t] = arena.per_agent(nxt.terminated[:, None])
        buf['truncated'][t] = arena.per_agent(nxt.truncated[:, None])
        if 'next_obs' in buf:
            buf['next_obs'][t] = nxt.final_obs  # equal to nxt.obs where the game goes on
        rows = np.flatnonzero(nxt.truncated & ~nxt.terminated)
        if len(rows):
            bootstrap[t, rows] = self._values(nxt.final_obs[rows], take_rows(arena.home_state, rows))

    def _record_next_values(self, buf: Dict[str, np.ndarray], bootstrap: np.ndarray) -> None:
        """The value after each step: the next step's, the last observation's after the last, a cut game's own."""
        next_value = buf['next_value']
        next_value[:-1] = buf['value'][1:]
        next_value[-1] = self._values(self.arena.current.obs, self.arena.home_state)
        done = buf['terminated'] | buf['truncated']
        next_value[done] = bootstrap[done]

    def _values(self, obs: np.ndarray, state) -> np.ndarray:
        """The home policy's values of games' observations ``[n, 2, *agents, ...]`` (and states), in that layout."""
        obs_shape = self.spec['obs'].shape
        values = self.policy.value(obs.reshape(-1, *obs_shape), self.arena.columns(state))
        return values.reshape(obs.shape[:obs.ndim - len(obs_shape)])
