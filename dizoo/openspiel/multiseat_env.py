"""Any turn-based OpenSpiel game of two or more players as a game of S seats:
``dict(type='openspiel_multiseat', game='kuhn_poker', game_params=dict(players=3))``.

The same rules as the two-seat env :mod:`sparring.dizoo.openspiel.openspiel_env` (chance resolved at once with the
env's seeded Generator, each seat observes ``information_state_tensor(seat)``, the seat to move is
``current_player()``, rewards are the changes of ``state.returns()``), in the S-seat API of
:mod:`sparring.worker.env.multiseat_api`: a finished game ranks its seats by their returns (the highest first,
equal returns tied), which is what a league of S seats records.
"""
from __future__ import annotations

from typing import List, Mapping, Optional

import numpy as np
from gymnasium import spaces

from sparring.config.registry import ENV_REGISTRY
from sparring.config.schema import ConfigError
from sparring.dizoo.openspiel.spiel import SeatView, check_game_params, load_game_of, require_pyspiel, resolve_chance
from sparring.worker.env.errors import EnvError
from sparring.worker.env.multiseat_api import MultiSeatVecEnv, ranks_from_returns


def _game_name(value) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"expected an OpenSpiel game name such as 'kuhn_poker' or 'leduc_poker', got {value!r}")


@ENV_REGISTRY.register('openspiel_multiseat')
class OpenSpielMultiSeatEnv(MultiSeatVecEnv):
    """B games of one OpenSpiel game of S players (see the module docstring)."""

    action_space: spaces.Discrete  # a poker game's actions are indices

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            super().default_config(),
            game='',  # the OpenSpiel game's name, as pyspiel.load_game takes it ('kuhn_poker', 'leduc_poker', ...)
            game_params={},  # the game's parameters, e.g. {'players': 3}
        )

    config_constraints = dict(MultiSeatVecEnv.config_constraints, game=_game_name)

    @classmethod
    def exact_analysis(cls, env_cfg):
        """NashConv by OpenSpiel over the whole game tree (small zero-sum games: Kuhn and Leduc of 3 players)."""
        from sparring.dizoo.openspiel.exploitability import OpenSpielNashConv
        return OpenSpielNashConv(env_cfg['game'], env_cfg.get('game_params') or None)

    @classmethod
    def validate_config(cls, section: dict) -> None:
        check_game_params(section['game_params'], 'config key "env.game_params"')

    def __init__(self, cfg: Optional[Mapping], num_envs: int, seed: Optional[int] = None) -> None:
        super().__init__(cfg, num_envs, seed)
        require_pyspiel()
        self.game = load_game_of(self.cfg.game, self.cfg.game_params, label='config key "env.game"', players=None)
        self.label = f"multi-seat env 'openspiel_multiseat' ({self.game})"
        self.num_seats = self.game.num_players()
        self.view = SeatView(self.game)
        self.observation_space = spaces.Box(-np.inf, np.inf, self.view.shape, np.float32)
        self.action_space = spaces.Discrete(self.game.num_distinct_actions())
        self.states: List = [None] * self.num_envs
        self._returns = np.zeros((self.num_envs, self.num_seats))

    def _reset_games(self, rows: np.ndarray) -> None:
        for j in rows.tolist():
            state = self.game.new_initial_state()
            resolve_chance(state, self.np_random)
            if state.is_terminal():
                raise EnvError(f'{self.label}: a new game ended before any player moved ({state}); expected a game '
                               f'with at least one decision')
            self.states[j] = state
            self._returns[j] = state.returns()

    def _advance(self, actions: np.ndarray):
        B, S = self.num_envs, self.num_seats
        returns = np.empty((B, S))
        terminated = np.zeros(B, bool)
        for j, state in enumerate(self.states):
            state.apply_action(int(actions[j, state.current_player()]))
            resolve_chance(state, self.np_random)
            returns[j] = state.returns()
            terminated[j] = state.is_terminal()
        reward = (returns - self._returns).astype(np.float32)
        self._returns = returns
        rank = np.where(terminated[:, None], ranks_from_returns(returns), 0).astype(np.int8)
        return reward, terminated, np.zeros(B, bool), rank

    def _observe(self, rows: np.ndarray):
        n, S = len(rows), self.num_seats
        obs = np.empty((n, S) + self.view.shape, np.float32)
        flat = obs.reshape(n, S, self.view.size)
        mask = np.zeros((n, S, self.action_space.n), bool)
        to_move = np.zeros((n, S), bool)
        for i, j in enumerate(rows.tolist()):
            state = self.states[j]
            for seat in range(S):
                self.view.write(state, seat, flat[i, seat])
            if state.is_terminal():
                continue  # a finished game: nobody moves (the env restarts it right after)
            player = state.current_player()
            if not 0 <= player < S:
                raise EnvError(f'{self.label}: game {j} is at a node of player {player} ({state}); expected a seat '
                               f'in 0..{S - 1} to move after chance nodes are resolved')
            to_move[i, player] = True
            mask[i, player, state.legal_actions()] = True
        return obs, mask, to_move

    def game_states(self, env_indices=None) -> list:
        """Copies of the current states of the games ``env_indices`` (all when None), for bots that read them."""
        indices = range(self.num_envs) if env_indices is None else np.asarray(env_indices).tolist()
        return [self.states[j].clone() for j in indices]
