"""Vectorised env managers: ``num_envs`` envs behind one batch-first numpy API.

:func:`make_env_manager` builds the manager that ``env.manager.type`` names: ``'base'`` steps
the envs in a loop in this process (the fast choice for cheap envs), ``'subprocess'`` spreads
them over worker processes (:mod:`sparring.worker.env.subprocess_manager`). A single env always
runs in process.

Every manager (B = ``num_envs``):

* ``reset() -> obs`` ``[B, *obs_shape]``. Env i is seeded with ``seed + i`` (its action space
  too) on the manager's first reset only, so a run is reproducible from its seed.
* ``step(actions) -> StepResult`` (see :class:`~sparring.worker.env.env_group.StepResult`);
  actions are ``[B]`` for Discrete and ``[B, *shape]`` otherwise. Finished envs are reset
  automatically, unseeded.
* ``close()``, idempotent; managers are context managers.
"""
from __future__ import annotations

from typing import List, Mapping, Optional, Sequence

import numpy as np

from sparring.config.compile import compile_section
from sparring.config.registry import ENV_MANAGER_REGISTRY
from sparring.worker.env.env_group import EnvGroup, StepResult
from sparring.worker.env.closeable import Closeable
from sparring.worker.env.errors import EnvError
from sparring.worker.env.gym_env import env_label, import_env_modules
from sparring.worker.env.spaces import ActionBatch, batch_obs_dtype

# Envs whose config section names no manager run in process.
DEFAULT_MANAGER = 'base'


def make_env_manager(env_cfg: Mapping, num_envs: int, seed: Optional[int] = None,
                     import_names: Sequence[str] = ()) -> 'EnvManager':
    """The manager ``env_cfg.manager.type`` names for ``num_envs`` envs; in process when ``num_envs == 1``."""
    import_env_modules(import_names)
    env_cfg = compile_section('env', env_cfg)
    kind = (env_cfg.get('manager') or {}).get('type', DEFAULT_MANAGER) if num_envs != 1 else 'base'
    return ENV_MANAGER_REGISTRY.get(kind)(env_cfg, num_envs, seed, import_names)


class EnvManager(Closeable):
    """What every manager shares: config, seeding, action checks, reset-before-step, closing.

    A subclass builds its envs, calls :meth:`_set_spaces` and implements ``_reset(seeds)``,
    ``_step(actions)`` and ``_close()``.
    """

    config_constraints: dict = {}
    registry_name: str  # the name MANAGER_REGISTRY.register gave the class

    @classmethod
    def default_config(cls) -> dict:
        return {}

    def __init__(self, env_cfg: Mapping, num_envs: int, seed: Optional[int] = None,
                 import_names: Sequence[str] = ()) -> None:
        self.closed = False
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise EnvError(f'{type(self).__name__}: num_envs must be an int >= 1, got {num_envs!r}')
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise EnvError(f'{type(self).__name__}: seed must be an int >= 0 or None, got {seed!r}')
        import_env_modules(import_names)
        self.env_cfg = compile_section('env', env_cfg)
        self.cfg = self._own_section(self.env_cfg)
        self.num_envs = int(num_envs)
        self.seed = None if seed is None else int(seed)
        self.import_names = list(import_names)
        self.label = env_label(self.env_cfg)
        self.reset_infos: List[dict] = []
        self._seeded = False
        self._reset_needed_because: Optional[str] = 'reset() was not called yet'

    def _own_section(self, env_cfg: Mapping):
        """This manager's options: ``env.manager`` if it names this manager, else the defaults."""
        section = env_cfg.get('manager') or {}
        # Built as another kind than the config names (e.g. in process for num_envs == 1): the
        # options in the config belong to that other kind.
        if section.get('type', self.registry_name) != self.registry_name:
            section = {}
        return compile_section('env.manager', {**section, 'type': self.registry_name})

    def _set_spaces(self, observation_space, action_space) -> None:
        self.observation_space = observation_space
        self.action_space = action_space
        self.obs_dtype = batch_obs_dtype(observation_space)
        self._actions = ActionBatch(action_space, self.num_envs, f'{type(self).__name__} ({self.label})')

    def reset(self) -> np.ndarray:
        """Start a new episode in every env; returns the first observations ``[B, *obs_shape]``."""
        self._check_open()
        seeds = None
        if not self._seeded and self.seed is not None:
            seeds = [self.seed + i for i in range(self.num_envs)]
        self._reset_needed_because = 'the last reset() failed'
        obs, self.reset_infos = self._reset(seeds)
        self._seeded = True
        self._reset_needed_because = None
        return obs

    def step(self, actions) -> StepResult:
        """Step every env with its row of ``actions``; finished envs start a new episode."""
        self._check_open()
        if self._reset_needed_because is not None:
            raise EnvError(f'{self!r}: call reset() before step(): {self._reset_needed_because}')
        batch = self._actions.prepare(actions)
        try:
            return self._step(batch)
        except BaseException as err:
            # Some envs may have stepped and others not: only a reset restores a consistent batch.
            self._reset_needed_because = f'an earlier step() failed ({type(err).__name__})'
            raise

    def __repr__(self) -> str:
        return f'{type(self).__name__}(num_envs={getattr(self, "num_envs", "?")}, {getattr(self, "label", "")})'

    def _reset(self, seeds: Optional[List[int]]):
        raise NotImplementedError

    def _step(self, actions: np.ndarray) -> StepResult:
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError


@ENV_MANAGER_REGISTRY.register('base')
class BaseEnvManager(EnvManager):
    """All envs in this process, stepped one after the other."""

    def __init__(self, env_cfg: Mapping, num_envs: int, seed: Optional[int] = None,
                 import_names: Sequence[str] = ()) -> None:
        super().__init__(env_cfg, num_envs, seed, import_names)
        self._group = EnvGroup(self.env_cfg, range(self.num_envs))
        self._set_spaces(self._group.observation_space, self._group.action_space)

    def _reset(self, seeds):
        return self._group.reset(seeds)

    def _step(self, actions: np.ndarray) -> StepResult:
        return self._group.step(actions)

    def _close(self) -> None:
        group = getattr(self, '_group', None)
        if group is not None:
            group.close()
