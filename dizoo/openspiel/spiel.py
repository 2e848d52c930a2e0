"""OpenSpiel games as sparring sees them: the optional import, loading and checking a game, and what a seat observes.

Everything that touches ``pyspiel`` imports it through :func:`require_pyspiel`, at call time, so
that ``sparring.dizoo`` imports (and configs naming ``type='openspiel'`` compile) without OpenSpiel
installed; the ImportError with the install command comes only when a game is actually loaded.

A seat observes ``information_state_tensor(seat)`` when the game provides one (perfect recall:
what an imperfect-information game needs) and ``observation_tensor(seat)`` otherwise. The env
and the exploitability code both read it through :class:`SeatView`, so a policy is evaluated on
exactly the inputs it was trained on.
"""
from __future__ import annotations

import difflib
from typing import Any, Mapping, Optional, Tuple

import numpy as np

from sparring.config.schema import ConfigError
from sparring.config.optional import require

INSTALL_HINT = 'pip install sparring[openspiel]'
# OpenSpiel game parameters are typed scalars (GameParameter holds bool, int, double or string).
PARAM_TYPES = (bool, int, float, str)



def require_pyspiel():
    """The ``pyspiel`` module, or an ImportError that says how to install it."""
    return require('pyspiel', 'OpenSpiel games', 'openspiel', package='open_spiel')


def check_game_params(params: Any, label: str) -> dict:
    """``params`` as a dict of OpenSpiel parameter values; raises :class:`ConfigError` otherwise."""
    if not isinstance(params, Mapping):
        raise ConfigError(f'{label}: expected a dict of game parameters, got {type(params).__name__} {params!r}')
    for key, value in params.items():
        if not isinstance(key, str) or not isinstance(value, PARAM_TYPES):
            raise ConfigError(f'{label}: parameter {key!r} = {value!r} of type {type(value).__name__}; expected '
                              f'str keys and bool, int, float or str values (OpenSpiel game parameters)')
    return dict(params)


def load_two_player_game(game: Any, params: Optional[Mapping] = None, label: str = 'openspiel game'):
    """A ``pyspiel.Game`` from a name (with optional ``params``) or a loaded game, checked to be a
    two-player, turn-based (sequential) game (:func:`load_game_of`)."""
    return load_game_of(game, params, label, players=2)


def load_game_of(game: Any, params: Optional[Mapping] = None, label: str = 'openspiel game',
                 players: Optional[int] = 2):
    """A ``pyspiel.Game`` from a name (with optional ``params``) or a loaded game, checked to be a
    turn-based (sequential) game of ``players`` players (None: any number from 2).

    Raises :class:`ConfigError` (a ValueError) naming the game and what was expected: an unknown
    name lists the closest registered names; bad parameters repeat OpenSpiel's message.
    """
    pyspiel = require_pyspiel()
    params = check_game_params(params or {}, f'{label} parameters')
    if isinstance(game, pyspiel.Game):
        if params:
            raise ConfigError(f'{label}: parameters {params} given with an already loaded game {game}; '
                              f'expected a game name to load with them')
        loaded = game
    elif isinstance(game, str) and game.strip():
        name = game.split('(', 1)[0].strip()  # 'kuhn_poker(players=2)' carries its parameters in the name
        known = pyspiel.registered_names()
        if name not in known:
            close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
            hint = f' Close names: {", ".join(close)}.' if close else ''
            raise ConfigError(f'{label}: unknown OpenSpiel game {name!r}.{hint} pyspiel.registered_names() '
                              f'lists all {len(known)} games.')
        try:
            loaded = pyspiel.load_game(game, params) if params else pyspiel.load_game(game)
        except pyspiel.SpielError as err:
            raise ConfigError(f'{label}: OpenSpiel cannot load {game!r} with parameters {params}: {err}') from None
    else:
        raise ConfigError(f'{label}: expected an OpenSpiel game name such as \'kuhn_poker\' or a pyspiel.Game, '
                          f'got {game!r}')
    check_supported_game(loaded, label, players)
    return loaded


def check_supported_game(game, label: str = 'openspiel game', players: Optional[int] = 2) -> None:
    """Raise :class:`ConfigError` unless ``game`` has ``players`` players (None: 2 or more) and sequential
    (turn-based) moves."""
    pyspiel = require_pyspiel()
    game_type = game.get_type()
    if players == 2 and game.num_players() != 2:
        raise ConfigError(f'{label}: {game} has {game.num_players()} players; expected exactly 2 (a battle is '
                          f'one seat against another; many games take a "players" parameter; env type '
                          f'\'openspiel_multiseat\' plays games of three or more)')
    if players is None and game.num_players() < 2:
        raise ConfigError(f'{label}: {game} has {game.num_players()} player(s); expected 2 or more')
    if game_type.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
        raise ConfigError(f'{label}: {game} has {game_type.dynamics.name.lower()} moves; expected a sequential '
                          f'(turn-based) game. A simultaneous-move game can be played in turns with '
                          f'game=\'turn_based_simultaneous_game(game={game_type.short_name}())\'')
    if not (game_type.provides_information_state_tensor or game_type.provides_observation_tensor):
        raise ConfigError(f'{label}: {game} provides neither an information-state tensor nor an observation '
                          f'tensor; expected one of them (the policy\'s input)')


def resolve_chance(state, rng: np.random.Generator) -> None:
    """Sample ``state``'s chance outcomes with ``rng`` until a player moves or the game ends."""
    while state.is_chance_node():
        outcomes = state.chance_outcomes()
        u = rng.random()
        chosen = outcomes[-1][0]  # where rounding leaves the probabilities short of u
        for action, probability in outcomes:
            u -= probability
            if u < 0.0:
                chosen = action
                break
        state.apply_action(chosen)


class SeatView:
    """What each seat of a game observes: the tensor's kind and shape, and fast ways to read it.

    Reading goes through an OpenSpiel *observer* (the game's ``make_observer`` for the same
    observation type, writing into a numpy buffer: several times cheaper than the list the state's
    tensor methods return) where the game offers one, else through those methods.

    A perfect-information game's observation tensor is the board, the same for both seats (OpenSpiel's
    tic-tac-toe and connect four), so a value head trained on both seats' observations would learn
    their average. Such a view appends one plane (a 1-D tensor: one entry) holding 1.0 where the seat
    observing is the one to move, else 0.0 (:attr:`turn_plane`).
    """

    def __init__(self, game) -> None:
        pyspiel = require_pyspiel()
        game_type = game.get_type()
        if game_type.provides_information_state_tensor:
            self.kind = 'information_state_tensor'
            self.shape: Tuple[int, ...] = tuple(game.information_state_tensor_shape())
            observation_type = pyspiel.IIGObservationType(perfect_recall=True)
        else:
            self.kind = 'observation_tensor'
            self.shape = tuple(game.observation_tensor_shape())
            observation_type = None  # the game's default observation
        self._tensor_size = int(np.prod(self.shape, dtype=np.int64))  # OpenSpiel's own tensor
        self._state_method = getattr(pyspiel.State, self.kind)
        self._observation = _make_observation(game, observation_type, self._tensor_size)
        self.turn_plane = (self.kind == 'observation_tensor'
                           and game_type.information == pyspiel.GameType.Information.PERFECT_INFORMATION)
        if self.turn_plane:  # one more channel (the first axis), or one more entry of a flat tensor
            self.shape = (self.shape[0] + 1,) + self.shape[1:]
        self.size = int(np.prod(self.shape, dtype=np.int64))

    def write(self, state, player: int, out: np.ndarray) -> None:
        """Write the flat tensor ``player`` observes in ``state`` into ``out`` (a float32 row of ``size``)."""
        tensor = out[:self._tensor_size]
        if self._observation is None:
            tensor[:] = self._state_method(state, player)
        else:
            self._observation.set_from(state, player)
            tensor[:] = self._observation.tensor
        if self.turn_plane:  # the last channel is the flat tensor's tail
            out[self._tensor_size:] = 1.0 if state.current_player() == player else 0.0

    def read(self, state, player: int) -> np.ndarray:
        """The tensor ``player`` observes in ``state``, float32 of :attr:`shape` (a new array)."""
        out = np.empty(self.size, np.float32)
        self.write(state, player, out)
        return out.reshape(self.shape)

    def __repr__(self) -> str:
        return f'SeatView({self.kind}, shape={self.shape})'


def _make_observation(game, observation_type, size: int):
    """OpenSpiel's observer of ``observation_type`` with a tensor of ``size`` floats, or None if the game has none."""
    try:
        from open_spiel.python.observation import make_observation
        observation = make_observation(game, observation_type)
    except (ImportError, RuntimeError, ValueError):
        # A game without a C++ observer for this type (or a build without the Python helpers):
        # the state's tensor methods always work, only slower.
        return None
    tensor = getattr(observation, 'tensor', None)
    if tensor is None or np.size(tensor) != size:
        return None
    return observation
