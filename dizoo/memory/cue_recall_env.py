"""Cue recall, a memory task: see a cue, wait through blank steps, then name the cue when asked.

An episode shows one of ``num_cues`` cues (one-hot) on its first observation, then ``delay``
blank observations, then a query observation (the last channel set). The action taken at the
query is the answer: reward 1 if it names the cue, 0 otherwise, and the episode ends; actions
before it do nothing. Episodes last ``delay + 2`` steps and return 1 or 0.

At the query the observation is the same whatever the cue, so a feed-forward policy can do no
better than guess (return ``1 / num_cues`` on average); a recurrent one can carry the cue and
reach 1.
"""
from __future__ import annotations

from typing import Mapping, Optional

import gymnasium
import numpy as np

from sparring.config.compile import compile_section
from sparring.config.schema import in_range, of_type
from sparring.config.registry import ENV_REGISTRY


@ENV_REGISTRY.register('cue_recall')
class CueRecallEnv(gymnasium.Env):
    registry_name: str  # the name ENV_REGISTRY.register gave the class

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            num_cues=4,  # cues to tell apart, and actions to answer with
            delay=8,  # blank steps between the cue and the query
            collector_env_num=8,  # envs each collector steps side by side (one batch of the policy's forward pass)
            evaluator_env_num=8,  # envs an evaluation steps side by side
            n_evaluator_episodes=64,  # episodes (games, in a battle: per opponent) one evaluation plays
            stop_value=None,  # an evaluation mean return (success rate) at which training may stop
            manager=dict(type='base'),  # a few numpy operations per step: in process
        )

    config_constraints = {
        'num_cues': in_range(2, None),
        'delay': in_range(0, None),
        'collector_env_num': in_range(1, None),
        'evaluator_env_num': in_range(1, None),
        'n_evaluator_episodes': in_range(1, None),
        'stop_value': of_type(int, float, allow_none=True),
    }

    def __init__(self, cfg: Optional[Mapping] = None) -> None:
        section = compile_section('env', {'type': self.registry_name, **(cfg or {})})
        self.cfg = section
        self.num_cues = int(section.num_cues)
        self.delay = int(section.delay)
        self.observation_space = gymnasium.spaces.Box(0.0, 1.0, (self.num_cues + 1,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(self.num_cues)
        self._cue = 0
        self._t = 0  # steps taken in the episode: the query comes at t == delay + 1

    def _observation(self) -> np.ndarray:
        obs = np.zeros(self.num_cues + 1, np.float32)
        if self._t == 0:
            obs[self._cue] = 1.0
        elif self._t == self.delay + 1:
            obs[-1] = 1.0
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._cue = int(self.np_random.integers(self.num_cues))
        self._t = 0
        return self._observation(), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f'cue_recall: action {action!r} is not in {self.action_space}')
        if self._t == self.delay + 1:
            reward = 1.0 if int(action) == self._cue else 0.0
            return np.zeros(self.num_cues + 1, np.float32), reward, True, False, {'cue': self._cue}
        self._t += 1
        return self._observation(), 0.0, False, False, {}
