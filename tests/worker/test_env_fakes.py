"""Tiny envs for the env tests, registered as 'fake_counter' (a module, not tests).

Env subprocesses started with 'spawn' register them by importing this module by name: a test
puts this folder on ``sys.path`` (inherited by spawned children) and passes
``import_names=['test_env_fakes']``. pytest may import the file under another module name too,
so registration is skipped when the name is already taken.

The counter env observes ``[t, episodes_started]``, terminates at step ``terminate_at`` and
truncates at step ``truncate_at`` (0 disables either), and misbehaves as ``fault`` says from
step ``fault_at`` on.
"""
import time

import gymnasium
import numpy as np

from sparring.config.registry import ENV_REGISTRY

FAULTS = ('', 'obs_shape', 'nan_obs', 'nan_reward', 'reward_not_scalar', 'int_terminated', 'truncated_none',
          'four_tuple', 'info_not_dict', 'raise', 'sleep')


class CounterEnv(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(3)

    @classmethod
    def default_config(cls) -> dict:
        return dict(terminate_at=0, truncate_at=0, fault='', fault_at=1, manager=dict(type='base'))

    def __init__(self, cfg) -> None:
        assert cfg.fault in FAULTS, cfg.fault
        self.cfg = cfg
        self.t = 0
        self.episodes = 0

    def _obs(self) -> np.ndarray:
        return np.array([self.t, self.episodes], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.episodes += 1
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        cfg = self.cfg
        terminated = bool(cfg.terminate_at and self.t >= cfg.terminate_at)
        truncated = bool(cfg.truncate_at and self.t >= cfg.truncate_at)
        obs, reward, info = self._obs(), float(action), {'t': self.t}
        fault = cfg.fault if self.t >= cfg.fault_at else ''
        if fault == 'obs_shape':
            obs = np.zeros(3, np.float32)
        elif fault == 'nan_obs':
            obs[1] = np.nan
        elif fault == 'nan_reward':
            reward = float('nan')
        elif fault == 'reward_not_scalar':
            reward = np.array([1.0, 2.0])
        elif fault == 'int_terminated':
            terminated = 1
        elif fault == 'truncated_none':
            truncated = None
        elif fault == 'four_tuple':
            return obs, reward, terminated, info
        elif fault == 'info_not_dict':
            info = ['not', 'a', 'dict']
        elif fault == 'raise':
            raise ValueError('boom from the counter env')
        elif fault == 'sleep':
            time.sleep(30)
        return obs, reward, terminated, truncated, info


if 'fake_counter' not in ENV_REGISTRY:
    ENV_REGISTRY.register('fake_counter', CounterEnv)
