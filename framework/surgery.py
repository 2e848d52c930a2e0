"""Surgery on a run's checkpoint: a new checkpoint for a new config, and a report of what changed.

:func:`surgery` takes a checkpoint (a single-agent run's or a league run's), the new config (a
wider network, an env with more observation features or actions ...) and a new experiment
directory. For every learner it builds the old policy, plays it in the old env and (through an
adapter) in the new one to record observations, and transplants it into a policy of the new
config (:func:`sparring.policy.surgery.transplant`). It writes the compiled new config, a
checkpoint with the same counters, league state and RNG states, and ``surgery_report.json``:
the largest change of any action probability and of the value on both sets of recorded
observations. ``sparring train <new config> --exp-name <out> --resume`` continues the run.

A league run keeps its league: the payoff table, ratings and snapshots carry on. Snapshots taken
before the surgery keep their own policy config and parameters; where the env's observations or
actions changed, their parameter-store entries get an adapter, so they still play. The
parameters resets return to (``init``) are transplanted too; the snapshots that pointed at them
keep the old ones under ``init@before_surgery_<k>``.

In a game whose seats have roles each role is operated on apart, with its seat's spaces: its learners (recorded in
its seat against the other role's random bot), the snapshots of its players and its own reset parameters
(``init_<role>``). The observation and action maps come from each seat's feature names there.
"""
from __future__ import annotations

import json
import os
import re
import urllib.parse
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, cast

import gymnasium as gym
import numpy as np

from sparring.config import compile_config, save_config
from sparring.config.compile import to_plain
from sparring.config.registry import POLICY_REGISTRY
from sparring.framework.coordinator import INIT_REF
from sparring.framework.run_imports import load_run_config
from sparring.framework.run_setup import complete_league_config
from sparring.policy.base import Policy
from sparring.policy.feature_map import (AdaptedPolicy, SpaceAdapter, SurgeryError, action_map, as_feature_map,
                                         flat_size, observation_map)
from sparring.policy.surgery import compare, new_space_observations, resolve_options, transplant
from sparring.worker.checkpoint import CheckpointManager
from sparring.worker.env.battle import make_battle_env
from sparring.worker.env.battle_api import VecBattleEnv
from sparring.worker.env.manager import make_env_manager
from sparring.worker.run_files import open_run_file, write_atomically
from sparring.policy.bot import RandomBot
from sparring.worker.role_arena import RoleArena, home_seat_of, opposite_role
from sparring.worker.run_kind import is_league_run

if TYPE_CHECKING:  # only named for the type checker: surgery takes PPO-style policies by duck typing
    from sparring.policy.ppo import PPOPolicy

REPORT_FILE = 'surgery_report.json'
BEFORE_SURGERY = '@before_surgery_'


def surgery(checkpoint: str, new_config: dict, out: str, *, options: Optional[dict] = None, obs_map=None,
            act_map=None, record_steps: int = 64, record_envs: int = 16, log=print,
            trust_code: bool = False) -> Dict[str, Any]:
    """Write the run at ``checkpoint`` (a file or an experiment directory) into ``out`` for ``new_config``.

    ``options``: :class:`~sparring.policy.surgery.SurgeryOptions` keys (``widen``, ``split_jitter``,
    ``new_action_offset``, ``new_action_prior``, ``seed``). ``obs_map`` / ``act_map``: explicit
    maps (lists of old indices, -1 for new entries) where the envs give no feature names.
    ``record_steps`` x ``record_envs`` env steps are recorded in each env for the report. ``trust_code``: import
    the old run's modules even from inside its directory (see :mod:`sparring.framework.run_imports`).
    Returns the report (also written to ``<out>/surgery_report.json``).
    """
    if record_steps < 1 or record_envs < 1:
        raise ValueError(f'surgery: record_steps and record_envs must be >= 1, got {record_steps}, {record_envs}')
    ckpt_path, old_exp = locate_checkpoint(checkpoint)
    old_cfg = load_run_config(old_exp, trust_code)
    new_cfg = compile_config(new_config, exp_name=out, save=False)
    battle = is_league_run(new_cfg)
    if battle != is_league_run(old_cfg):
        raise SurgeryError('surgery: the old and the new config must both be league (battle) runs or both single-agent')
    roles = None
    if battle:
        complete_league_config(old_cfg)
        complete_league_config(new_cfg)
        _check_same_league(old_cfg, new_cfg)
        roles = _check_same_roles(old_cfg, new_cfg, obs_map, act_map)
    _check_out_dir(out, old_exp)
    opts = resolve_options(options)
    state = CheckpointManager.load(ckpt_path)

    report: Dict[str, Any] = dict(checkpoint=ckpt_path, out=out, options=opts, changes=[], players={})
    learners = state['learners'] if battle else {'learner': state['learner']}
    # The players of each role (a symmetric game: one group of every player, role None), in the league's order.
    category = {p['player_id']: p.get('category') for p in state['league_state']['players']} if roles else {}
    renamed: Dict[str, str] = {}
    adapted = False
    groups: List[Optional[str]] = list(roles) if roles else [None]
    for role in groups:
        old_env, new_env = EnvSpaces.of(old_cfg, battle, role), EnvSpaces.of(new_cfg, battle, role)
        role_obs_map = as_feature_map(obs_map, flat_size(old_env.observation_space), 'observation') or observation_map(
            old_env.observation_space, new_env.observation_space, old_env.observation_names, new_env.observation_names)
        role_act_map = as_feature_map(act_map, flat_size(old_env.action_space), 'action') or action_map(
            old_env.action_space, new_env.action_space, old_env.action_names, new_env.action_names)
        recorded = None
        for index, (pid, learner_state) in enumerate(learners.items()):
            if role is not None and category.get(pid) != role:
                continue
            old = old_env.build(old_cfg.policy, old_cfg.seed)
            old.load_state_dict(learner_state['policy'])
            recorded = _record_both(old, old_cfg, new_cfg, old_env, new_env, role_obs_map, role_act_map, battle,
                                    record_steps, record_envs, role)
            old.load_state_dict(learner_state['policy'])  # recording drew from its RNG: the checkpoint's state again
            new = new_env.build(new_cfg.policy, new_cfg.seed + index)
            result = transplant(as_ppo(old), as_ppo(new), role_obs_map, role_act_map, opts,
                                observations=recorded.old.flat_obs, action_mask=recorded.old.flat_mask,
                                new_observations=recorded.new.flat_obs,
                                names={axis: names for axis, names in (('obs', new_env.observation_names),
                                                                       ('actions', new_env.action_names))
                                       if names is not None})
            learner_state['policy'] = new.state_dict()
            report['changes'] = result.changes if role is None else report['changes'] + [
                f'{role}: {change}' for change in result.changes if f'{role}: {change}' not in report['changes']]
            report['players'][pid] = recorded.compare(old, new, role_obs_map, role_act_map, new_env)
        if battle and recorded is not None:  # a league checkpoint has learners: recorded is set
            refs = None if role is None else {p['param_ref'] for p in state['league_state']['players']
                                              if p.get('category') == role and p['param_ref']}
            renamed.update(_carry_param_store(old_exp, out, old_cfg, new_cfg, old_env, new_env, role_obs_map,
                                              role_act_map, opts, recorded, role, refs))
            adapted = adapted or not (role_obs_map.is_identity and role_act_map.is_identity)

    if battle and report['players']:
        for player in state['league_state']['players']:
            if player['kind'] == 'historical' and player['param_ref'] in renamed:
                player['param_ref'] = renamed[player['param_ref']]
        report['historical_players'] = sum(p['kind'] == 'historical' for p in state['league_state']['players'])
        report['adapted_snapshots'] = adapted
    report['renamed_param_refs'] = renamed
    report['max_prob_change'] = _worst(report['players'], 'max_prob_change')
    report['max_value_change'] = _worst(report['players'], 'max_value_change')

    save_config(new_cfg, out)
    report['new_checkpoint'] = CheckpointManager(out).save(state, _iteration(ckpt_path))
    write_atomically(os.path.join(out, REPORT_FILE), json.dumps(to_plain(report), indent=2, default=str))
    for line in report_lines(report):
        log(line)
    with open_run_file(os.path.join(out, 'log.txt'), 'a') as f:  # the resumed run's log starts with the surgery
        f.write('\n'.join(report_lines(report)) + '\n')
    return report


# -- checkpoints and configs ---------------------------------------------------------------------

def locate_checkpoint(path: str) -> Tuple[str, str]:
    """(checkpoint file, its experiment directory) for a checkpoint file or an experiment directory."""
    if os.path.isdir(path):
        latest = CheckpointManager(path).latest()
        if latest is None:
            raise FileNotFoundError(f'surgery: no checkpoint under {os.path.join(path, "ckpt")}')
        return latest, path
    if not os.path.isfile(path):
        raise FileNotFoundError(f'surgery: checkpoint {path!r} not found; expected a ckpt/iter_<n>.pt file or an '
                                f'experiment directory')
    ckpt_dir = os.path.dirname(os.path.abspath(path))
    exp_dir = os.path.dirname(ckpt_dir)
    if os.path.basename(ckpt_dir) != 'ckpt' or not os.path.exists(os.path.join(exp_dir, 'config.json')):
        raise FileNotFoundError(f'surgery: {path} is not in <exp_dir>/ckpt/ next to the run\'s config.json')
    return path, exp_dir


def _iteration(ckpt_path: str) -> int:
    match = re.search(r'iter_(\d+)\.pt$', ckpt_path)
    return int(match.group(1)) if match else 0


def _check_out_dir(out: str, old_exp: str) -> None:
    if os.path.realpath(out) == os.path.realpath(old_exp):
        raise SurgeryError(f'surgery: --out {out!r} is the run\'s own directory; write the new run elsewhere so the '
                           f'old one stays as it was')
    existing = CheckpointManager(out).latest()
    if existing is not None:
        raise FileExistsError(f'surgery: {out!r} already holds a checkpoint ({existing}); choose an empty --out')


def _check_same_roles(old_cfg, new_cfg, obs_map, act_map) -> Optional[List[str]]:
    """The roles of a game whose seats have them (each is operated on apart, with its own spaces), else None."""
    old_roles = list(old_cfg.league.player_category) if old_cfg.league.get('roles') else None
    new_roles = list(new_cfg.league.player_category) if new_cfg.league.get('roles') else None
    if old_roles != new_roles:
        raise SurgeryError(f'surgery: the roles change from {old_roles} to {new_roles}; training continues in the '
                           f'same league, so its roles must stay the same')
    if old_roles is not None and (obs_map is not None or act_map is not None):
        raise SurgeryError(f'surgery: explicit observation or action maps in a game with roles ({", ".join(old_roles)}) '
                           f'would apply to every role\'s spaces; expected the maps found from the feature names')
    return old_roles


def _check_same_league(old_cfg, new_cfg) -> None:
    for key in ('type', 'active_players'):
        if to_plain(old_cfg.league[key]) != to_plain(new_cfg.league[key]):
            raise SurgeryError(f'surgery: league.{key} changes from {to_plain(old_cfg.league[key])} to '
                               f'{to_plain(new_cfg.league[key])}; training continues in the same league, so its '
                               f'players must stay the same')


class EnvSpaces:
    """An env's observation and action spaces and feature names, and policies built for them."""

    def __init__(self, observation_space, action_space, observation_names=None, action_names=None) -> None:
        self.observation_space = observation_space
        self.action_space = action_space
        self.observation_names = None if observation_names is None else list(observation_names)
        self.action_names = None if action_names is None else list(action_names)

    @classmethod
    def of(cls, cfg, battle: bool, role: Optional[str] = None) -> 'EnvSpaces':
        """The spaces of one seat: any seat's, or in a game with roles the seat of ``role`` (whose feature names are
        ``observation_names[seat]``, where the game names them per seat)."""
        env = make_battle_env(cfg.env, 1, cfg.seed) if battle else make_env_manager(cfg.env, 1, cfg.seed,
                                                                                     cfg.import_names)
        try:
            obs_names, act_names = getattr(env, 'observation_names', None), getattr(env, 'action_names', None)
            if role is None:
                return cls(env.observation_space, env.action_space, obs_names, act_names)
            battle_env = cast(VecBattleEnv, env)
            seat = home_seat_of(battle_env, role)
            return cls(battle_env.observation_spaces[seat], battle_env.action_spaces[seat],
                       None if obs_names is None else obs_names[seat], None if act_names is None else act_names[seat])
        finally:
            env.close()

    def build(self, policy_cfg, seed: int) -> Policy:
        return POLICY_REGISTRY.get(policy_cfg.type)(policy_cfg, self.observation_space, self.action_space, seed=seed)


def as_ppo(policy: Policy) -> PPOPolicy:
    """``policy`` for :func:`transplant`, which takes PPO-style policies by duck typing (see
    :mod:`sparring.policy.surgery`); only the type checker hears it is one."""
    return cast('PPOPolicy', policy)


# -- recorded observations -----------------------------------------------------------------------

class Recording:
    """Observations ``[T, R, ...]`` (R rows per step: envs, or games x seats x agents) and masks."""

    def __init__(self, obs: np.ndarray, mask: Optional[np.ndarray]) -> None:
        self.obs = obs
        if mask is not None:
            # Rows that may not move (turn-based games) are measured on every action: a mask without
            # any legal action would compare two uniform distributions of different widths.
            mask = mask | ~mask.any(-1, keepdims=True)
        self.mask = mask

    @property
    def flat_obs(self) -> np.ndarray:
        return self.obs.reshape(-1, *self.obs.shape[2:])

    @property
    def flat_mask(self) -> Optional[np.ndarray]:
        return None if self.mask is None else self.mask.reshape(-1, self.mask.shape[-1])


def record(cfg, policy: Policy, battle: bool, steps: int, num_envs: int, seed: int,
           role: Optional[str] = None) -> Recording:
    """Play ``policy`` (against itself in a battle env; in a game with roles, in ``role``'s seat against the other
    role's random bot) for ``steps`` vector steps; record what it saw."""
    if role is not None:
        return _record_role(cfg, policy, role, steps, num_envs, seed)
    # In process: a few steps do not pay for starting env subprocesses.
    env = make_battle_env(cfg.env, num_envs, seed) if battle else make_env_manager(
        dict(cfg.env, manager=dict(type='base')), num_envs, seed, cfg.import_names)
    try:
        # A battle env's BattleStep or a manager's observations: one loop over both kinds of env.
        observed: Any = env.reset()
        obs_shape = cast(Tuple[int, ...], env.observation_space.shape)
        # Box actions carry no mask (the battle protocol): the step's placeholder column is not one.
        masked = battle and isinstance(env.action_space, gym.spaces.Discrete)
        obs_list: List[np.ndarray] = []
        mask_list: List[Any] = []
        state = None
        for _ in range(steps):
            obs = (observed if isinstance(observed, np.ndarray) else observed.obs).reshape(-1, *obs_shape)
            mask = observed.action_mask.reshape(len(obs), -1) if masked else None
            if state is None:
                state = policy.initial_state(len(obs))
            out = policy.act(obs, state, action_mask=mask)
            obs_list.append(obs)
            mask_list.append(mask)
            if battle:  # one action per game and seat: [B, 2] (Discrete) or [B, 2, *shape] (Box)
                action = out.action.reshape(observed.action_mask.shape[:-1] + out.action.shape[1:])
            observed = env.step(action if battle else out.action)
            state = _restart_finished(policy, out.state, observed, battle, len(obs))
        masks = np.stack(mask_list) if masked else None
        return Recording(np.stack(obs_list), masks)
    finally:
        env.close()


def _record_role(cfg, policy: Policy, role: str, steps: int, num_envs: int, seed: int) -> Recording:
    """What ``policy`` saw in ``role``'s seat for ``steps`` vector steps, against the other role's random bot."""
    env = make_battle_env(cfg.env, num_envs, seed)
    try:
        arena = RoleArena(env, policy, role)
        roles = cast(Tuple[str, ...], env.roles)
        seat = roles.index(opposite_role(roles, role))
        bot = RandomBot({}, env.observation_spaces[seat], env.action_spaces[seat], seed=seed)
        for slot in range(num_envs):
            arena.set_opponent(slot, 'random', bot)
        masked = isinstance(arena.home_spaces[1], gym.spaces.Discrete)
        obs_list: List[np.ndarray] = []
        mask_list: List[Any] = []
        step = arena.reset()
        for _ in range(steps):
            obs_list.append(step.obs[:, 0].copy())
            mask_list.append(step.action_mask[:, 0].copy() if masked else None)
            actions, _ = arena.act()
            step = arena.step(actions)
            arena.finished(step)
        return Recording(np.stack(obs_list), np.stack(mask_list) if masked else None)
    finally:
        env.close()


def _restart_finished(policy: Policy, state, observed, battle: bool, rows: int):
    """A recurrent state with the rows of finished episodes back at the initial state."""
    if state is None:
        return None
    done = observed.terminated | observed.truncated
    if battle:  # a game's end restarts every seat (and agent) of it
        done = np.repeat(done, rows // len(done))
    if not done.any():
        return state
    fresh = policy.initial_state(int(done.sum()))
    parts = [np.array(part, copy=True) for part in state]
    for part, init in zip(parts, fresh):
        part[done] = init
    return tuple(parts)


class PairedRecordings:
    """Observations recorded in the old env and in the new env, each paired with its counterpart."""

    def __init__(self, old: Recording, new: Recording, adapter: SpaceAdapter) -> None:
        self.old = old
        self.new = new
        self.adapter = adapter

    def compare(self, old: Policy, new: Policy, obs_map, act_map, new_env: EnvSpaces) -> Dict[str, dict]:
        """``compare`` on both sets: old-env observations carried into the new space (new features
        0), and new-env observations seen through the adapter (removed features at their means)."""
        dims = 2 if getattr(old, 'recurrent', False) else 1
        shape = lambda r: r.obs if dims == 2 else r.flat_obs  # noqa: E731
        masks = lambda r: (r.mask if dims == 2 else r.flat_mask)  # noqa: E731
        old_obs = shape(self.old)
        carried = new_space_observations(old_obs, obs_map, new_env.observation_space.shape, 0.0, dims) \
            if not obs_map.is_identity else old_obs
        old_mask = masks(self.old)
        carried_mask = None if old_mask is None else _new_space_mask(old_mask, act_map)
        new_obs, new_mask = shape(self.new), masks(self.new)
        seen = self._through_adapter(new_obs, dims)
        seen_mask = None if new_mask is None else cast(np.ndarray, self.adapter.action_mask(
            new_mask.reshape(-1, new_mask.shape[-1]), 0)).reshape(*new_mask.shape[:-1], -1)
        seen_mask = None if seen_mask is None else seen_mask | ~seen_mask.any(-1, keepdims=True)
        return dict(old_env=compare(old, new, old_obs, carried, act_map, old_mask, carried_mask),
                    new_env=compare(old, new, seen, new_obs, act_map, seen_mask, new_mask))

    def _through_adapter(self, obs: np.ndarray, dims: int) -> np.ndarray:
        batch = obs.shape[:dims]
        flat = obs.reshape(-1, *obs.shape[dims:])
        seen = self.adapter.observations(flat)
        return seen.reshape(*batch, *seen.shape[1:])


def _new_space_mask(mask: np.ndarray, act_map) -> np.ndarray:
    """An old-space action mask in the new space; new actions count as legal."""
    kept = act_map.source >= 0
    out = np.ones((*mask.shape[:-1], act_map.new_size), bool)
    out[..., kept] = mask[..., act_map.source[kept]]
    return out


def _record_both(old: Policy, old_cfg, new_cfg, old_env: EnvSpaces, new_env: EnvSpaces, obs_map, act_map,
                 battle: bool, steps: int, num_envs: int, role: Optional[str] = None) -> PairedRecordings:
    seed = new_cfg.seed + 7_777_777  # away from the training and evaluation seeds
    in_old = record(old_cfg, old, battle, steps, num_envs, seed, role)
    raw_means = in_old.flat_obs.reshape(len(in_old.flat_obs), -1).astype(np.float64).mean(0).astype(np.float32)
    adapter = SpaceAdapter.from_maps(old_env.observation_space, old_env.action_space, obs_map, act_map, raw_means)
    played = AdaptedPolicy(old, adapter, new_env.observation_space, new_env.action_space)
    in_new = record(new_cfg, played, battle, steps, num_envs, seed, role)
    return PairedRecordings(in_old, in_new, adapter)


def _worst(players: Dict[str, dict], key: str) -> Optional[float]:
    values = [r[key] for per_set in players.values() for r in per_set.values() if key in r]
    return max(values) if values else None


# -- the league's parameter store ----------------------------------------------------------------

def _carry_param_store(old_exp: str, out: str, old_cfg, new_cfg, old_env: EnvSpaces, new_env: EnvSpaces,
                       obs_map, act_map, opts: dict, recorded: PairedRecordings, role: Optional[str] = None,
                       role_refs: Optional[set] = None) -> Dict[str, str]:
    """Copy the parameter store into ``out``: snapshots with (composed) adapters where the env's
    spaces changed, the reset parameters transplanted. Returns {old ref: new ref} of renamed refs. In a game with
    roles, the entries of ``role`` alone: its players' ``role_refs`` and its reset parameters (``init_<role>``)."""
    from sparring.worker.policy_pool import ParamStore
    source_dir = os.path.join(old_exp, 'params')
    if not os.path.isdir(source_dir):
        return {}
    old_store, new_store = ParamStore(source_dir), ParamStore(os.path.join(out, 'params'))
    refs = sorted(urllib.parse.unquote(name[:-len('.pt')]) for name in os.listdir(source_dir) if name.endswith('.pt'))
    init_ref = INIT_REF if role is None else f'{old_cfg.league.init_param_ref}_{role}'
    if role is not None:  # this role's entries: its players' (and their renamed reset parameters), its own init
        refs = [r for r in refs if r in (role_refs or set()) or r == init_ref or r.startswith(init_ref + BEFORE_SURGERY)]
    spaces_changed = not (obs_map.is_identity and act_map.is_identity)
    fill = recorded.adapter.obs_fill
    renamed = {}
    for ref in refs:
        entry = old_store.get(ref)
        adapter = entry.get('adapter')
        if spaces_changed:
            adapter = (SpaceAdapter.from_dict(adapter).then(obs_map, act_map, fill) if adapter is not None else
                       SpaceAdapter.from_maps(old_env.observation_space, old_env.action_space, obs_map, act_map,
                                              fill)).to_dict()
        target = ref
        if ref == init_ref:
            earlier = sum(r.startswith(init_ref + BEFORE_SURGERY) for r in refs)
            target = renamed[ref] = f'{init_ref}{BEFORE_SURGERY}{earlier + 1}'
            init_old = old_env.build(old_cfg.policy, old_cfg.seed)
            init_old.set_params(entry['params'], entry['version'])
            init_new = new_env.build(new_cfg.policy, new_cfg.seed)
            transplant(as_ppo(init_old), as_ppo(init_new), obs_map, act_map, opts, observations=recorded.old.flat_obs,
                       action_mask=recorded.old.flat_mask, new_observations=recorded.new.flat_obs)
            new_store.put(init_ref, init_new.get_params(), dict(new_cfg.policy), entry['version'])
        new_store.put(target, entry['params'], entry['policy_cfg'], entry['version'], adapter=adapter)
    return renamed


# -- the report ----------------------------------------------------------------------------------

def report_lines(report: Dict[str, Any]) -> list:
    lines = [f'surgery: {report["checkpoint"]} -> {report["new_checkpoint"]}']
    lines += [f'  {change}' for change in report['changes']] or ['  no change of the network or its spaces']
    for pid, sets in report['players'].items():
        parts = []
        for name, r in sets.items():
            probs = (f'max |dp| {r["max_prob_change"]:.3g}' if 'max_prob_change' in r else
                     f'max |d mean action| {r.get("max_mean_action_change", float("nan")):.3g}')
            parts.append(f'{name} ({r["observations"]} obs): {probs}, max |dv| {r.get("max_value_change", 0.0):.3g}')
        lines.append(f'  {pid}: ' + '; '.join(parts))
    if 'historical_players' in report:
        adapted = ' (playing through observation/action adapters)' if report['adapted_snapshots'] else ''
        lines.append(f'  league: {report["historical_players"]} historical players carried over{adapted}')
    return lines
