"""Opening a run's directory to use what it trained: its config, its league and any player's policy.

:func:`load_player` is the one call a user needs: the policy of a run's player (the first active
player's newest parameters by default), ready to ``act`` on the env's observations. Where the
parameters come from depends on what the player is:

* an active player: the newest checkpoint of the run, ``ckpt/iter_<n>.pt`` of a serial run or a
  parallel run's learner checkpoint ``workers/learner-<player>/ckpt/iter_<n>.pt`` (the newer wins);
* a snapshot (a historical player): the frozen parameters in the run's ``params/`` store;
* a reference player: its bot (``bot:<name>``) or its stored parameters.

:class:`TrainedRun` keeps what the eval, play and export commands share: the compiled config, the
league read back from ``league_state.npz``, the env's spaces and a :class:`PolicyPool` for bots.
"""
from __future__ import annotations

import glob
import os
from typing import Dict, List, Optional, cast

from sparring.config.compile import CONFIG_FILENAME
from sparring.config.registry import ENV_REGISTRY, POLICY_REGISTRY
from sparring.framework.run_imports import load_run_config
from sparring.framework.run_setup import LEAGUE_STATE_FILE
from sparring.league.base_league import BaseLeague
from sparring.league.errors import LeagueError
from sparring.league.job_protocol import stored_ref
from sparring.policy.base import Policy
from sparring.policy.device import devices_usable_here
from sparring.worker.checkpoint import CheckpointManager
from sparring.worker.env.multiseat_api import is_multiseat_env, seat_layout
from sparring.worker.policy_pool import BOT_PREFIX, ParamStore, PolicyPool
from sparring.worker.run_kind import SINGLE_AGENT, run_kind


class TrainedRun:
    """A run directory opened read-only: config, league (None for a single-agent run), spaces, policies."""

    def __init__(self, run_dir: str, trust_code: bool = False) -> None:
        if not os.path.isdir(run_dir):
            raise FileNotFoundError(f'run directory not found: {run_dir}')
        if not os.path.exists(os.path.join(run_dir, CONFIG_FILENAME)):
            raise FileNotFoundError(f'{run_dir} holds no {CONFIG_FILENAME}; expected the experiment directory of a '
                                    f'run (its exp_name)')
        self.run_dir = run_dir
        # Its modules from where training found them; none from inside the run directory unless trusted.
        self.trust_code = trust_code
        self.cfg = load_run_config(run_dir, trust_code)
        # A run trained on a GPU is used on any machine: its policies act where this process can.
        self.device_notes = devices_usable_here(self.cfg.policy)
        self.kind = run_kind(self.cfg)
        league_file = os.path.join(run_dir, LEAGUE_STATE_FILE)
        self.league: Optional[BaseLeague] = None
        if self.kind.is_league:
            if not os.path.exists(league_file):
                raise FileNotFoundError(f'{league_file} not found: the run has not saved its league yet (it does '
                                        f'at every checkpoint and at the end)')
            self.league = cast(BaseLeague, BaseLeague.load(league_file))
        self._store: Optional[ParamStore] = None
        self._spaces: Dict[Optional[str], tuple] = {}
        self._pools: Dict[Optional[str], PolicyPool] = {}

    # -- what the run holds ---------------------------------------------------------------------
    @property
    def active_ids(self) -> List[str]:
        return [p.player_id for p in self.league.active_players] if self.league is not None else [SINGLE_AGENT]

    @property
    def player_ids(self) -> List[str]:
        if self.league is None:
            return [SINGLE_AGENT]
        return [p.player_id for p in self.league.roster.players]

    @property
    def roles(self) -> Optional[List[str]]:
        """The roles of a game whose seats have them (the league's categories), else None."""
        if self.league is None or not self.league.cfg.get('roles'):
            return None
        return self.league.categories

    def role_of(self, pid: str) -> Optional[str]:
        """The role player ``pid`` plays (its category) in a game whose seats have roles, else None."""
        return self.league.get_player(pid).category if self.roles is not None and self.league is not None else None

    def spaces(self, role: Optional[str] = None):
        """(observation space, action space) of one seat: any seat's, or in a game with roles the seat of ``role``."""
        if role not in self._spaces:
            env_cls = ENV_REGISTRY.get(self.cfg.env.type) if self.cfg.env.type in ENV_REGISTRY else None
            if is_multiseat_env(env_cls):  # a game of three or more seats: every seat has the same spaces
                self._spaces[role] = seat_layout(env_cls, self.cfg.env, self.cfg.seed)[:2]
            else:
                self._spaces[role] = self.kind.spaces(role)
        return self._spaces[role]

    @property
    def store(self) -> ParamStore:
        if self._store is None:
            self._store = ParamStore(os.path.join(self.run_dir, 'params'))
        return self._store

    def pool(self, seed: Optional[int] = None, role: Optional[str] = None) -> PolicyPool:
        """A policy pool over the run's store (bots seeded from ``seed``, the run's seed by default); in a game with
        roles, the pool of ``role``'s seat."""
        pool = self._pools.get(role)
        if pool is None or (seed is not None and seed != pool.seed):
            obs_space, act_space = self.spaces(role)
            pool = self._pools[role] = PolicyPool(self.store, obs_space, act_space,
                                                  seed=self.cfg.seed if seed is None else seed, env_cfg=self.cfg.env,
                                                  role=role)
        return pool

    # -- one player's policy --------------------------------------------------------------------
    def resolve(self, player: Optional[str] = None, snapshot: Optional[str] = None) -> str:
        """The player id ``player`` / ``snapshot`` name (the first active player when both are None)."""
        if player is not None and snapshot is not None:
            raise ValueError('load_player: give a player or a snapshot, not both')
        if snapshot is not None:
            if self.league is None or snapshot not in self.league.roster.by_id \
                    or self.league.get_player(snapshot).kind != 'historical':
                snapshots = [p.player_id for p in self.league.historical_players] if self.league is not None else []
                raise LeagueError(f'{self.run_dir}: no snapshot {snapshot!r}; snapshots of this run: '
                                  f'{_listed(snapshots)}')
            return snapshot
        if player is None:
            return self.active_ids[0]
        if player not in self.player_ids:
            raise LeagueError(f'{self.run_dir}: no player {player!r}; players of this run: {_listed(self.player_ids)}')
        return player

    def policy(self, player: Optional[str] = None, snapshot: Optional[str] = None, seed: Optional[int] = None) -> Policy:
        """The policy of ``player`` (any player of the league) or ``snapshot``; see the module docstring."""
        pid = self.resolve(player, snapshot)
        role = self.role_of(pid)
        if self.league is not None and self.league.get_player(pid).kind != 'active':
            return self.pool(seed, role).get(stored_ref(self.league.get_player(pid).param_ref, f'player {pid!r}'))
        params, version = self._newest_params(pid)
        obs_space, act_space = self.spaces(role)
        policy = POLICY_REGISTRY.get(self.cfg.policy.type)(self.cfg.policy, obs_space, act_space,
                                                           seed=self.cfg.seed if seed is None else seed)
        policy.set_params(params, version)
        policy.role = role
        return policy

    def _newest_params(self, pid: str):
        """``(params, version)`` of an active player from the newest checkpoint that holds it."""
        found = []
        serial = CheckpointManager(self.run_dir).latest()
        if serial is not None:
            state = CheckpointManager.load(serial)
            learner = state['learners'].get(pid) if 'learners' in state else state.get('learner')
            if learner is not None:
                found.append(learner)
        for ckpt_dir in glob.glob(os.path.join(glob.escape(self.run_dir), 'workers', f'learner-{glob.escape(pid)}*')):
            latest = CheckpointManager(ckpt_dir).latest()
            if latest is not None:
                found.append(CheckpointManager.load(latest)['learner'])
        if not found:
            raise FileNotFoundError(f'{self.run_dir}: no checkpoint holds player {pid!r} (looked in ckpt/ and '
                                    f'workers/learner-{pid}*/ckpt/); a run writes one every '
                                    f'train.checkpoint_every_iters rounds and at the end')
        newest = max(found, key=lambda learner: learner['train_iter'])['policy']
        return newest['params'], newest['version']


def load_player(run_dir: str, player: Optional[str] = None, snapshot: Optional[str] = None,
                trust_code: bool = False) -> Policy:
    """The policy of a run's player: ``policy.act(obs, action_mask=mask, deterministic=True)``.

    ``player``: any player id of the run's league (default: the first active player, with its newest
    parameters); ``snapshot``: a historical player's id. A reference bot's id gives the bot.
    ``trust_code``: import the run's own modules even from inside its directory (its author's code runs);
    by default they must be importable from this environment or from recorded folders outside the run.
    """
    return TrainedRun(run_dir, trust_code).policy(player, snapshot)


def is_bot(ref: str) -> bool:
    return ref.startswith(BOT_PREFIX)


def _listed(ids: List[str], limit: int = 12) -> str:
    if not ids:
        return 'none'
    return ', '.join(ids[:limit]) + (f' ... ({len(ids) - limit} more)' if len(ids) > limit else '')
