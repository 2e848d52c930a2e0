"""Two-player (battle) environments: the single-game API, the vectorised API and their base classes.

Single game, :class:`BattleEnv` (the PettingZoo *parallel* shape)
-----------------------------------------------------------------
* ``possible_agents``, e.g. ``['player_0', 'player_1']``; ``agents`` are the agents still playing.
* ``observation_space(agent)`` (a ``Box``) and ``action_space(agent)``: ``Discrete(n)`` from 0, or a
  ``Box`` (continuous actions, below).
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
* ``step(actions) -> BattleStep``: ``actions`` is an integer array ``[B, 2]`` (column = seat), or
  for ``Box`` actions a float array ``[B, 2, *action_shape]``. Actions of seats not to move are
  ignored (send 0). An illegal action of a seat to move, or a wrong shape or dtype, raises
  :class:`EnvError` (naming env, seat, action and the legal actions) before any game changes.
  Finished games restart automatically.
* ``close()``; envs are context managers.
* :class:`BattleStep` fields, all numpy:

  ================  ===================  ===============================================================
  ``obs``           [B, 2, *obs_shape]   float32, seat's own perspective (a new game's where one ended)
  ``action_mask``   [B, 2, A] bool       all True in simultaneous games; all False for a seat not to move
                                         (``Box`` actions: A = 1, the column equal to ``to_move``)
  ``to_move``       [B, 2] bool          seats that act next step (both in simultaneous games)
  ``reward``        [B, 2] float32       this step's reward per seat
  ``terminated``    [B] bool             the game ended by its rules
  ``truncated``     [B] bool             the game was cut (step limit); bootstrap from ``final_obs``
  ``result``        [B, 2] int8          +1 win, 0 draw, -1 loss where ``terminated | truncated``
                                         (0 elsewhere); a win for one seat is a loss for the other; it
                                         agrees with the sign of each seat's return (a ``general_sum``
                                         env: with the sign of the difference of the two returns)
  ``final_obs``     [B, 2, *obs_shape]   the finished game's last obs; equal to ``obs`` elsewhere
  ================  ===================  ===============================================================

Continuous (``Box``) actions
----------------------------
A game whose ``action_space`` is a ``Box`` (e.g. Pong duel with ``continuous=True``: a paddle
velocity in ``Box(-1, 1, (1,), float32)``) is played with float actions ``[B, 2, *action_shape]``.
What such a game needs, and what it gets:

* **No action mask.** Every value in the box is legal, so a single game gives no
  ``infos[agent]['action_mask']`` (one that does is refused). In :class:`BattleStep` the field
  keeps its place as a one-column placeholder ``[B, 2, 1]`` equal to ``to_move``, so code that reads
  "who may act" from the mask keeps working; policies are passed ``action_mask=None`` and chunks
  carry no ``action_mask`` array.
* **Clipping.** Actions are clipped to ``[low, high]`` before the game sees them (a Gaussian policy
  samples outside the box); the chunk keeps the action as sampled, so its log-probability stays
  right. NaN or inf in an action of a seat to move raises :class:`EnvError`.
* **Simultaneous moves.** A single game with ``Box`` actions must not be ``turn_based``: without a
  mask it could not say who moves. A natively vectorised game may be: its ``to_move`` says who acts.
* **Bots.** The ``random`` bot draws uniformly from a ``Box`` with finite bounds; a game's own bots
  subclass :class:`~sparring.policy.bot.Bot` with ``action_kinds`` naming ``'continuous'``.
* ``sparring play`` refuses these games (a person cannot type a velocity at 30 steps a second);
  export writes ``action_mean`` and ``action_log_std`` for a Gaussian player.

Seats with roles (asymmetric games)
-----------------------------------
A game whose seats differ (a pursuer and an evader, an attacker and a defender) names each seat's
**role**: ``roles`` is a tuple of one name per seat (``None``, the default, is the symmetric game: every
seat has the same spaces and the arrays above are stacked over seats). Each seat then has its own
spaces, ``observation_spaces[s]`` and ``action_spaces[s]`` (tuples of ``num_seats`` spaces, on every
vectorised env: a symmetric one repeats its one space; :func:`seat_spaces` reads either kind). Seats
that share a role must share spaces. A role is a league *category*: each role has its own players,
policy, model, learner and population, and a player of one role meets players of the others.

* **Single games** set the class attribute ``roles``; ``observation_space(agent)`` and
  ``action_space(agent)`` may then differ per agent (agent i sits in seat i).
* **Vectorised games** set ``roles``, ``observation_spaces`` and ``action_spaces``; their
  ``observation_space`` and ``action_space`` are None.
* **BattleStep, per seat.** The fields whose shape depends on the seat are tuples of one array per seat:
  ``obs[s]`` ``[B, *obs_shape_s]``, ``action_mask[s]`` ``[B, A_s]`` (a ``Box`` seat: the ``[B, 1]``
  placeholder equal to ``to_move[:, s]``) and ``final_obs[s]``. ``to_move``, ``reward``, ``result``
  (``[B, S]``), ``terminated`` and ``truncated`` (``[B]``) keep their shapes. Read a seat with the
  accessors :meth:`BattleStep.seat_obs`, :meth:`~BattleStep.seat_mask` and
  :meth:`~BattleStep.seat_final_obs`, which give seat s's ``[B, ...]`` view in either layout.
* **Actions, per seat**: a tuple (or list) of one array per seat, ``actions[s]`` ``[B]`` integers
  (``Discrete``) or ``[B, *action_shape_s]`` floats (``Box``); :func:`zero_actions` builds the container
  for either kind of game and :func:`seat_action_rows` writes one seat's rows into it. The checks are
  those above, seat by seat against the seat's own space.

Two kinds of battle env are registered in ``ENV_REGISTRY`` and told apart by the class
attribute ``is_vectorised``: natively vectorised games (:class:`NativeVecBattleEnv`, built as
``Cls(cfg, num_envs, seed)``) and single games (:class:`BattleEnv`, built as ``Cls(cfg)``), which
:class:`~sparring.worker.env.battle.DictBattleVecEnv` steps in a loop. Their ``default_config()``
holds :func:`battle_env_defaults` plus the game's options, and ``reference_bots`` names the
``BOT_REGISTRY`` bots that play the game (evaluation opponents). Building them from a config
section is :mod:`sparring.worker.env.battle`'s job.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union, cast

import numpy as np
from gymnasium import spaces

from sparring.config.schema import in_range, of_type
from sparring.worker.env.battle_step import (BattleStep, action_layout, check_roles, clip_box_actions, copy_seats,
                                              is_continuous, mask_width, seat_spaces)
from sparring.worker.env.closeable import Closeable
from sparring.worker.env.errors import EnvError
from sparring.worker.env.gym_env import complete_section

AGENTS = ('player_0', 'player_1')
NUM_SEATS = 2
RESULT_CODE = {'win': 1, 'draw': 0, 'loss': -1}
RESULT_NAME = {code: name for name, code in RESULT_CODE.items()}


# -- config ------------------------------------------------------------------------------------

def battle_env_defaults() -> dict:
    """The ``env`` config keys every battle env has; a game adds its own options to them."""
    return dict(
        collector_env_num=8,  # envs each collector steps side by side (one batch of the policy's forward pass)
        evaluator_env_num=8,  # envs an evaluation steps side by side
        n_evaluator_episodes=8,  # episodes (games, in a battle: per opponent) one evaluation plays
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

    A registered subclass (``@ENV_REGISTRY.register('name')``) is built as ``Cls(cfg)`` and implements
    ``observation_space``, ``action_space``, ``reset`` and ``step``; sparring steps several instances side by
    side (:class:`~sparring.worker.env.battle.DictBattleVecEnv`). The rules a game must keep are in
    this module's docstring, and ``sparring check-env NAME`` checks them one by one.

    Class attributes a subclass may set:

    * ``turn_based``: True when one seat moves at a time (the other's action mask is all False);
    * ``possible_agents``: the two agents' names (default ``['player_0', 'player_1']``);
    * ``roles``: one role name per seat, when the seats differ (their own spaces; see "Seats with roles");
    * ``general_sum``: True when the seats' rewards need not oppose (a result is then the sign of the difference of
      the two returns);
    * ``reference_bots``: names in ``BOT_REGISTRY`` of the bots that play this game (evaluation opponents);
    * ``config_constraints``: checks of the game's own config keys, beside ``default_config()``.

    Args:
        cfg: the run's ``env`` section (the game's keys over :meth:`default_config`), completed from the
            registered class's defaults; None for a game built by hand without a config.
    """

    is_vectorised = False
    turn_based = False
    possible_agents: List[str] = list(AGENTS)
    #: one role name per seat (agent i sits in seat i), or None: a symmetric game
    roles: Optional[Tuple[str, ...]] = None
    #: the seats' rewards need not oppose: a result is the sign of the difference of the two returns
    general_sum = False
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
        """The ``Box`` an agent observes, from its own perspective (both agents' must be equal unless the game
        has ``roles``).

        Args:
            agent: one of ``possible_agents``.
        """
        raise NotImplementedError

    def action_space(self, agent: str) -> spaces.Space:
        """``Discrete(n)`` (actions 0..n-1, with an action mask) or a ``Box`` (continuous, no mask).

        Args:
            agent: one of ``possible_agents``.
        """
        raise NotImplementedError

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None) -> Tuple[dict, dict]:
        """Start a game.

        Args:
            seed: reseeds the game's random generator; None continues it.
            options: unused by sparring (the PettingZoo signature).

        Returns:
            ``(obs, infos)``: dicts keyed by agent; ``infos[agent]['action_mask']`` for ``Discrete`` actions.
        """
        raise NotImplementedError

    def step(self, actions: Dict[str, Any]) -> Tuple[dict, dict, dict, dict, dict]:
        """Play one move (turn-based: the mover's action counts) or one simultaneous round.

        Args:
            actions: an action per agent still playing.

        Returns:
            ``(obs, rewards, terminations, truncations, infos)``, dicts keyed by agent; at the game's end both
            terminations (or truncations) are True and ``infos[agent]['result']`` is ``'win'``, ``'draw'`` or
            ``'loss'``.
        """
        raise NotImplementedError

    def close(self) -> None:
        pass


# -- the vectorised API ------------------------------------------------------------------------

class VecBattleEnv(Closeable):
    """What every vectorised battle env shares: argument checks, seeding, action checks, life cycle.

    A subclass sets ``observation_space``, ``action_space`` and ``turn_based`` (a game with ``roles``:
    ``roles``, ``observation_spaces`` and ``action_spaces`` instead of the first two) and implements
    ``_reset(seed, reseed) -> BattleStep`` and ``_step(checked_actions) -> BattleStep``.
    """

    is_vectorised = True
    num_seats = NUM_SEATS
    turn_based = False
    #: one role name per seat, or None: a symmetric game (every seat has the spaces below)
    roles: Optional[Tuple[str, ...]] = None
    #: the seats' rewards need not oppose (both may gain): a game's ``result`` is then the sign of the difference
    #: of the seats' returns, and check-env checks it against that rather than against each seat's sign
    general_sum = False
    # Every seat's in a symmetric game, set by the subclass; None in a game with roles (read the per-seat tuples).
    observation_space: spaces.Space
    action_space: spaces.Space
    _seat_spaces: Tuple[Tuple[spaces.Space, ...], Tuple[spaces.Space, ...]] = ((), ())

    @property
    def observation_spaces(self) -> Tuple[spaces.Space, ...]:
        """One observation space per seat (a symmetric game: its one space, repeated)."""
        if self.roles is None:
            return (self.observation_space,) * self.num_seats
        return self._seat_spaces[0]

    @observation_spaces.setter
    def observation_spaces(self, value: Sequence[spaces.Space]) -> None:
        self._seat_spaces = (tuple(value), self._seat_spaces[1])

    @property
    def action_spaces(self) -> Tuple[spaces.Space, ...]:
        """One action space per seat (a symmetric game: its one space, repeated)."""
        if self.roles is None:
            return (self.action_space,) * self.num_seats
        return self._seat_spaces[1]

    @action_spaces.setter
    def action_spaces(self, value: Sequence[spaces.Space]) -> None:
        self._seat_spaces = (self._seat_spaces[0], tuple(value))

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
        """Start a new game in every env.

        Args:
            seed: reseeds the env's numpy Generator; None on the first reset uses the constructor's seed, and
                on later resets continues the Generator (as the automatic resets do).

        Returns:
            The first :class:`BattleStep` of the new games.

        Raises:
            EnvError: the env is closed, or ``seed`` is not an int >= 0 or None.
        """
        self._check_open()
        _check_seed(seed, self.label, 'reset(seed)')
        reseed = seed is not None or not self._seeded
        if seed is None and not self._seeded:
            seed = self.seed
            self._check_seat_spaces()
        self._reset_needed_because = 'the last reset() failed'
        step = self._reset(seed, reseed)
        self._remember(step)
        self._seeded = True
        self._reset_needed_because = None
        return step

    def step(self, actions: Union[np.ndarray, Sequence[np.ndarray]]) -> BattleStep:
        """Play one move (or one simultaneous round) in every game; finished games restart.

        Args:
            actions: ``[num_envs, 2]`` integers (column = seat; send 0 for a seat not to move), or for ``Box``
                actions floats ``[num_envs, 2, *action_shape]``, clipped to the box; in a game with roles, one array per
                seat, ``actions[s]`` ``[num_envs, *action_shape_s]``.

        Returns:
            The :class:`BattleStep` after the move: a finished game's ``final_obs`` and ``result``, and the
            next game's first ``obs``.

        Raises:
            EnvError: an illegal action of a seat to move, a wrong shape or dtype (before any game changes),
                or no successful :meth:`reset` since the env was built or a step failed.
        """
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

    def _check_seat_spaces(self) -> None:
        """A game with roles: a role per seat, a space per seat, and seats of one role with the same spaces."""
        self.roles = check_roles(self.roles, self.num_seats, self.label)
        if self.roles is None:
            return
        obs_spaces, act_spaces = seat_spaces(self)
        if len(obs_spaces) != self.num_seats or len(act_spaces) != self.num_seats:
            raise EnvError(f'{self.label}: a game with roles {self.roles} has {len(obs_spaces)} observation and '
                           f'{len(act_spaces)} action spaces; expected one per seat ({self.num_seats})')
        for s, role in enumerate(self.roles):
            first = self.roles.index(role)
            if (obs_spaces[s], act_spaces[s]) != (obs_spaces[first], act_spaces[first]):
                raise EnvError(f'{self.label}: seats {first} and {s} share the role {role!r} but not their spaces '
                               f'({obs_spaces[first]}, {act_spaces[first]} against {obs_spaces[s]}, {act_spaces[s]}); '
                               f'expected the same spaces for the seats of one role')

    def _remember(self, step: BattleStep) -> None:
        """Keep what the next actions are checked against; copies, as the caller owns ``step``."""
        self._mask = copy_seats(step.action_mask)
        self._to_move = step.to_move.copy()

    def _check_actions(self, actions):
        """``actions`` as an int64 ``[B, 2]`` array, with seats not to move set to 0; raises on illegal ones.
        A game with roles: a list of one checked array per seat."""
        if self.roles is not None:
            return self._check_seat_actions(actions)
        batch = np.asarray(actions)
        if is_continuous(self.action_space):
            return self._check_box_actions(batch)
        expected_shape = (self.num_envs, NUM_SEATS)
        if batch.shape != expected_shape:
            raise EnvError(f'{self.label}: actions of shape {batch.shape}; expected shape {expected_shape} '
                           f'(num_envs, seats) with one action per seat (0 for a seat not to move)')
        if batch.dtype.kind not in 'iu':
            raise EnvError(f'{self.label}: actions of dtype {batch.dtype}; expected integers '
                           f'(indices into {self.action_space!r})')
        mask, to_move = self._mask, self._to_move
        num_actions = int(cast(spaces.Discrete, self.action_space).n)
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

    def _check_box_actions(self, batch: np.ndarray) -> np.ndarray:
        """``Box`` actions as a new float32 ``[B, 2, *shape]`` array clipped to the bounds, seats not to move 0."""
        space = cast(spaces.Box, self.action_space)
        expected_shape = (self.num_envs, NUM_SEATS) + tuple(space.shape)
        if batch.shape != expected_shape:
            raise EnvError(f'{self.label}: actions of shape {batch.shape}; expected shape {expected_shape} '
                           f'(num_envs, seats, *action_shape) for {space!r}')
        return clip_box_actions(batch, space, self._to_move, self.label, self.agents)

    def _check_seat_actions(self, actions) -> List[np.ndarray]:
        """A game with roles: ``actions[s]`` checked against seat s's own space, as new arrays (seats not to move
        0, ``Box`` actions clipped to the seat's bounds)."""
        S, roles = self.num_seats, cast(Tuple[str, ...], self.roles)
        if not isinstance(actions, (tuple, list)) or len(actions) != S:
            raise EnvError(f'{self.label}: actions of type {type(actions).__name__}; expected a tuple or list of '
                           f'{S} arrays, one per seat (roles {self.roles})')
        checked = []
        for s, (seat_actions, space) in enumerate(zip(actions, self.action_spaces)):
            batch = np.asarray(seat_actions)
            shape, _ = action_layout(space)
            to_move = self._to_move[:, s]
            where = f'{self.label}: seat {s} ({self.agents[s]}, role {roles[s]!r})'
            if batch.shape != (self.num_envs,) + shape:
                raise EnvError(f'{where}: actions of shape {batch.shape}; expected shape {(self.num_envs,) + shape} '
                               f'(num_envs, *action_shape) for {space!r}')
            if is_continuous(space):
                if batch.dtype.kind not in 'iuf':
                    raise EnvError(f'{where}: actions of dtype {batch.dtype}; expected numbers in {space!r}')
                movers = to_move.reshape((-1,) + (1,) * len(shape))
                bad = ~np.isfinite(batch) & movers if batch.dtype.kind == 'f' else np.zeros(batch.shape, bool)
                if bad.any():
                    env = int(np.argwhere(bad)[0][0])
                    raise EnvError(f'{where}: env {env} played action {batch[env].tolist()}; expected finite numbers '
                                   f'in {space!r}')
                box = cast(spaces.Box, space)
                clipped = np.minimum(np.maximum(batch, box.low), box.high).astype(np.float32)
                checked.append(np.where(movers, clipped, np.float32(0.0)))
                continue
            if batch.dtype.kind not in 'iu':
                raise EnvError(f'{where}: actions of dtype {batch.dtype}; expected integers (indices into {space!r})')
            batch = np.where(to_move, batch.astype(np.int64), 0)
            in_range = (batch >= 0) & (batch < mask_width(space))
            legal = in_range & self._mask[s][np.arange(self.num_envs), np.where(in_range, batch, 0)]
            illegal = to_move & ~legal
            if illegal.any():
                env = int(np.flatnonzero(illegal)[0])
                raise EnvError(f'{where}: env {env} played {"illegal" if in_range[env] else "out of range"} action '
                               f'{int(batch[env])}; legal actions there: {np.flatnonzero(self._mask[s][env]).tolist()}')
            checked.append(batch)
        return checked

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

    The fast path for a game of your own: no Python loop over games. A registered subclass sets
    ``observation_space``, ``action_space`` and ``turn_based`` in its constructor, keeps its randomness in
    ``self.np_random`` and implements three array functions (the base class does the checks, the seeding and
    the automatic restart of finished games):

    * ``_reset_games(rows)``: a new game in the games ``rows`` (an int array);
    * ``_advance(actions) -> (reward, terminated, truncated, result)``: one step of every game, with
      ``actions`` already checked (``[B, 2]`` int64, or float32 ``[B, 2, *shape]`` for a ``Box``), and
      ``reward`` ``[B, 2]`` float32, ``terminated`` and ``truncated`` ``[B]`` bool, ``result`` ``[B, 2]`` int8;
    * ``_observe(rows) -> (obs, action_mask, to_move)`` of the games ``rows``: ``[R, 2, *obs_shape]``,
      ``[R, 2, A]`` bool and ``[R, 2]`` bool.

    A game with ``roles`` sets ``roles``, ``observation_spaces`` and ``action_spaces``; its ``actions`` are a list of
    one checked array per seat, and ``_observe`` gives ``obs`` and ``action_mask`` as tuples of one array per seat
    (``[R, *obs_shape_s]``, ``[R, A_s]``).

    Args:
        cfg: the run's ``env`` section, completed from the registered class's :meth:`default_config`.
        num_envs: games played side by side (B).
        seed: the seed of ``self.np_random`` at the first :meth:`reset` (None: fresh entropy).
    """

    #: BOT_REGISTRY names of the bots that play this game (e.g. evaluation opponents)
    reference_bots: Tuple[str, ...] = ('random',)
    config_constraints = BATTLE_ENV_CONSTRAINTS

    @classmethod
    def default_config(cls) -> dict:
        return battle_env_defaults()

    def __init__(self, cfg: Optional[Mapping], num_envs: int, seed: Optional[int] = None) -> None:
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
                          np.zeros((self.num_envs, NUM_SEATS), np.int8), copy_seats(obs))

    def _step(self, actions: np.ndarray) -> BattleStep:
        reward, terminated, truncated, result = self._advance(actions)
        obs, mask, to_move = self._observe(self._all_games)
        final_obs = copy_seats(obs)
        finished = np.flatnonzero(terminated | truncated)
        if finished.size:
            self._reset_games(finished)
            if self.roles is None:
                obs[finished], mask[finished], to_move[finished] = self._observe(finished)
            else:
                new_obs, new_mask, to_move[finished] = self._observe(finished)
                for s in range(self.num_seats):
                    obs[s][finished], mask[s][finished] = new_obs[s], new_mask[s]
        return BattleStep(obs, mask, to_move, reward, terminated, truncated, result, final_obs)

    def _reset_games(self, rows: np.ndarray) -> None:
        raise NotImplementedError

    def _advance(self, actions: np.ndarray):
        raise NotImplementedError

    def _observe(self, rows: np.ndarray):
        raise NotImplementedError

    def __repr__(self) -> str:
        return f'{type(self).__name__}(num_envs={getattr(self, "num_envs", "?")}, {getattr(self, "label", "")})'


def _check_seed(seed, label: str, what: str) -> None:
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise EnvError(f'{label}: {what} must be an int >= 0 or None, got {seed!r}')
