"""Battle environments built from a config section, and the bridges between single games and the vectorised API.

* :class:`DictBattleVecEnv` steps ``num_envs`` single games (:class:`BattleEnv` or any PettingZoo
  parallel env with the same conventions) behind the :class:`VecBattleEnv` API, checking every step.
* :class:`SingleGameView` shows one game of a vectorised env through the single-game API.
* :func:`make_battle_env` builds either kind of registered battle env; :func:`is_battle_env` tells
  battle envs from single-agent ones.

The two APIs and their base classes are described and defined in :mod:`sparring.worker.env.battle_api`.
"""
from __future__ import annotations

import reprlib
from typing import Any, Callable, Dict, List, Mapping, Optional

import numpy as np
from gymnasium import spaces

from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.battle_api import (NUM_SEATS, RESULT_CODE, RESULT_NAME, BattleEnv, NativeVecBattleEnv,
                                            VecBattleEnv)
from sparring.worker.env.battle_step import (BattleStep, action_layout, check_roles, copy_seats, is_continuous,
                                             mask_width, seat_view)
from sparring.worker.env.closeable import close_all
from sparring.worker.env.errors import EnvError
from sparring.worker.env.gym_env import complete_section, import_env_modules

_short = reprlib.Repr()
_short.maxstring = _short.maxother = 80


# -- single games in a loop --------------------------------------------------------------------

_REAL_SCALARS = (int, float, np.integer, np.floating)
_BOOLS = (bool, np.bool_)


class DictBattleVecEnv(VecBattleEnv):
    """``num_envs`` single games (:class:`BattleEnv` or any PettingZoo parallel env with the same
    conventions) behind the :class:`VecBattleEnv` API, stepped in a loop and checked at every step.

    Game i is reset with ``seed + i`` on a seeded reset and unseeded afterwards (automatic resets
    continue each game's own generator). ``turn_based`` is the games' own attribute or, failing
    that, whether the first reset reported action masks. Games with ``Box`` actions report no masks
    and move simultaneously (see :mod:`~sparring.worker.env.battle_api`).
    """

    def __init__(self, make_env: Callable[[], Any], num_envs: int, seed: Optional[int] = None,
                 label: Optional[str] = None) -> None:
        """``label`` starts every message about the games (default: this class and the games' class)."""
        if not callable(make_env):
            raise EnvError(f'DictBattleVecEnv: make_env must be a callable returning a game, got {make_env!r}')
        super().__init__(num_envs, seed, label='DictBattleVecEnv')
        self.envs: List[Any] = []
        try:
            for _ in range(self.num_envs):
                self.envs.append(make_env())
            self.label = label or f'DictBattleVecEnv({type(self.envs[0]).__name__})'
            self._check_agents_and_spaces()
        except BaseException:
            self._close()
            raise
        self._turn_based_attr = getattr(self.envs[0], 'turn_based', None)
        self.turn_based = bool(self._turn_based_attr)
        obs_spaces, act_spaces = self.observation_spaces, self.action_spaces
        self._obs_shapes = [tuple(space.shape or ()) for space in obs_spaces]
        self._continuous = [is_continuous(space) for space in act_spaces]
        self._mask_widths = [mask_width(space) for space in act_spaces]
        self.obs_shape = self._obs_shapes[0]  # every seat's in a symmetric game
        self.continuous = any(self._continuous)
        if self.continuous and self.turn_based:
            self._close()
            box = act_spaces[self._continuous.index(True)]
            raise EnvError(f'{self.label}: a turn-based game with {box!r} actions; expected '
                           f'turn_based False: without an action mask a Box game cannot say who moves, so both '
                           f'seats act every step')

    def _check_agents_and_spaces(self) -> None:
        first = self.envs[0]
        agents = list(getattr(first, 'possible_agents', None) or [])
        if len(agents) != NUM_SEATS:
            raise EnvError(f'{self.label}: possible_agents is {agents!r}; expected {NUM_SEATS} agents '
                           f'(one per seat)')
        for j, env in enumerate(self.envs[1:], 1):
            if list(getattr(env, 'possible_agents', None) or []) != agents:
                raise EnvError(f'{self._who(j)} has possible_agents {env.possible_agents!r}; expected {agents!r} '
                               f'like game 0')
        self.agents = agents
        self.roles = check_roles(getattr(first, 'roles', None), NUM_SEATS, self.label)
        self.general_sum = bool(getattr(first, 'general_sum', False))
        obs_spaces = [first.observation_space(a) for a in agents]
        act_spaces = [first.action_space(a) for a in agents]
        if self.roles is None and (obs_spaces[0] != obs_spaces[1] or act_spaces[0] != act_spaces[1]):
            raise EnvError(f'{self.label}: the agents have different spaces (observation {obs_spaces}, action '
                           f'{act_spaces}); expected the same for both seats, observed from the own perspective '
                           f'(or a game that names each seat\'s role: the class attribute roles)')
        for agent, obs_space, act_space in zip(agents, obs_spaces, act_spaces):
            discrete = isinstance(act_space, spaces.Discrete) and int(act_space.start) == 0
            if not (discrete or is_continuous(act_space)):
                raise EnvError(f'{self.label}: action space {act_space!r} of {agent!r}; expected Discrete(n) '
                               f'starting at 0, or a Box (continuous actions)')
            if not isinstance(obs_space, spaces.Box):
                raise EnvError(f'{self.label}: observation space {obs_space!r} of {agent!r}; expected a Box '
                               f'(batched as float32)')
        if self.roles is None:
            self.observation_space = obs_spaces[0]
            self.action_space = act_spaces[0]
        else:
            self.observation_space = self.action_space = None  # type: ignore[assignment]  # per seat instead
            self.observation_spaces, self.action_spaces = obs_spaces, act_spaces

    def _empty_seats(self, B: int, shapes) -> Any:
        """Uninitialised float32 ``[B, S, *shape]`` (symmetric) or one ``[B, *shape_s]`` per seat (roles)."""
        if self.roles is None:
            return np.empty((B, NUM_SEATS) + tuple(shapes[0]), np.float32)
        return tuple(np.empty((B,) + tuple(shape), np.float32) for shape in shapes)

    def _empty_masks(self, B: int) -> Any:
        if self.roles is None:
            return np.empty((B, NUM_SEATS, self._mask_widths[0]), bool)
        return tuple(np.empty((B, width), bool) for width in self._mask_widths)

    def _movers(self, mask) -> np.ndarray:
        if self.roles is None:
            return mask.any(axis=2)
        return np.stack([m.any(axis=1) for m in mask], axis=1)

    # -- reset and step ------------------------------------------------------------------------

    def _reset(self, seed: Optional[int], reseed: bool) -> BattleStep:
        B = self.num_envs
        obs, mask = self._empty_seats(B, self._obs_shapes), self._empty_masks(B)
        obs_seats, mask_seats = self._seat_views(obs), self._seat_views(mask)
        for j in range(B):
            game_seed = seed + j if (reseed and seed is not None) else None
            game_obs, game_mask, reported_masks = self._reset_game(j, game_seed)
            for s in range(NUM_SEATS):
                obs_seats[s][j], mask_seats[s][j] = game_obs[s], game_mask[s]
            if j == 0 and self._turn_based_attr is None and not self._seeded:
                self.turn_based = reported_masks
        to_move = self._movers(mask)
        self._check_finite(obs, 'reset()')
        zeros = np.zeros((B, NUM_SEATS), np.float32)
        no_game_over = np.zeros(B, bool)
        return BattleStep(obs, mask, to_move, zeros, no_game_over, no_game_over.copy(),
                          np.zeros((B, NUM_SEATS), np.int8), copy_seats(obs))

    @staticmethod
    def _seat_views(arrays) -> List[np.ndarray]:
        return [seat_view(arrays, s) for s in range(NUM_SEATS)]

    def _actions_per_game(self, actions) -> List[Any]:
        """Each game's actions, one per seat: Python ints for Discrete seats (which every game accepts), float32
        arrays for Box seats."""
        if self.roles is not None:
            seats = [list(a) if cont else a.tolist() for a, cont in zip(actions, self._continuous)]
            return list(zip(*seats))
        return list(actions) if self.continuous else actions.tolist()

    def _step(self, actions) -> BattleStep:
        B, agents = self.num_envs, self.agents
        obs, mask = self._empty_seats(B, self._obs_shapes), self._empty_masks(B)
        obs_seats, mask_seats = self._seat_views(obs), self._seat_views(mask)
        reward = np.empty((B, NUM_SEATS), np.float32)
        terminated = np.zeros(B, bool)
        truncated = np.zeros(B, bool)
        result = np.zeros((B, NUM_SEATS), np.int8)
        final_obs = self._empty_seats(B, self._obs_shapes)
        final_seats = self._seat_views(final_obs)
        for j, (a0, a1) in enumerate(self._actions_per_game(actions)):
            call = f'step({{{agents[0]!r}: {_short.repr(a0)}, {agents[1]!r}: {_short.repr(a1)}}})'
            try:
                out = self.envs[j].step({agents[0]: a0, agents[1]: a1})
            except Exception as err:
                raise EnvError(f'{self._who(j)} raised {type(err).__name__} in {call}: {err}') from err
            if not (isinstance(out, tuple) and len(out) == 5):
                raise EnvError(self._bad(j, call, out, 'a 5-tuple of dicts (observations, rewards, terminations, '
                                                    'truncations, infos)'))
            obs_d, reward_d, term_d, trunc_d, info_d = (self._per_agent(j, call, d, field) for d, field in
                                                        zip(out, ('observations', 'rewards', 'terminations',
                                                                  'truncations', 'infos')))
            for s, agent in enumerate(agents):
                final_seats[s][j] = obs_seats[s][j] = self._checked_obs(j, call, obs_d[agent], agent, s)
                reward[j, s] = self._checked_reward(j, call, reward_d[agent], agent)
                mask_seats[s][j] = self._checked_mask(j, call, info_d[agent], agent, s)
            terminated[j] = self._game_flag(j, call, term_d, 'terminations')
            truncated[j] = self._game_flag(j, call, trunc_d, 'truncations')
            if terminated[j] or truncated[j]:
                result[j] = self._checked_result(j, call, info_d)
                game_obs, game_mask, _ = self._reset_game(j, None)
                for s in range(NUM_SEATS):
                    obs_seats[s][j], mask_seats[s][j] = game_obs[s], game_mask[s]
            elif not any(m[j].any() for m in mask_seats):
                raise EnvError(f'{self._who(j)}: {call} left no agent with a legal action although the game did '
                               f'not end; expected a True entry in some infos[agent]["action_mask"]')
        self._check_finite(final_obs, 'step()')
        return BattleStep(obs, mask, self._movers(mask), reward, terminated, truncated, result, final_obs)

    def _reset_game(self, j: int, seed: Optional[int]):
        call = 'reset()' if seed is None else f'reset(seed={seed})'
        try:
            out = self.envs[j].reset() if seed is None else self.envs[j].reset(seed=seed)
        except Exception as err:
            raise EnvError(f'{self._who(j)} raised {type(err).__name__} in {call}: {err}') from err
        if not (isinstance(out, tuple) and len(out) == 2):
            raise EnvError(self._bad(j, call, out, 'a 2-tuple of dicts (observations, infos)'))
        obs_d, info_d = (self._per_agent(j, call, d, field) for d, field in zip(out, ('observations', 'infos')))
        obs = [self._checked_obs(j, call, obs_d[agent], agent, s) for s, agent in enumerate(self.agents)]
        mask = [self._checked_mask(j, call, info_d[agent], agent, s) for s, agent in enumerate(self.agents)]
        if not any(m.any() for m in mask):
            raise EnvError(f'{self._who(j)}: {call} gave no agent a legal action; expected a True entry in some '
                           f'infos[agent]["action_mask"]')
        reported_masks = any('action_mask' in info_d[agent] for agent in self.agents)
        return obs, mask, reported_masks

    def _close(self) -> None:
        envs, self.envs = getattr(self, 'envs', []), []
        close_all(envs, self.label)

    # -- validation ----------------------------------------------------------------------------

    def _who(self, j: int) -> str:
        return f'{self.label}: game {j}'

    def _bad(self, j: int, call: str, got: Any, expected: str) -> str:
        return f'{self._who(j)}: {call} returned {_short.repr(got)} of type {type(got).__name__}; expected {expected}'

    def _per_agent(self, j: int, call: str, d: Any, field: str) -> dict:
        if not isinstance(d, dict) or set(d) != set(self.agents):
            keys = sorted(d) if isinstance(d, dict) else type(d).__name__
            raise EnvError(f'{self._who(j)}: {call} returned {field} keyed by {keys}; expected a dict with the '
                           f'keys {self.agents} (both agents, also on the step that ends the game)')
        return d

    def _checked_obs(self, j: int, call: str, o: Any, agent: str, seat: int) -> np.ndarray:
        arr = np.asarray(o)
        shape = self._obs_shapes[seat]
        if arr.shape != shape or arr.dtype.kind not in 'biuf':
            raise EnvError(f'{self._who(j)}: {call} returned an observation for {agent!r} of shape {arr.shape} and '
                           f'dtype {arr.dtype} ({_short.repr(o)}); expected shape {shape} of numbers '
                           f'({self.observation_spaces[seat]!r})')
        return arr

    def _checked_reward(self, j: int, call: str, r: Any, agent: str) -> float:
        if isinstance(r, _BOOLS) or not isinstance(r, _REAL_SCALARS) or not np.isfinite(r):
            raise EnvError(f'{self._who(j)}: {call} returned reward {_short.repr(r)} of type {type(r).__name__} '
                           f'for {agent!r}; expected a finite real number')
        return float(r)

    def _checked_mask(self, j: int, call: str, info: Any, agent: str, seat: int) -> np.ndarray:
        if not isinstance(info, dict):
            raise EnvError(self._bad(j, call, info, f'a dict as info of {agent!r}'))
        space = self.action_spaces[seat]
        if self._continuous[seat]:
            if 'action_mask' in info:
                raise EnvError(f'{self._who(j)}: {call} returned infos[{agent!r}]["action_mask"] for the Box actions '
                               f'{space!r}; expected none: every action in the box is legal')
            return np.ones(1, bool)  # the placeholder column: this seat moves
        if 'action_mask' not in info:
            if self.turn_based:
                raise EnvError(f'{self._who(j)}: {call} returned no infos[{agent!r}]["action_mask"]; a turn-based '
                               f'game must give one with every observation')
            return np.ones(self._mask_widths[seat], bool)
        m = np.asarray(info['action_mask'])
        ok_values = m.dtype == bool or (m.dtype.kind in 'iu' and ((m == 0) | (m == 1)).all())
        if m.shape != (self._mask_widths[seat],) or not ok_values:
            raise EnvError(f'{self._who(j)}: {call} returned infos[{agent!r}]["action_mask"] = {_short.repr(m)} of '
                           f'shape {m.shape} and dtype {m.dtype}; expected a bool array of shape '
                           f'({self._mask_widths[seat]},)')
        return m.astype(bool)

    def _game_flag(self, j: int, call: str, flags: dict, field: str) -> bool:
        values = [flags[a] for a in self.agents]
        for agent, v in zip(self.agents, values):
            if not isinstance(v, _BOOLS):
                raise EnvError(f'{self._who(j)}: {call} returned {field}[{agent!r}] = {_short.repr(v)} of type '
                               f'{type(v).__name__}; expected bool')
        if values[0] != values[1]:
            raise EnvError(f'{self._who(j)}: {call} returned {field} {flags}; expected equal values: a two-player '
                           f'game ends for both agents at once')
        return bool(values[0])

    def _checked_result(self, j: int, call: str, infos: dict) -> List[int]:
        names = [infos[a].get('result') for a in self.agents]
        if not all(isinstance(n, str) and n in RESULT_CODE for n in names):
            raise EnvError(f'{self._who(j)}: {call} ended the game with infos[agent]["result"] = '
                           f'{dict(zip(self.agents, names))}; expected one of \'win\', \'draw\', \'loss\' per agent')
        codes = [RESULT_CODE[n] for n in names]
        if codes[0] != -codes[1]:
            raise EnvError(f'{self._who(j)}: {call} reported results {dict(zip(self.agents, names))}; expected '
                           f'opposite results (win/loss) or a draw for both')
        return codes

    def _check_finite(self, obs, call: str) -> None:
        for seat_obs in (obs if isinstance(obs, tuple) else (obs,)):
            total = np.add.reduce(seat_obs, None)  # NaN or inf in, NaN or inf out: one cheap reduction
            if total - total and not np.isfinite(seat_obs).all():
                j = int(np.flatnonzero(~np.isfinite(seat_obs.reshape(len(seat_obs), -1)).all(axis=1))[0])
                raise EnvError(f'{self._who(j)}: {call} returned an observation containing NaN or inf; expected '
                               f'finite values')


# -- one game of a vectorised env, as a single game --------------------------------------------

class SingleGameView(BattleEnv):
    """A :class:`BattleEnv` over a one-game :class:`VecBattleEnv`: the natively vectorised games in
    the PettingZoo parallel shape (for people, scripts and tests).

    The game restarts inside the vectorised env when it ends; ``reset()`` then starts from that
    fresh game, so the view consumes randomness exactly as the vectorised env does.
    """

    def __init__(self, vec_env: VecBattleEnv) -> None:
        super().__init__(None)
        if vec_env.num_envs != 1:
            raise EnvError(f'SingleGameView: expected a vectorised env with num_envs=1, got {vec_env!r}')
        self.vec_env = vec_env
        self.cfg = getattr(vec_env, 'cfg', None)
        self.possible_agents = list(vec_env.agents)
        self.turn_based = vec_env.turn_based
        self.roles = vec_env.roles
        self.general_sum = vec_env.general_sum
        self._continuous = [is_continuous(space) for space in vec_env.action_spaces]
        self._pending: Optional[BattleStep] = None  # the fresh game waiting for reset()

    def observation_space(self, agent: str) -> spaces.Space:
        self._check_agent(agent)
        return self.vec_env.observation_spaces[self.possible_agents.index(agent)]

    def action_space(self, agent: str) -> spaces.Space:
        self._check_agent(agent)
        return self.vec_env.action_spaces[self.possible_agents.index(agent)]

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None):
        if seed is not None or self._pending is None:
            out = self.vec_env.reset(seed)
        else:
            out = self._pending
        self._pending = None
        self.agents = list(self.possible_agents)
        obs = {a: out.seat_obs(s)[0] for s, a in enumerate(self.agents)}
        return obs, {a: self._info(out.seat_mask(s)[0], s) for s, a in enumerate(self.agents)}

    def _info(self, mask: np.ndarray, seat: int) -> dict:
        """An agent's info: its action mask, which a Box seat does not have."""
        return {} if self._continuous[seat] else {'action_mask': mask}

    def step(self, actions: Dict[str, int]):
        if not self.agents:
            raise EnvError('SingleGameView: step() after the game ended; call reset() first')
        if not isinstance(actions, dict) or set(actions) != set(self.agents):
            raise EnvError(f'SingleGameView: actions {_short.repr(actions)}; expected a dict with the keys '
                           f'{self.agents}')
        agents = self.possible_agents
        if self.roles is None:
            dtype = action_layout(self.vec_env.action_space)[1]
            out = self.vec_env.step(np.array([[actions[a] for a in agents]], dtype))
        else:
            out = self.vec_env.step([np.array([actions[a]], action_layout(space)[1])
                                     for a, space in zip(agents, self.vec_env.action_spaces)])
        over = bool(out.terminated[0] or out.truncated[0])
        obs = {a: out.seat_final_obs(s)[0] for s, a in enumerate(agents)}
        infos = {}
        for s, a in enumerate(agents):
            # The mask of the fresh game belongs to reset(); a finished game has no legal moves left.
            mask = out.seat_mask(s)[0]
            infos[a] = self._info(np.zeros_like(mask) if over else mask, s)
            if over:
                infos[a]['result'] = RESULT_NAME[int(out.result[0, s])]
        rewards = {a: float(out.reward[0, s]) for s, a in enumerate(agents)}
        terminations = {a: bool(out.terminated[0]) for a in agents}
        truncations = {a: bool(out.truncated[0]) for a in agents}
        if over:
            self._pending = out
            self.agents = []
        return obs, rewards, terminations, truncations, infos

    def close(self) -> None:
        self.vec_env.close()

    def _check_agent(self, agent: str) -> None:
        if agent not in self.possible_agents:
            raise EnvError(f'SingleGameView: unknown agent {agent!r}; expected one of {self.possible_agents}')


# -- building battle envs from config ----------------------------------------------------------

def battle_env_class(env_type):
    """The registered battle env class named ``env_type`` (or the class itself), else :class:`EnvError`."""
    cls = ENV_REGISTRY.get(env_type) if isinstance(env_type, str) else env_type
    if not is_battle_env(cls):
        raise EnvError(f'env type {getattr(cls, "registry_name", cls)!r} is not a battle env; expected a '
                       f'subclass of NativeVecBattleEnv or BattleEnv (a two-player game)')
    return cls


def is_battle_env(env_type) -> bool:
    """Whether ``env_type`` (a registered name or a class) is a two-player battle env."""
    if isinstance(env_type, str):
        import_env_modules()
        if env_type not in ENV_REGISTRY:
            return False
        env_type = ENV_REGISTRY.get(env_type)
    return isinstance(env_type, type) and issubclass(env_type, (BattleEnv, NativeVecBattleEnv))


def make_battle_env(env_cfg: Mapping, num_envs: int, seed: Optional[int] = None,
                    training: bool = False) -> VecBattleEnv:
    """``num_envs`` games of the battle env ``env_cfg.type``: the native vectorised class, or
    :class:`DictBattleVecEnv` around single games of a :class:`BattleEnv` class.

    Only a training collector's envs pass ``training``: every other game (evaluation, play, export)
    gets the class's ``evaluator_config`` applied, if it has one (e.g. no random openings)."""
    import_env_modules()
    section = complete_section('env', env_cfg)
    cls = battle_env_class(section.type)
    hook = getattr(cls, 'evaluator_config', None)
    if not training and hook is not None:
        section = complete_section('env', hook(section))
    if cls.is_vectorised:
        return cls(section, num_envs, seed)
    return DictBattleVecEnv(lambda: cls(section), num_envs, seed)
