"""Where a league's players get their networks: a disk-backed parameter store and a policy pool.

The league names parameters by *reference* (``param_ref``). :class:`ParamStore` keeps frozen
parameter sets under such references, each with the policy type and model config that built
it (so a snapshot stays playable after its parent's network changes shape), in memory and in
``<exp_dir>/params/`` so a resumed run finds them again.

:class:`PolicyPool` turns a reference into something that can ``act``:

* a *live* reference (an active player's own, registered with :meth:`PolicyPool.add_live`) is
  the learner's policy itself, so self-play always uses the newest parameters;
* ``'bot:<name>'`` is a bot from ``BOT_REGISTRY`` (fixed opponents and reference players), options
  in query form: ``'bot:connect_four_mcts?num_simulations=1000'``, built with the run's ``env`` section
  (``env_cfg``) so that it plays the game as configured; a bot that refuses the game or its options (a
  ``ValueError`` from its constructor, ``ConfigError`` included) raises a one-line :class:`ConfigError`
  naming the reference; the last :data:`MAX_BOTS` references used are kept (a peer naming ever new
  options cannot grow the cache);
* anything else is a frozen policy built from the store, cached; one stored before a surgery
  changed the env's observations or actions plays through its adapter. Like every policy that only
  acts, it is built on ``policy.collect.device`` (the CPU by default), never on the learner's device.
"""
from __future__ import annotations

import os
import urllib.parse
import zlib
from collections import OrderedDict
from typing import Dict, Optional, Protocol

import gymnasium as gym
import torch
from easydict import EasyDict

from sparring.config.compile import to_plain
from sparring.config.registry import BOT_REGISTRY, POLICY_REGISTRY
from sparring.config.schema import ConfigError
from sparring.policy.base import Policy
from sparring.policy.bot import parse_bot_ref
from sparring.worker.state_file import StateFileError, load_state_file, save_state_file

BOT_PREFIX = 'bot:'
MAX_BOTS = 32  # bots kept, by reference (a league uses a handful; one evicted is built again, its RNG afresh)


class ParamStore:
    def __init__(self, directory: Optional[str] = None) -> None:
        self.directory = directory
        self._entries: Dict[str, dict] = {}
        self.damaged: Dict[str, str] = {}  # references whose files could not be read: why
        if directory:
            os.makedirs(directory, exist_ok=True)

    @staticmethod
    def _path(directory: str, ref: str) -> str:
        return os.path.join(directory, urllib.parse.quote(ref, safe='') + '.pt')

    def put(self, ref: str, params: Dict[str, torch.Tensor], policy_cfg: dict, version: int = 0,
            adapter: Optional[dict] = None) -> None:
        """Freeze a copy of ``params`` under ``ref`` (written to disk atomically when backed).

        ``adapter`` (a :class:`~sparring.policy.feature_map.SpaceAdapter` as a dict, written by
        surgery) marks parameters built for older observation and action spaces than the env's.
        """
        entry = dict(params={k: v.detach().clone() for k, v in params.items()}, policy_cfg=policy_cfg,
                     version=int(version))
        if adapter is not None:
            entry['adapter'] = adapter
        self._entries[ref] = entry
        if self.directory:
            path = self._path(self.directory, ref)
            save_state_file(dict(entry, policy_cfg=to_plain(policy_cfg)), path)

    def get(self, ref: str) -> dict:
        """``{'params', 'policy_cfg', 'version'}``; KeyError naming the reference if unknown."""
        if ref not in self._entries:
            path = self._path(self.directory, ref) if self.directory else None
            if path is None or not os.path.exists(path):
                raise KeyError(f'parameter store: no parameters under {ref!r} '
                               f'(known: {sorted(self._entries)[:10]}{"..." if len(self._entries) > 10 else ""})')
            try:
                entry = load_state_file(path)  # never a pickle: a stranger's file runs no code
            except StateFileError as err:
                self.damaged[ref] = str(err)  # the run's coordinator quarantines it
                raise
            entry['policy_cfg'] = EasyDict(entry['policy_cfg'])
            self._entries[ref] = entry
        return self._entries[ref]

    def __contains__(self, ref: str) -> bool:
        return ref in self._entries or bool(self.directory and os.path.exists(self._path(self.directory, ref)))


class ParamSource(Protocol):
    """Where a pool finds frozen parameters by reference: a :class:`ParamStore`, or a remote worker's view of the
    commander's (:class:`~sparring.worker.remote.base.RemoteParamStore`)."""

    def get(self, ref: str) -> dict:
        """``{'params', 'policy_cfg', 'version'}`` of ``ref``."""
        ...


class PolicyPool:
    """The policies of parameter references: live ones by their player's id, stored ones built once (the
    ``max_cached`` most recently used kept), bots by ``bot:<name>?<options>``. In a game whose seats have roles a
    pool serves one ``role``: its spaces are that role's seat's, every policy it builds plays that role, and a bot
    that plays other roles only is refused."""

    def __init__(self, store: ParamSource, observation_space: gym.Space, action_space: gym.Space,
                 seed: int = 0, max_cached: int = 64, env_cfg: Optional[dict] = None, role: Optional[str] = None) -> None:
        self.store = store
        self.role = role
        self.env_cfg = env_cfg  # the run's env section, passed to every bot
        self.observation_space = observation_space
        self.action_space = action_space
        self.seed = seed
        self.max_cached = max_cached
        self._live: Dict[str, Policy] = {}
        self._frozen: 'OrderedDict[str, Policy]' = OrderedDict()
        self._bots: 'OrderedDict[str, Policy]' = OrderedDict()

    def add_live(self, ref: str, policy: Policy) -> None:
        self._live[ref] = policy

    def check_role(self, ref: str, role: Optional[str]) -> None:
        """ValueError where a caller names a ``role`` (for ``ref``) other than this pool's."""
        if role is not None and role != self.role:
            raise ValueError(f'policy pool of role {self.role!r}: asked for {ref!r} as a player of role {role!r}')

    def get(self, ref: str, role: Optional[str] = None) -> Policy:
        """The policy of ``ref``; ``role``, where the caller names one, must be this pool's."""
        self.check_role(ref, role)
        if ref in self._live:
            return self._live[ref]
        if ref.startswith(BOT_PREFIX):
            if ref not in self._bots:
                # Each bot gets its own seeded RNG, derived from the run's seed and its name.
                seed = (self.seed + zlib.crc32(ref.encode())) % 2 ** 31
                name, options = parse_bot_ref(ref[len(BOT_PREFIX):])
                bot_cls = BOT_REGISTRY.get(name)
                plays = getattr(bot_cls, 'roles', None)
                if self.role is not None and plays is not None and self.role not in plays:
                    raise ConfigError(f'{ref}: the bot plays the role{"s" if len(plays) > 1 else ""} '
                                      f'{", ".join(plays)}; expected a bot that plays {self.role!r}')
                try:
                    bot = bot_cls(options, self.observation_space, self.action_space, seed=seed, env=self.env_cfg)
                except ValueError as err:  # ConfigError included: the bot refuses this game or its options
                    raise ConfigError(f'{ref}: {" ".join(str(err).split())}') from err
                bot.role = self.role
                self._bots[ref] = bot
                if len(self._bots) > MAX_BOTS:
                    self._bots.popitem(last=False)
            self._bots.move_to_end(ref)
            return self._bots[ref]
        if ref in self._frozen:
            self._frozen.move_to_end(ref)
            return self._frozen[ref]
        entry = self.store.get(ref)
        cfg = entry['policy_cfg']
        if entry.get('adapter') is not None:  # a snapshot from before a surgery changed the env's spaces
            from sparring.policy.feature_map import adapted_policy
            policy = adapted_policy(entry, self.observation_space, self.action_space, seed=self.seed)
        else:
            policy = POLICY_REGISTRY.get(cfg['type'])(cfg, self.observation_space, self.action_space, seed=self.seed)
            policy.set_params(entry['params'], entry['version'])
        policy.role = self.role
        self._frozen[ref] = policy
        if len(self._frozen) > self.max_cached:
            self._frozen.popitem(last=False)
        return policy

    def forget(self, ref: str) -> None:
        """Drop a cached frozen policy (its stored parameters were replaced)."""
        self._frozen.pop(ref, None)


class RolePools:
    """The policy pools of a game whose seats have roles, one per role, behind the pool's own calls: ``get(ref,
    role)`` builds ``ref`` for ``role``'s seat, ``add_live`` files a live policy under its ``role``."""

    def __init__(self, pools: Dict[str, PolicyPool]) -> None:
        self.pools = pools

    def get(self, ref: str, role: Optional[str] = None) -> Policy:
        if role not in self.pools:
            raise ValueError(f'policy pools: {ref!r} asked for role {role!r}; expected one of {sorted(self.pools)}')
        return self.pools[role].get(ref, role)

    def add_live(self, ref: str, policy: Policy) -> None:
        self.get_pool(policy.role).add_live(ref, policy)

    def get_pool(self, role: Optional[str]) -> PolicyPool:
        if role not in self.pools:
            raise ValueError(f'policy pools: no pool of role {role!r}; expected one of {sorted(self.pools)}')
        return self.pools[role]

    def forget(self, ref: str) -> None:
        for pool in self.pools.values():
            pool.forget(ref)
