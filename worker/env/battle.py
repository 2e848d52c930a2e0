"""Two-player (battle) environments: the single-game API, the vectorised API and the bridge between them.

Single game, :class:`BattleEnv` (the PettingZoo *parallel* shape)
-----------------------------------------------------------------
* ``possible_agents``, e.g. ``['player_0', 'player_1']``; ``agents`` are the agents still playing.
* ``observation_space(agent)`` and ``action_space(agent)`` (``Discrete``).
* ``reset(seed=None) -> (obs, infos)`` and ``step(actions) -> (obs, rewards, terminations,
  truncations, infos)``: dicts keyed by agent. ``infos[agent]['action_mask']`` (``np.bool_``
  ``[A]``) comes with every observation; in turn-based games the agent not to move has an
  all-False mask. When the game ends, ``infos[agent]['result']`` is ``'win'``, ``'draw'`` or
  ``'loss'``; both agents' terminations (and truncations) are equal: the game ends for both.

Vectorised, :class:`VecBattleEnv` (the fast path; B = ``num_envs`` games)
----------------------------------------------------------------------
* Attributes: ``num_envs``, ``num_seats`` (2), ``agents`` (seat i is ``agents[i]``),
  ``observation_space`` and ``action_space`` (the same for both seats: observations are always
  from the seat's own perspective, so one policy can play either seat), ``turn_based``.
* ``reset(seed=None) -> BattleStep``: a new game in every env. ``seed`` reseeds the env's numpy
  Generator; without it the first reset uses the constructor's seed and later resets continue
  the Generator (so do the automatic resets).
* ``step(actions) -> BattleStep``: ``actions`` is an integer array ``[B, 2]`` (column = seat).
  Actions of seats not to move are ignored (send 0). An illegal action of a seat to move, or a
  wrong shape or dtype, raises :class:`EnvError` (naming env, seat, action and the legal
  actions) before any game changes. Finished games restart automatically.
* ``close()``; envs are context managers.
* :class:`BattleStep` fields, all numpy:

  ================  ===================  ===============================================================
  ``obs``           [B, 2, *obs_shape]   float32, seat's own perspective (a new game's where one ended)
  ``action_mask``   [B, 2, A] bool       all True in simultaneous games; all False for a seat not to move
  ``to_move``       [B, 2] bool          seats that act next step (both in simultaneous games)
  ``reward``        [B, 2] float32       this step's reward per seat
  ``terminated``    [B] bool             the game ended by its rules
  ``truncated``     [B] bool             the game was cut (step limit); bootstrap from ``final_obs``
  ``result``        [B, 2] int8          +1 win, 0 draw, -1 loss where ``terminated | truncated``
                                         (0 elsewhere); a win for one seat is a loss for the other
  ``final_obs``     [B, 2, *obs_shape]   the finished game's last obs; equal to ``obs`` elsewhere
  ================  ===================  ===============================================================

Two kinds of battle env are registered in ``ENV_REGISTRY`` and told apart by the class
attribute ``is_vectorised``: natively vectorised games (:class:`NativeVecBattleEnv`, built as
``Cls(cfg, num_envs, seed)``) and single games (:class:`BattleEnv`, built as ``Cls(cfg)``), which
:class:`DictBattleVecEnv` steps in a loop. :func:`make_battle_env` builds either from a config
section; :func:`is_battle_env` tells battle envs from single-agent ones. Their ``default_config()``
holds :func:`battle_env_defaults` plus the game's options, and ``reference_bots`` names the
``BOT_REGISTRY`` bots that play the game (evaluation opponents).
"""
from __future__ import annotations

import reprlib
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple

import numpy as np
from gymnasium import spaces

from sparring.config.schema import in_range, of_type
from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.closeable import Closeable, close_all
from sparring.worker.env.errors import EnvError
from sparring.worker.env.gym_env import complete_section, import_env_modules

AGENTS = ('player_0', 'player_1')
NUM_SEATS = 2
RESULT_CODE = {'win': 1, 'draw': 0, 'loss': -1}
RESULT_NAME = {code: name for name, code in RESULT_CODE.items()}

_short = reprlib.Repr()
_short.maxstring = _short.maxother = 80


class BattleStep(NamedTuple):
    """One vectorised step of B two-seat games (see the module docstring for each field)."""
    obs: np.ndarray
    action_mask: np.ndarray
    to_move: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    result: np.ndarray
    final_obs: np.ndarray


# -- config ------------------------------------------------------------------------------------

def battle_env_defaults() -> dict:
    """The ``env`` config keys every battle env has; a game adds its own options to them."""
    return dict(
        collector_env_num=8,
        evaluator_env_num=8,
        n_evaluator_episodes=8,
        stop_value=None,  # an evaluation measure at which training may stop (the pipeline defines it)
        # Battle envs are stepped in process by the battle collector; the key keeps the env section
        # the same shape as a single-agent one for the config compiler.
        manager=dict(type='base'),
    )


BATTLE_ENV_CONSTRAINTS = {
    'collector_env_num': in_range(1, None),
    'evaluator_env_num': in_range(1, None),
    'n_evaluator_episodes': in_range(1, None),
    'stop_value': of_type(int, float, allow_none=True),
}


# -- the single-game API -----------------------------------------------------------------------

class BattleEnv:
    """Base class of single two-player games in the PettingZoo parallel shape.

    A registered subclass is built as ``Cls(cfg)`` and implements ``observation_space``,
    ``action_space``, ``reset`` and ``step`` as the module docstring describes.
    """

    is_vectorised = False
    turn_based = False
    possible_agents: List[str] = list(AGENTS)
    #: BOT_REGISTRY names of the bots that play this game (e.g. evaluation opponents)
    reference_bots: Tuple[str, ...] = ('random',)
    config_constraints = BATTLE_ENV_CONSTRAINTS

    @classmethod
    def default_config(cls) -> dict:
        return battle_env_defaults()

    def __init__(self, cfg: Optional[Mapping] = None) -> None:
        registered = getattr(type(self), 'registry_name', None)
        self.cfg = complete_section('env', {'type': registered, **cfg}) if registered and cfg is not None else cfg
        self.agents: List[str] = []

    def observation_space(self, agent: str) -> spaces.Space:
        raise NotImplementedError

    def action_space(self, agent: str) -> spaces.Discrete:
        raise NotImplementedError

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[dict, dict]:
        raise NotImplementedError

    def step(self, actions: Dict[str, int]) -> Tuple[dict, dict, dict, dict, dict]:
        raise NotImplementedError

    def close(self) -> None:
        pass


# -- the vectorised API ------------------------------------------------------------------------

class VecBattleEnv(Closeable):
    """What every vectorised battle env shares: argument checks, seeding, action checks, life cycle.

    A subclass sets ``observation_space``, ``action_space`` and ``turn_based`` and implements
    ``_reset(seed, reseed) -> BattleStep`` and ``_step(checked_actions) -> BattleStep``.
    """

    is_vectorised = True
    num_seats = NUM_SEATS
    turn_based = False

    def __init__(self, num_envs: int, seed: Optional[int] = None, label: Optional[str] = None) -> None:
        self.closed = False
        self.label = label or type(self).__name__
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise EnvError(f'{self.label}: num_envs must be an int >= 1, got {num_envs!r}')
        _check_seed(seed, self.label, 'seed')
        self.num_envs = int(num_envs)
        self.seed = None if seed is None else int(seed)
        self.agents = list(AGENTS)
        self._seeded = False
        self._reset_needed_because: Optional[str] = 'reset() was not called yet'
        # Index grids for the one fancy-index legality check per step.
        self._env_index = np.arange(self.num_envs)[:, None]
        self._seat_index = np.arange(NUM_SEATS)[None, :]

    def reset(self, seed: Optional[int] = None) -> BattleStep:
        """Start a new game in every env (see the module docstring for how ``seed`` is used)."""
        self._check_open()
        _check_seed(seed, self.label, 'reset(seed)')
        reseed = seed is not None or not self._seeded
        if seed is None and not self._seeded:
            seed = self.seed
        self._reset_needed_because = 'the last reset() failed'
        step = self._reset(seed, reseed)
        self._remember(step)
        self._seeded = True
        self._reset_needed_because = None
        return step

    def step(self, actions: np.ndarray) -> BattleStep:
        """Play one move (or one simultaneous round) in every game; finished games restart."""
        self._check_open()
        if self._reset_needed_because is not None:
            raise EnvError(f'{self!r}: call reset() before step(): {self._reset_needed_because}')
        checked = self._check_actions(actions)
        try:
            step = self._step(checked)
        except BaseException as err:
            # Some games may have moved and others not: only a reset restores a consistent batch.
            self._reset_needed_because = f'an earlier step() failed ({type(err).__name__})'
            raise
        self._remember(step)
        return step

    def _remember(self, step: BattleStep) -> None:
        """Keep what the next actions are checked against; copies, as the caller owns ``step``."""
        self._mask = step.action_mask.copy()
        self._to_move = step.to_move.copy()

    def _check_actions(self, actions) -> np.ndarray:
        """``actions`` as an int64 ``[B, 2]`` array, with seats not to move set to 0; raises on illegal ones."""
        batch = np.asarray(actions)
        expected_shape = (self.num_envs, NUM_SEATS)
        if batch.shape != expected_shape:
            raise EnvError(f'{self.label}: actions of shape {batch.shape}; expected shape {expected_shape} '
                           f'(num_envs, seats) with one action per seat (0 for a seat not to move)')
        if batch.dtype.kind not in 'iu':
            raise EnvError(f'{self.label}: actions of dtype {batch.dtype}; expected integers '
                           f'(indices into {self.action_space!r})')
        mask, to_move = self._mask, self._to_move
        num_actions = int(self.action_space.n)
        batch = batch.astype(np.int64)  # a copy: the caller may reuse its array
        if batch.min() < 0 or batch.max() >= num_actions:
            # Out of range only matters for a seat to move; the others' actions are ignored.
            out_of_range = to_move & ((batch < 0) | (batch >= num_actions))
            if out_of_range.any():
                self._raise_illegal(batch, out_of_range, 'out of range')
            batch *= to_move
        legal = mask[self._env_index, self._seat_index, batch]
        if not legal.all():  # always so in turn-based games: the seat not to move has no legal action
            illegal = to_move & ~legal
            if illegal.any():
                self._raise_illegal(batch, illegal, 'illegal')
            batch *= to_move  # the games never see the ignored actions of seats not to move
        return batch

    def _raise_illegal(self, batch: np.ndarray, bad: np.ndarray, what: str) -> None:
        env, seat = (int(i) for i in np.argwhere(bad)[0])
        legal = np.flatnonzero(self._mask[env, seat]).tolist()
        others = int(bad.sum()) - 1
        more = f' ({others} more illegal action{"s" if others != 1 else ""} in this batch)' if others else ''
        raise EnvError(f'{self.label}: env {env}, seat {seat} ({self.agents[seat]}) played {what} action '
                       f'{int(batch[env, seat])}; legal actions there: {legal}{more}')

    def __repr__(self) -> str:
        return f'{type(self).__name__}(num_envs={getattr(self, "num_envs", "?")})'

    def _reset(self, seed: Optional[int], reseed: bool) -> BattleStep:
        raise NotImplementedError

    def _step(self, actions: np.ndarray) -> BattleStep:
        raise NotImplementedError

    def _close(self) -> None:
        pass


class NativeVecBattleEnv(VecBattleEnv):
    """Base of games vectorised in numpy: the game state lives in arrays with one row per game.

    A registered subclass is built as ``Cls(cfg, num_envs, seed)``, keeps its randomness in
    ``self.np_random`` and implements three array functions:

    * ``_reset_games(rows)``: a new game in the games ``rows`` (an int array);
    * ``_advance(actions) -> (reward, terminated, truncated, result)``: one step of every game;
    * ``_observe(rows) -> (obs, action_mask, to_move)`` of the games ``rows``.
    """

    #: BOT_REGISTRY names of the bots that play this game (e.g. evaluation opponents)
    reference_bots: Tuple[str, ...] = ('random',)
    config_constraints = BATTLE_ENV_CONSTRAINTS

    @classmethod
    def default_config(cls) -> dict:
        return battle_env_defaults()

    def __init__(self, cfg: Mapping, num_envs: int, seed: Optional[int] = None) -> None:
        name = getattr(type(self), 'registry_name', type(self).__name__)
        super().__init__(num_envs, seed, label=f'battle env {name!r}')
        self.cfg = complete_section('env', {'type': name, **(cfg or {})})
        self.np_random = np.random.default_rng(seed)
        self._all_games = np.arange(self.num_envs)

    def _reset(self, seed: Optional[int], reseed: bool) -> BattleStep:
        if reseed:
            self.np_random = np.random.default_rng(seed)
        self._reset_games(self._all_games)
        obs, mask, to_move = self._observe(self._all_games)
        zeros = np.zeros((self.num_envs, NUM_SEATS), np.float32)
        no_game_over = np.zeros(self.num_envs, bool)
        return BattleStep(obs, mask, to_move, zeros, no_game_over, no_game_over.copy(),
                          np.zeros((self.num_envs, NUM_SEATS), np.int8), obs.copy())

    def _step(self, actions: np.ndarray) -> BattleStep:
        reward, terminated, truncated, result = self._advance(actions)
        obs, mask, to_move = self._observe(self._all_games)
        final_obs = obs.copy()
        finished = np.flatnonzero(terminated | truncated)
        if finished.size:
            self._reset_games(finished)
            obs[finished], mask[finished], to_move[finished] = self._observe(finished)
        return BattleStep(obs, mask, to_move, reward, terminated, truncated, result, final_obs)

    def _reset_games(self, rows: np.ndarray) -> None:
        raise NotImplementedError

    def _advance(self, actions: np.ndarray):
        raise NotImplementedError

    def _observe(self, rows: np.ndarray):
        raise NotImplementedError

    def __repr__(self) -> str:
        return f'{type(self).__name__}(num_envs={getattr(self, "num_envs", "?")}, {getattr(self, "label", "")})'


# -- single games in a loop --------------------------------------------------------------------

_REAL_SCALARS = (int, float, np.integer, np.floating)
_BOOLS = (bool, np.bool_)


class DictBattleVecEnv(VecBattleEnv):
    """``num_envs`` single games (:class:`BattleEnv` or any PettingZoo parallel env with the same
    conventions) behind the :class:`VecBattleEnv` API, stepped in a loop and checked at every step.

    Game i is reset with ``seed + i`` on a seeded reset and unseeded afterwards (automatic resets
    continue each game's own generator). ``turn_based`` is the games' own attribute or, failing
    that, whether the first reset reported action masks.
    """

    def __init__(self, make_env: Callable[[], Any], num_envs: int, seed: Optional[int] = None) -> None:
        if not callable(make_env):
            raise EnvError(f'DictBattleVecEnv: make_env must be a callable returning a game, got {make_env!r}')
        super().__init__(num_envs, seed, label='DictBattleVecEnv')
        self.envs: List[Any] = []
        try:
            for _ in range(self.num_envs):
                self.envs.append(make_env())
            self.label = f'DictBattleVecEnv({type(self.envs[0]).__name__})'
            self._check_agents_and_spaces()
        except BaseException:
            self._close()
            raise
        self._turn_based_attr = getattr(self.envs[0], 'turn_based', None)
        self.turn_based = bool(self._turn_based_attr)
        self.obs_shape = tuple(self.observation_space.shape)

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
        obs_spaces = [first.observation_space(a) for a in agents]
        act_spaces = [first.action_space(a) for a in agents]
        if obs_spaces[0] != obs_spaces[1] or act_spaces[0] != act_spaces[1]:
            raise EnvError(f'{self.label}: the agents have different spaces (observation {obs_spaces}, action '
                           f'{act_spaces}); expected the same for both seats, observed from the own perspective')
        if not isinstance(act_spaces[0], spaces.Discrete) or int(act_spaces[0].start) != 0:
            raise EnvError(f'{self.label}: action space {act_spaces[0]!r}; expected Discrete(n) starting at 0')
        if not isinstance(obs_spaces[0], spaces.Box):
            raise EnvError(f'{self.label}: observation space {obs_spaces[0]!r}; expected a Box '
                           f'(batched as float32)')
        self.observation_space = obs_spaces[0]
        self.action_space = act_spaces[0]

    # -- reset and step ------------------------------------------------------------------------

    def _reset(self, seed: Optional[int], reseed: bool) -> BattleStep:
        B = self.num_envs
        obs = np.empty((B, NUM_SEATS) + self.obs_shape, np.float32)
        mask = np.empty((B, NUM_SEATS, self.action_space.n), bool)
        for j in range(B):
            game_seed = seed + j if (reseed and seed is not None) else None
            obs[j], mask[j], reported_masks = self._reset_game(j, game_seed)
            if j == 0 and self._turn_based_attr is None and not self._seeded:
                self.turn_based = reported_masks
        to_move = mask.any(axis=2)
        self._check_finite(obs, 'reset()')
        zeros = np.zeros((B, NUM_SEATS), np.float32)
        no_game_over = np.zeros(B, bool)
        return BattleStep(obs, mask, to_move, zeros, no_game_over, no_game_over.copy(),
                          np.zeros((B, NUM_SEATS), np.int8), obs.copy())

    def _step(self, actions: np.ndarray) -> BattleStep:
        B, agents = self.num_envs, self.agents
        obs = np.empty((B, NUM_SEATS) + self.obs_shape, np.float32)
        mask = np.empty((B, NUM_SEATS, self.action_space.n), bool)
        reward = np.empty((B, NUM_SEATS), np.float32)
        terminated = np.zeros(B, bool)
        truncated = np.zeros(B, bool)
        result = np.zeros((B, NUM_SEATS), np.int8)
        final_obs = np.empty_like(obs)
        for j, (a0, a1) in enumerate(actions.tolist()):
            call = f'step({{{agents[0]!r}: {a0}, {agents[1]!r}: {a1}}})'
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
                obs[j, s] = self._checked_obs(j, call, obs_d[agent], agent)
                reward[j, s] = self._checked_reward(j, call, reward_d[agent], agent)
                mask[j, s] = self._checked_mask(j, call, info_d[agent], agent)
            terminated[j] = self._game_flag(j, call, term_d, 'terminations')
            truncated[j] = self._game_flag(j, call, trunc_d, 'truncations')
            final_obs[j] = obs[j]
            if terminated[j] or truncated[j]:
                result[j] = self._checked_result(j, call, info_d)
                obs[j], mask[j], _ = self._reset_game(j, None)
            elif not mask[j].any():
                raise EnvError(f'{self._who(j)}: {call} left no agent with a legal action although the game did '
                               f'not end; expected a True entry in some infos[agent]["action_mask"]')
        self._check_finite(final_obs, 'step()')
        return BattleStep(obs, mask, mask.any(axis=2), reward, terminated, truncated, result, final_obs)

    def _reset_game(self, j: int, seed: Optional[int]):
        call = 'reset()' if seed is None else f'reset(seed={seed})'
        try:
            out = self.envs[j].reset() if seed is None else self.envs[j].reset(seed=seed)
        except Exception as err:
            raise EnvError(f'{self._who(j)} raised {type(err).__name__} in {call}: {err}') from err
        if not (isinstance(out, tuple) and len(out) == 2):
            raise EnvError(self._bad(j, call, out, 'a 2-tuple of dicts (observations, infos)'))
        obs_d, info_d = (self._per_agent(j, call, d, field) for d, field in zip(out, ('observations', 'infos')))
        obs = np.empty((NUM_SEATS,) + self.obs_shape, np.float32)
        mask = np.empty((NUM_SEATS, self.action_space.n), bool)
        for s, agent in enumerate(self.agents):
            obs[s] = self._checked_obs(j, call, obs_d[agent], agent)
            mask[s] = self._checked_mask(j, call, info_d[agent], agent)
        if not mask.any():
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

    def _checked_obs(self, j: int, call: str, o: Any, agent: str) -> np.ndarray:
        arr = np.asarray(o)
        if arr.shape != self.obs_shape or arr.dtype.kind not in 'biuf':
            raise EnvError(f'{self._who(j)}: {call} returned an observation for {agent!r} of shape {arr.shape} and '
                           f'dtype {arr.dtype} ({_short.repr(o)}); expected shape {self.obs_shape} of numbers '
                           f'({self.observation_space!r})')
        return arr

    def _checked_reward(self, j: int, call: str, r: Any, agent: str) -> float:
        if isinstance(r, _BOOLS) or not isinstance(r, _REAL_SCALARS) or not np.isfinite(r):
            raise EnvError(f'{self._who(j)}: {call} returned reward {_short.repr(r)} of type {type(r).__name__} '
                           f'for {agent!r}; expected a finite real number')
        return float(r)

    def _checked_mask(self, j: int, call: str, info: Any, agent: str) -> np.ndarray:
        if not isinstance(info, dict):
            raise EnvError(self._bad(j, call, info, f'a dict as info of {agent!r}'))
        if 'action_mask' not in info:
            if self.turn_based:
                raise EnvError(f'{self._who(j)}: {call} returned no infos[{agent!r}]["action_mask"]; a turn-based '
                               f'game must give one with every observation')
            return np.ones(self.action_space.n, bool)
        m = np.asarray(info['action_mask'])
        ok_values = m.dtype == bool or (m.dtype.kind in 'iu' and ((m == 0) | (m == 1)).all())
        if m.shape != (self.action_space.n,) or not ok_values:
            raise EnvError(f'{self._who(j)}: {call} returned infos[{agent!r}]["action_mask"] = {_short.repr(m)} of '
                           f'shape {m.shape} and dtype {m.dtype}; expected a bool array of shape '
                           f'({self.action_space.n},)')
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

    def _check_finite(self, obs: np.ndarray, call: str) -> None:
        total = np.add.reduce(obs, None)  # NaN or inf in, NaN or inf out: one cheap reduction
        if total - total and not np.isfinite(obs).all():
            j = int(np.flatnonzero(~np.isfinite(obs.reshape(len(obs), -1)).all(axis=1))[0])
            raise EnvError(f'{self._who(j)}: {call} returned an observation containing NaN or inf; expected finite '
                           f'values')


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
        self._pending: Optional[BattleStep] = None  # the fresh game waiting for reset()

    def observation_space(self, agent: str) -> spaces.Space:
        self._check_agent(agent)
        return self.vec_env.observation_space

    def action_space(self, agent: str) -> spaces.Discrete:
        self._check_agent(agent)
        return self.vec_env.action_space

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None):
        if seed is not None or self._pending is None:
            out = self.vec_env.reset(seed)
        else:
            out = self._pending
        self._pending = None
        self.agents = list(self.possible_agents)
        obs = {a: out.obs[0, s] for s, a in enumerate(self.agents)}
        return obs, {a: {'action_mask': out.action_mask[0, s]} for s, a in enumerate(self.agents)}

    def step(self, actions: Dict[str, int]):
        if not self.agents:
            raise EnvError('SingleGameView: step() after the game ended; call reset() first')
        if not isinstance(actions, dict) or set(actions) != set(self.agents):
            raise EnvError(f'SingleGameView: actions {_short.repr(actions)}; expected a dict with the keys '
                           f'{self.agents}')
        out = self.vec_env.step(np.array([[actions[a] for a in self.possible_agents]], np.int64))
        over = bool(out.terminated[0] or out.truncated[0])
        agents = self.possible_agents
        obs = {a: out.final_obs[0, s] for s, a in enumerate(agents)}
        infos = {}
        for s, a in enumerate(agents):
            # The mask of the fresh game belongs to reset(); a finished game has no legal moves left.
            infos[a] = {'action_mask': np.zeros_like(out.action_mask[0, s]) if over else out.action_mask[0, s]}
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


def make_battle_env(env_cfg: Mapping, num_envs: int, seed: Optional[int] = None) -> VecBattleEnv:
    """``num_envs`` games of the battle env ``env_cfg.type``: the native vectorised class, or
    :class:`DictBattleVecEnv` around single games of a :class:`BattleEnv` class."""
    import_env_modules()
    section = complete_section('env', env_cfg)
    cls = battle_env_class(section.type)
    if cls.is_vectorised:
        return cls(section, num_envs, seed)
    return DictBattleVecEnv(lambda: cls(section), num_envs, seed)


def _check_seed(seed, label: str, what: str) -> None:
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise EnvError(f'{label}: {what} must be an int >= 0 or None, got {seed!r}')
