"""Fixed, non-learning opponents ("bots") behind the ``Policy`` interface, and the generic random bot.

A bot is built like a policy, ``Bot(cfg, observation_space, action_space, seed=0, env=None)``, where
``cfg`` holds keys of its ``default_config()`` (missing ones take the defaults) and ``env`` is the
run's ``env`` config section (the game's options, e.g. a board's ``rows``), kept as ``self.env_cfg``.
``act`` returns the chosen actions with zero log-probabilities and values; bots have no parameters
(``get_params() == {}``, ``version == 0``) and do not learn.

Conventions shared by every bot:

* Randomness (random play, tie-breaks) comes from a numpy Generator seeded with ``seed``, so a
  bot's games are reproducible. It is part of the bot's play, not exploration, so
  ``deterministic=True`` does not change it.
* ``action_mask`` rows that allow nothing belong to seats that are not to move (turn-based
  games); those rows get action 0, which the battle env ignores.
* ``action_kinds`` says which action spaces a bot plays: ``'discrete'`` (``Discrete(n)`` from 0,
  the default) and/or ``'continuous'`` (a ``Box``). A continuous game has no action mask: its
  bots are asked ``_choose(obs, None)`` and return float actions ``[N, *action_shape]``, which the
  env clips to the box.

Subclasses implement ``_choose(obs, action_mask) -> actions`` for rows with a legal action and
register under ``BOT_REGISTRY`` (``@BOT_REGISTRY.register('name')``); a config then names them
``'bot:name'``, with options in query form, ``'bot:name?depth=2&greedy=true'`` (:func:`parse_bot_ref`).
A subclass that overrides ``__init__`` takes and passes on the same arguments, and raises
``ValueError`` with one line naming what it expected where the game is not one it plays.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Tuple, cast

import gymnasium as gym
import numpy as np

from sparring.config.compile import merge_class_section
from sparring.config.schema import ConfigError
from sparring.config.registry import BOT_REGISTRY
from sparring.policy.base import ActOutput, Policy


def choose_best(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Index of the highest score in each row of ``scores`` ``[N, A]``, ties broken uniformly at random."""
    best = scores == scores.max(axis=1, keepdims=True)
    keys = np.where(best, rng.random(scores.shape), -1.0)
    return keys.argmax(axis=1)


ACTION_KINDS = ('discrete', 'continuous')


def action_kind(space: gym.Space) -> Optional[str]:
    """``'discrete'`` for ``Discrete(n)`` from 0, ``'continuous'`` for a ``Box``, else None (no bot plays it)."""
    if isinstance(space, gym.spaces.Discrete) and int(space.start) == 0:
        return 'discrete'
    if isinstance(space, gym.spaces.Box):
        return 'continuous'
    return None


class Bot(Policy):
    """Base class of fixed opponents: a subclass chooses actions in :meth:`_choose`.

    Parameters:
        cfg: the bot's options, keys of :meth:`default_config` (from a reference's ``?key=value`` part);
            missing keys take the defaults, unknown ones and wrong types raise :class:`ConfigError`.
        observation_space: one seat's observations, a ``Box``.
        action_space: ``Discrete(n)`` from 0, or a ``Box`` when ``action_kinds`` includes ``'continuous'``;
            another raises ``ValueError``.
        seed: the seed of the bot's own random generator, ``self.rng`` (random play, tie-breaks).
        env: the run's ``env`` config section, the game's options as configured (``--set env.rows=4``
            included), kept as ``self.env_cfg`` (``{}`` when the bot is built outside a run).

    Class attributes: ``action_kinds`` (the action spaces it plays, of ``ACTION_KINDS``; ``('discrete',)``
    by default), ``roles`` (in a game whose seats have roles, the roles it plays; None: any seat) and
    ``config_constraints`` (checks of its options, as a config section's).
    After construction: ``name`` (its registered name), ``cfg``, ``env_cfg``, ``rng``, ``continuous``,
    ``num_actions`` (``Discrete``) or ``action_shape`` (``Box``), ``obs_shape``.
    """

    config_constraints: dict = {}
    #: the action spaces this bot plays (ACTION_KINDS)
    action_kinds: Tuple[str, ...] = ('discrete',)
    #: in a game with roles, the roles this bot plays (it is built with that seat's spaces); None: any seat
    roles: Optional[Tuple[str, ...]] = None

    @classmethod
    def default_config(cls) -> dict:
        """The bot's options and their defaults (none for the base class)."""
        return {}

    def __init__(self, cfg: Optional[dict], observation_space: gym.Space, action_space: gym.Space,
                 seed: int = 0, env: Optional[Mapping[str, Any]] = None) -> None:
        name = getattr(type(self), 'registry_name', type(self).__name__)
        self.name = name
        self.env_cfg: Dict[str, Any] = dict(env or {})
        super().__init__(self._complete_config(cfg), observation_space, action_space, seed)
        kind = action_kind(action_space)
        if kind not in self.action_kinds:
            expected = ' or '.join({'discrete': 'Discrete(n) starting at 0', 'continuous': 'a Box'}[k]
                                   for k in self.action_kinds)
            raise ValueError(f'bot {name!r}: action space {action_space!r}; expected {expected}')
        if not isinstance(observation_space, gym.spaces.Box):
            raise ValueError(f'bot {name!r}: observation space {observation_space!r}; expected a Box')
        self.continuous = kind == 'continuous'
        # A Box game's actions: their shape; a Discrete game's: their number.
        self.action_shape: Tuple[int, ...] = tuple(cast(gym.spaces.Box, action_space).shape) if self.continuous else ()
        self.num_actions = 0 if self.continuous else int(cast(gym.spaces.Discrete, action_space).n)
        self.obs_shape = tuple(observation_space.shape)
        self.rng = np.random.default_rng(seed)

    @classmethod
    def _complete_config(cls, cfg: Optional[dict]) -> dict:
        """The bot's defaults with ``cfg`` merged in; unknown keys and wrong types raise :class:`ConfigError`."""
        name = getattr(cls, 'registry_name', cls.__name__)
        user = dict(cfg or {})
        if user.get('type', name) != name:
            raise ConfigError(f'bot {name!r}: config names type {user["type"]!r}; expected {name!r} or no type')
        user.pop('type', None)
        return merge_class_section(cls, user, f'bot.{name}', validate=False)

    # -- acting -------------------------------------------------------------------------------
    def act(self, obs: np.ndarray, state: Any = None, deterministic: bool = False,
            action_mask: Optional[np.ndarray] = None) -> ActOutput:
        obs = np.asarray(obs)
        if obs.shape[1:] != self.obs_shape or obs.ndim != len(self.obs_shape) + 1:
            raise ValueError(f'bot {self.name!r}: observations of shape {obs.shape}; expected (batch,) + '
                             f'{self.obs_shape}')
        n = len(obs)
        zeros = np.zeros(n, np.float32)
        if self.continuous:  # no mask: every action in the box is legal (and the env clips)
            actions = np.asarray(self._choose(obs, None), np.float32).reshape(n, *self.action_shape)
            return ActOutput(actions, zeros, zeros.copy(), None)
        if action_mask is None:
            mask = np.ones((n, self.num_actions), bool)
        else:
            mask = np.asarray(action_mask)
            if mask.shape != (n, self.num_actions) or mask.dtype != bool:
                raise ValueError(f'bot {self.name!r}: action_mask of shape {mask.shape} and dtype {mask.dtype}; '
                                 f'expected bool of shape {(n, self.num_actions)}')
        actions = np.zeros(n, np.int64)
        movers = mask.any(axis=1)
        if movers.all():
            actions[:] = self._choose(obs, mask)
        elif movers.any():
            actions[movers] = self._choose(obs[movers], mask[movers])
        return ActOutput(actions, zeros, zeros.copy(), None)

    def _choose(self, obs: np.ndarray, action_mask: Optional[np.ndarray]) -> np.ndarray:
        """The actions of a batch: what a subclass implements.

        Parameters:
            obs: ``[N, *obs_shape]``, the observations of seats that are to move (each from its own
                perspective); :meth:`act` leaves out the rows of seats that are not.
            action_mask: ``[N, A]`` bool, each row allowing at least one action (``Discrete`` games);
                None in a continuous game.

        Returns ``[N]`` action indices (``Discrete``), or ``[N, *action_shape]`` floats (``Box``, clipped by
        the env).
        """
        raise NotImplementedError

    def value(self, obs: np.ndarray, state: Any = None) -> np.ndarray:
        return np.zeros(len(obs), np.float32)

    # -- no learning, no parameters -----------------------------------------------------------
    def learn(self, chunk: Dict[str, np.ndarray], progress: float = 0.0) -> Dict[str, float]:
        raise NotImplementedError(f'bot {self.name!r} is a fixed opponent; it does not learn')

    def get_params(self) -> dict:
        return {}

    def set_params(self, params: dict, version: int) -> None:
        if params:
            raise ValueError(f'bot {self.name!r} has no parameters; got {sorted(params)}')

    def state_dict(self) -> Dict[str, Any]:
        return {'rng': self.rng.bit_generator.state}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.rng.bit_generator.state = state['rng']

    def __repr__(self) -> str:
        return f'{type(self).__name__}({self.name!r}, {self.cfg})'


def given_mask(action_mask: Optional[np.ndarray], bot: str) -> np.ndarray:
    """A ``Discrete`` game's legal actions, which :meth:`Bot.act` always hands a bot's ``_choose``."""
    if action_mask is None:
        raise ValueError(f'bot {bot!r}: _choose needs the legal actions of a Discrete game; got none')
    return action_mask


@BOT_REGISTRY.register('random')
class RandomBot(Bot):
    """Uniform over the legal actions of a ``Discrete`` space, or over a ``Box`` with finite bounds.

    Parameters (those of :class:`Bot`):
        cfg: no options; ``{}`` or None.
        observation_space: one seat's observations (a ``Box``; not read).
        action_space: ``Discrete(n)`` from 0, or a ``Box`` whose ``low`` and ``high`` are finite (an unbounded
            one raises ``ValueError``).
        seed: the seed of its draws: the same seed plays the same moves in the same positions.
        env: the run's ``env`` section (not needed: any game's legal moves are its mask's).
    """

    action_kinds = ACTION_KINDS

    def __init__(self, cfg, observation_space: gym.Space, action_space: gym.Space, seed: int = 0,
                 env: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__(cfg, observation_space, action_space, seed, env)
        if self.continuous:
            box = cast(gym.spaces.Box, action_space)
            if not (np.isfinite(box.low).all() and np.isfinite(box.high).all()):
                raise ValueError(f'bot {self.name!r}: action space {box!r} is unbounded; expected finite low and '
                                 f'high to draw uniformly between')
            self.low, self.high = box.low.astype(np.float64), box.high.astype(np.float64)

    def _choose(self, obs: np.ndarray, action_mask: Optional[np.ndarray]) -> np.ndarray:
        if action_mask is None:  # a continuous game (Bot.act passes a mask in every discrete one)
            return self.rng.uniform(self.low, self.high, (len(obs), *self.action_shape))
        return choose_best(action_mask.astype(np.float32), self.rng)

    def action_probabilities(self, obs: np.ndarray, action_mask: Optional[np.ndarray] = None,
                             state: Any = None) -> np.ndarray:
        if self.continuous:
            raise TypeError(f'bot {self.name!r}: action_probabilities of a continuous (Box) action space')
        if action_mask is None:
            action_mask = np.ones((len(obs), self.num_actions), bool)
        legal = np.asarray(action_mask, np.float64)
        return legal / legal.sum(axis=1, keepdims=True)


def parse_bot_ref(name_and_options: str) -> Tuple[str, Dict[str, Any]]:
    """``'connect_four_mcts?num_simulations=1000'`` -> ``('connect_four_mcts', {'num_simulations': 1000})``.

    A bot reference (after ``bot:``) may carry options in query form, so a league or an evaluation
    can name bots of several strengths. Values are read as JSON (numbers, true/false, quoted strings)
    and fall back to the raw text; the bot checks them against its ``default_config``.
    """
    name, _, query = name_and_options.partition('?')
    options: Dict[str, Any] = {}
    if query:
        for item in query.split('&'):
            key, sep, text = item.partition('=')
            if not sep or not key:
                raise ConfigError(f'bot reference {name_and_options!r}: option {item!r}; expected key=value '
                                  f'pairs joined by "&", e.g. connect_four_mcts?num_simulations=1000')
            try:
                options[key] = json.loads(text)
            except ValueError:
                options[key] = text
    return name, options
