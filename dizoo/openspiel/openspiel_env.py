"""Any two-player turn-based OpenSpiel game as a vectorised battle env: ``dict(type='openspiel', game='kuhn_poker')``.

The env keeps one ``pyspiel.State`` per game and steps them in a loop (OpenSpiel's C++ does the
game logic; the loop only moves numbers in and out):

* chance nodes are resolved at once, by sampling OpenSpiel's chance outcome probabilities with the
  env's seeded numpy Generator, so the policies only ever see decision nodes;
* a seat observes ``information_state_tensor(seat)`` (``observation_tensor(seat)`` when the game has
  no information-state tensor), from its own perspective, in the tensor's own shape; a perfect-
  information game, whose board tensor is the same for both seats, gets one more plane saying whether
  the seat observing is to move (:class:`~sparring.dizoo.openspiel.spiel.SeatView`);
* the seat to move is ``current_player()``; its action mask holds its legal actions, the other seat's
  row is all False;
* the reward of a step is the change of ``state.returns()`` (so games with intermediate rewards sum
  to their returns); at the end the seat with the higher return wins, equal returns draw (for
  zero-sum games: the sign of each seat's return);
* no game is truncated: OpenSpiel games end by their rules.

Options: ``game`` (a name from ``pyspiel.registered_names()``, optionally with parameters in the
string, as ``'leduc_poker(players=2)'``) and ``game_params`` (a dict passed to ``load_game``).
:meth:`OpenSpielBattleEnv.game_states` hands copies of the true states to bots that search them.
"""
from __future__ import annotations

from typing import List, Mapping, Optional

import numpy as np
from gymnasium import spaces

from sparring.config.schema import ConfigError
from sparring.dizoo.openspiel.spiel import (SeatView, check_game_params, load_two_player_game, require_pyspiel,
                                            resolve_chance)
from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.battle_api import BATTLE_ENV_CONSTRAINTS, NUM_SEATS, NativeVecBattleEnv, battle_env_defaults
from sparring.worker.env.errors import EnvError


def _game_name(value) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"expected an OpenSpiel game name such as 'kuhn_poker' or 'connect_four', got {value!r}")


@ENV_REGISTRY.register('openspiel')
class OpenSpielBattleEnv(NativeVecBattleEnv):
    """B games of one OpenSpiel game (see the module docstring)."""

    turn_based = True
    # 'openspiel_mcts' plays the perfect-information games too; it is not listed here because the
    # class does not know which game a config will name.
    reference_bots = ('random',)

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            battle_env_defaults(),
            game='',  # the OpenSpiel game's name, as pyspiel.load_game takes it ('kuhn_poker', 'leduc_poker', ...)
            game_params={},  # the game's parameters, e.g. {'players': 2}
        )

    config_constraints = dict(BATTLE_ENV_CONSTRAINTS, game=_game_name)

    @classmethod
    def exact_analysis(cls, env_cfg):
        """Exact evaluation over the whole game tree (small two-player zero-sum games: Kuhn, Leduc, ...)."""
        from sparring.dizoo.openspiel.exploitability import OpenSpielAnalysis
        return OpenSpielAnalysis(env_cfg['game'], env_cfg.get('game_params') or None)

    @classmethod
    def validate_config(cls, section: dict) -> None:
        # Only what needs no OpenSpiel: the name itself is checked when the env is built.
        check_game_params(section['game_params'], 'config key "env.game_params"')

    def __init__(self, cfg: Optional[Mapping], num_envs: int, seed: Optional[int] = None) -> None:
        super().__init__(cfg, num_envs, seed)
        require_pyspiel()
        self.game = load_two_player_game(self.cfg.game, self.cfg.game_params, label='config key "env.game"')
        self.label = f'battle env \'openspiel\' ({self.game})'
        self.view = SeatView(self.game)
        self.observation_space = spaces.Box(-np.inf, np.inf, self.view.shape, np.float32)
        self.num_actions = int(self.game.num_distinct_actions())
        self.action_space = spaces.Discrete(self.num_actions)
        self.states: List = [None] * self.num_envs
        self._returns = [[0.0, 0.0] for _ in range(self.num_envs)]  # after the last step: rewards are changes
        self._mover = np.zeros(self.num_envs, np.int64)  # the seat to move in each game

    # -- the NativeVecBattleEnv hooks ----------------------------------------------------------

    def _reset_games(self, rows: np.ndarray) -> None:
        for j in rows.tolist():
            state = self.game.new_initial_state()
            self._resolve_chance(state)
            if state.is_terminal():
                raise EnvError(f'{self.label}: a new game ended before any player moved ({state}); expected a game '
                               f'with at least one decision')
            self.states[j] = state
            self._returns[j] = state.returns()

    def _advance(self, actions: np.ndarray):
        movers_actions = actions[self._all_games, self._mover].tolist()
        rewards, terminated, seat_0_result = [], [], []
        for j, state in enumerate(self.states):
            state.apply_action(movers_actions[j])
            self._resolve_chance(state)
            returns = state.returns()
            before = self._returns[j]
            rewards.append((returns[0] - before[0], returns[1] - before[1]))
            self._returns[j] = returns
            over = state.is_terminal()
            terminated.append(over)
            seat_0_result.append((returns[0] > returns[1]) - (returns[0] < returns[1]) if over else 0)
        seat_0 = np.array(seat_0_result, np.int8)
        result = np.stack([seat_0, -seat_0], axis=1)
        return (np.array(rewards, np.float32), np.array(terminated, bool), np.zeros(self.num_envs, bool), result)

    def _observe(self, rows: np.ndarray):
        n = len(rows)
        obs = np.empty((n, NUM_SEATS) + self.view.shape, np.float32)
        flat = obs.reshape(n, NUM_SEATS, self.view.size)
        mask = np.zeros((n, NUM_SEATS, self.num_actions), bool)
        to_move = np.zeros((n, NUM_SEATS), bool)
        write = self.view.write
        for i, j in enumerate(rows.tolist()):
            state = self.states[j]
            write(state, 0, flat[i, 0])
            write(state, 1, flat[i, 1])
            if state.is_terminal():
                continue  # a finished game: nobody moves (the env restarts it right after)
            player = state.current_player()
            if player not in (0, 1):
                raise EnvError(f'{self.label}: game {j} is at a node of player {player} ({state}); expected seat '
                               f'0 or 1 to move after chance nodes are resolved')
            to_move[i, player] = True
            mask[i, player, state.legal_actions()] = True
            self._mover[j] = player
        return obs, mask, to_move

    def _resolve_chance(self, state) -> None:
        """Sample chance outcomes with the env's Generator until a player moves or the game ends."""
        resolve_chance(state, self.np_random)

    # -- access to the true game -----------------------------------------------------------------

    def game_states(self, env_indices=None) -> list:
        """Copies (``pyspiel.State.clone()``) of the current state of the games ``env_indices``
        (an int sequence or array; all games when None), in that order, for bots that search them."""
        self._check_open()
        if self.states[0] is None:
            raise EnvError(f'{self.label}: game_states() before reset(); call reset() first')
        indices = np.arange(self.num_envs) if env_indices is None else np.asarray(env_indices)
        if indices.ndim != 1 or (indices.size and indices.dtype.kind not in 'iu'):
            raise EnvError(f'{self.label}: game_states({env_indices!r}); expected a 1-D sequence of env indices')
        if indices.size and (indices.min() < 0 or indices.max() >= self.num_envs):
            raise EnvError(f'{self.label}: game_states({env_indices!r}) asks for an env outside 0..{self.num_envs - 1}')
        return [self.states[j].clone() for j in indices.tolist()]

    def render(self, index: int = 0) -> str:
        """Game ``index`` as OpenSpiel prints it, and the seat to move."""
        state = self.states[index]
        mover = 'game over' if state.is_terminal() else f'{self.agents[state.current_player()]} to move'
        return f'{state}\n({mover})'
