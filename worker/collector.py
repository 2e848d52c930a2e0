"""Single-agent collector: plays a policy in a vectorised env manager and emits ``Chunk``s.

Each ``collect()`` runs ``n_steps`` vector steps and returns ``[T, B, ...]`` arrays. Episodes
continue across calls. ``next_value`` is filled so that GAE bootstraps a truncated episode
from its final observation and never bootstraps a terminated one. A recurrent policy's state is
carried across calls too, zeroed per env when its episode ends, and recorded at the start of
every BPTT window into the chunk (``window_state_<i>``) for the learner to recompute from.
"""
from __future__ import annotations

import time
from typing import Optional, cast

import numpy as np

from sparring.policy.base import Policy
from sparring.policy.chunk_spec import ChunkSpaces
from sparring.worker.chunk import Chunk
from sparring.worker.recurrent_state import State, WindowStates, initial_state, take_rows, zero_rows


class CollectorCounters:
    """Env steps, finished episodes and seconds spent collecting: what a checkpoint keeps of a collector."""

    def __init__(self, n_steps: int) -> None:
        if n_steps < 1:
            raise ValueError(f'{type(self).__name__}: n_steps must be >= 1, got {n_steps}')
        self.n_steps = n_steps
        self.env_steps = 0
        self.episodes = 0
        self.collect_seconds = 0.0

    def state_dict(self) -> dict:
        return dict(env_steps=self.env_steps, episodes=self.episodes, collect_seconds=self.collect_seconds)

    def load_state_dict(self, state: dict) -> None:
        self.env_steps = int(state['env_steps'])
        self.episodes = int(state['episodes'])
        self.collect_seconds = float(state['collect_seconds'])


class SampleCollector(CollectorCounters):
    """Collects ``[T, B, ...]`` chunks of a single-agent policy (see the module docstring).

    Args:
        env_manager: the vectorised envs it steps (B of them).
        policy: the policy that acts.
        n_steps: vector steps per chunk (T).
        player_id: the name its chunks carry (a single-agent run's one player).
    """

    def __init__(self, env_manager, policy: Policy, n_steps: int, player_id: Optional[str] = None) -> None:
        super().__init__(n_steps)
        self.env = env_manager
        self.policy = policy
        self.player_id = player_id
        # What the policy learns from: the buffers a chunk is collected into (``next_obs`` only if it names it).
        self.spec = policy.chunk_spec(ChunkSpaces(env_manager.observation_space, env_manager.action_space))
        self._obs: Optional[np.ndarray] = None
        self._state: State = None  # the recurrent policy's state per env, carried across chunks
        self.last_steps_per_second = 0.0

    def close(self) -> None:
        """Close the collector's envs."""
        self.env.close()

    def reset(self) -> None:
        """Start fresh episodes in every env (the next ``collect`` would otherwise continue them)."""
        self._obs = self.env.reset()
        self._state = initial_state(self.policy, self.env.num_envs)

    def collect(self) -> Chunk:
        if self._obs is None:
            self.reset()
        started = time.perf_counter()
        T, B = self.n_steps, self.env.num_envs
        obs, state = cast(np.ndarray, self._obs), self._state  # set by reset()
        windows = WindowStates(self.spec.window_len, T)
        buf = self.spec.allocate((T, B), ('obs', 'action', 'reward', 'terminated', 'truncated', 'value', 'log_prob',
                                          'next_value', 'next_obs'))
        bootstrap = np.zeros((T, B), dtype=np.float32)
        returns, lengths = [], []
        version = self.policy.version
        for t in range(T):
            windows.record(t, state)
            out = self.policy.act(obs, state)
            state = out.state
            buf['obs'][t] = obs
            buf['action'][t] = out.action
            buf['value'][t] = out.value
            buf['log_prob'][t] = out.log_prob
            step = self.env.step(out.action)
            buf['reward'][t] = step.reward
            buf['terminated'][t] = step.terminated
            buf['truncated'][t] = step.truncated
            if 'next_obs' in buf:
                buf['next_obs'][t] = step.final_obs  # equal to step.obs where the episode goes on
            cut = step.truncated & ~step.terminated
            if cut.any():
                # A time limit is not a death: value the state the episode was cut in.
                bootstrap[t, cut] = self.policy.value(step.final_obs[cut], take_rows(state, cut))
            done = step.terminated | step.truncated
            if done.any():
                zero_rows(state, done)
                returns.extend(step.episode_return[done].tolist())
                lengths.extend(step.episode_length[done].tolist())
            obs = step.obs
        self._obs, self._state = obs, state
        next_value = buf['next_value']
        next_value[:-1] = buf['value'][1:]
        next_value[-1] = self.policy.value(obs, state)
        done = buf['terminated'] | buf['truncated']
        next_value[done] = bootstrap[done]
        buf.update(windows.arrays())
        self.env_steps += T * B
        self.episodes += len(returns)
        seconds = time.perf_counter() - started
        self.collect_seconds += seconds
        self.last_steps_per_second = T * B / max(seconds, 1e-9)
        return Chunk(data=buf, version=version, player_id=self.player_id, episode_returns=returns,
                     episode_lengths=lengths)
