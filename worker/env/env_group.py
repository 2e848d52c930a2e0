"""Steps a group of envs together: output validation, automatic reset and episode totals.

Both env managers are built on :class:`EnvGroup`: the in-process manager holds one group with
every env, each subprocess worker holds one group with its slice of the envs. A step returns a
:class:`StepResult` of numpy arrays, one row per env of the group.
"""
from __future__ import annotations

import reprlib
from typing import Any, List, Mapping, NamedTuple, Optional, Sequence

import numpy as np

from sparring.config.schema import ConfigError
from sparring.worker.env.closeable import close_all
from sparring.worker.env.errors import EnvError
from sparring.worker.env.gym_env import env_label, make_env
from sparring.worker.env.spaces import ActionBatch, batch_obs_dtype, check_batchable


class StepResult(NamedTuple):
    """One vector step; every array has the envs as its first axis ``B``.

    ``obs`` already holds the first observation of the next episode for envs that finished
    (automatic reset); ``final_obs`` holds the episode's last observation for those envs (to
    bootstrap a truncated episode from) and equals ``obs`` elsewhere. ``episode_return`` and
    ``episode_length`` are the finished episode's totals where ``terminated | truncated`` and
    NaN / 0 elsewhere. ``infos[i]`` is env i's step info; after an automatic reset a non-empty
    reset info is added to it under ``'reset_info'``.
    """
    obs: np.ndarray  # [B, *obs_shape]
    reward: np.ndarray  # [B] float32
    terminated: np.ndarray  # [B] bool
    truncated: np.ndarray  # [B] bool
    final_obs: np.ndarray  # [B, *obs_shape]
    episode_return: np.ndarray  # [B] float64
    episode_length: np.ndarray  # [B] int64
    infos: List[dict]


# Exact types of the values well-behaved envs return, checked by class identity on the hot path;
# anything else takes the slower path that accepts or explains it.
_REAL_SCALARS = frozenset({float, int, np.float64, np.float32, np.float16, np.int64, np.int32, np.int16,
                           np.int8, np.uint64, np.uint32, np.uint16, np.uint8})
_BOOLS = frozenset({bool, np.bool_})
_short = reprlib.Repr()
_short.maxstring = _short.maxother = 80


class EnvGroup:
    """Envs with global indices ``env_indices``, all built from ``env_cfg``, stepped in a loop."""

    def __init__(self, env_cfg: Mapping, env_indices: Sequence[int]) -> None:
        self.env_indices = list(env_indices)
        self.label = env_label(env_cfg)
        self.envs: List[Any] = []
        try:
            for j in range(len(self.env_indices)):
                try:
                    self.envs.append(make_env(env_cfg))
                except ConfigError:
                    raise
                except Exception as err:
                    raise EnvError(f'{self._who(j)} raised {type(err).__name__} while being built: {err}') from err
            self.observation_space = self._common_space('observation_space')
            self.action_space = self._common_space('action_space')
        except BaseException:
            for env in self.envs:
                try:
                    env.close()
                except Exception:  # noqa: BLE001 -- the construction error being raised is the one to report
                    pass
            raise
        check_batchable(self.observation_space, 'observation_space', self.label)
        self.actions = ActionBatch(self.action_space, len(self.envs), self.label)
        self.obs_shape = tuple(self.observation_space.shape)
        self.obs_dtype = batch_obs_dtype(self.observation_space)
        self._space_dtype = np.dtype(self.observation_space.dtype)
        self._obs_is_float = self.obs_dtype.kind == 'f'
        self._batch_obs_shape = (len(self.envs),) + self.obs_shape
        # Bound methods looked up once: the step loop is the hot path of cheap envs.
        self._step_fns = [env.step for env in self.envs]
        self._reset_fns = [env.reset for env in self.envs]
        # Episode totals are kept in Python lists: per env they cost less than numpy updates.
        self._no_return = np.full(len(self.envs), np.nan)
        self._no_length = np.zeros(len(self.envs), np.int64)
        self._running_return = [0.0] * len(self.envs)
        self._steps = 0  # steps of the group; an episode's length is counted from its start
        self._episode_start = [0] * len(self.envs)

    def _common_space(self, attr: str):
        first = None
        for j, env in enumerate(self.envs):
            space = getattr(env, attr, None)
            if space is None:
                raise EnvError(f'{self._who(j)} has no {attr}; expected a gymnasium space')
            if first is None:
                first = space
            elif space != first:
                raise EnvError(f'{self._who(j)} has {attr} {space!r} but env {self.env_indices[0]} has {first!r}; '
                               f'expected identical spaces in one env manager')
        return first

    # -- reset and step ------------------------------------------------------------------------

    def reset(self, seeds: Optional[Sequence[int]] = None):
        """Reset every env (env j seeded with ``seeds[j]``, also its action space); returns ``(obs, infos)``."""
        obs = np.empty(self._batch_obs_shape, self.obs_dtype)
        infos = []
        for j, reset in enumerate(self._reset_fns):
            if seeds is None:
                obs[j], info = self._checked_reset(j, reset)
            else:
                self.envs[j].action_space.seed(seeds[j])
                obs[j], info = self._checked_reset(j, reset, seeds[j])
            infos.append(info)
        self._check_finite_obs(obs, 'reset()')
        self._running_return = [0.0] * len(self.envs)
        self._episode_start = [self._steps] * len(self.envs)
        return obs, infos

    def step(self, actions: np.ndarray) -> StepResult:
        """Step every env with its row of ``actions`` (already checked by :class:`ActionBatch`)."""
        obs = np.empty(self._batch_obs_shape, self.obs_dtype)
        rewards: List[float] = []
        terminated: List[bool] = []
        truncated: List[bool] = []
        infos: List[dict] = []
        finished: List[int] = []
        shape, space_dtype = self.obs_shape, self._space_dtype
        step_fns, running_return = self._step_fns, self._running_return
        for j, action in enumerate(self.actions.split(actions)):
            try:
                out = step_fns[j](action)
            except Exception as err:
                raise EnvError(f'{self._who(j)} raised {type(err).__name__} in step({_short.repr(action)}): '
                               f'{err}') from err
            try:
                o, r, term, trunc, info = out
            except (TypeError, ValueError):
                raise EnvError(self._bad_return(j, 'step()', out, 'a 5-tuple (observation, reward, terminated, '
                               'truncated, info); a 4-tuple is the old gym API with a single done flag')) from None
            if not (o.__class__ is np.ndarray and o.shape == shape and o.dtype == space_dtype):
                o = self._checked_obs(j, o, 'step()')
            obs[j] = o
            # ``r - r`` is 0 for a finite number and NaN (truthy) for NaN or inf.
            # mypy narrows r by the class test to object; the test let only real scalars through
            if r.__class__ not in _REAL_SCALARS or r - r:  # type: ignore[operator]
                r = self._checked_reward(j, r)
            if term.__class__ not in _BOOLS:
                self._bad_flag(j, 'terminated', term)
            if trunc.__class__ not in _BOOLS:
                self._bad_flag(j, 'truncated', trunc)
            if info.__class__ is not dict and not isinstance(info, dict):
                raise EnvError(self._bad_return(j, 'step()', info, 'a dict as info', field='info'))
            rewards.append(r)
            running_return[j] += r
            terminated.append(term)
            truncated.append(trunc)
            infos.append(info)
            if term or trunc:
                finished.append(j)
        self._check_finite_obs(obs, 'step()')

        self._steps += 1
        flags = np.array((terminated, truncated), bool)  # one conversion for both
        episode_return = self._no_return.copy()
        episode_length = self._no_length.copy()
        final_obs = obs.copy()
        if finished:
            for j in finished:
                episode_return[j] = running_return[j]
                episode_length[j] = self._steps - self._episode_start[j]
                running_return[j] = 0.0
                self._episode_start[j] = self._steps
                obs[j], reset_info = self._checked_reset(j, self._reset_fns[j])
                if reset_info:
                    infos[j] = {**infos[j], 'reset_info': reset_info}
            self._check_finite_obs(obs[finished], 'reset()', rows=finished)
        return StepResult(obs, np.array(rewards, np.float32), flags[0], flags[1], final_obs, episode_return,
                          episode_length, infos)

    def close(self) -> None:
        """Close every env, then raise the first error any of them raised while closing."""
        envs, self.envs = self.envs, []
        close_all(envs, f'env ({self.label})')

    # -- validation (the slow paths) -----------------------------------------------------------

    def _who(self, j: int) -> str:
        return f'env {self.env_indices[j]} ({self.label})'

    def _bad_return(self, j: int, call: str, got: Any, expected: str, field: Optional[str] = None) -> str:
        what = f'{field} ' if field else ''
        return (f'{self._who(j)}: {call} returned {what}{_short.repr(got)} of type {type(got).__name__}; '
                f'expected {expected}')

    def _checked_reset(self, j: int, reset, seed: Optional[int] = None):
        try:
            out = reset() if seed is None else reset(seed=seed)
        except Exception as err:
            raise EnvError(f'{self._who(j)} raised {type(err).__name__} in reset(): {err}') from err
        try:
            o, info = out
        except (TypeError, ValueError):
            raise EnvError(self._bad_return(j, 'reset()', out, 'a 2-tuple (observation, info)')) from None
        if not isinstance(info, dict):
            raise EnvError(self._bad_return(j, 'reset()', info, 'a dict as info', field='info'))
        return self._checked_obs(j, o, 'reset()'), info

    def _checked_obs(self, j: int, o: Any, call: str) -> np.ndarray:
        arr = np.asarray(o)
        expected = f'shape {self.obs_shape} and a numeric dtype (observation_space {self.observation_space!r})'
        if arr.shape != self.obs_shape or arr.dtype.kind not in 'biuf':
            raise EnvError(f'{self._who(j)}: {call} returned an observation of shape {arr.shape} and dtype '
                           f'{arr.dtype} ({_short.repr(o)}); expected {expected}')
        if self.obs_dtype.kind in 'iub' and arr.dtype.kind == 'f':
            # Casting would silently truncate: real numbers cannot stand for integer observations.
            raise EnvError(f'{self._who(j)}: {call} returned a real-valued observation of dtype {arr.dtype} for the '
                           f'integer observation_space {self.observation_space!r}; expected integers')
        return arr

    def _checked_reward(self, j: int, r: Any) -> float:
        real = isinstance(r, (int, float, np.integer, np.floating)) or (
            isinstance(r, np.ndarray) and r.shape == () and r.dtype.kind in 'iuf')
        if isinstance(r, (bool, np.bool_)) or not real or not np.isfinite(r):
            raise EnvError(self._bad_return(j, 'step()', r, 'a finite real number (a scalar)', field='reward'))
        return float(r)

    def _bad_flag(self, j: int, field: str, value: Any) -> None:
        raise EnvError(self._bad_return(j, 'step()', value, 'bool or numpy.bool_', field=field))

    def _check_finite_obs(self, obs: np.ndarray, call: str, rows: Optional[List[int]] = None) -> None:
        if not self._obs_is_float:
            return
        total = np.add.reduce(obs, None)  # NaN or inf in, NaN or inf out: one cheap reduction
        if total - total and not np.isfinite(obs).all():  # a sum can overflow: then look closer
            bad = np.flatnonzero(~np.isfinite(obs.reshape(len(obs), -1)).all(axis=1))
            j = (rows or list(range(len(obs))))[int(bad[0])]
            raise EnvError(f'{self._who(j)}: {call} returned an observation containing NaN or inf '
                           f'({_short.repr(obs[bad[0]])}); expected finite values')
