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
  to their returns); each seat learns from its own returns, so a general-sum game is trained as it is;
* the **result** the league records (its payoff, ratings and PFSP read it) is decided by the returns
  alone: at the end the seat with the higher return wins, equal returns draw. For a zero-sum game that
  is the sign of each seat's return; for a general-sum game (OpenSpiel's ``sheriff``) it is the sign of
  the difference of the two returns, "who did better in this game", which is what a league of two
  sides can compare (a sheriff that lets an honest smuggler pass, both at 0, draws), and the env says so
  (``general_sum``: check-env then checks each result against the difference of the returns);
* no game is truncated: OpenSpiel games end by their rules.

Options: ``game`` (a name from ``pyspiel.registered_names()``, optionally with parameters in the
string, as ``'leduc_poker(players=2)'``), ``game_params`` (a dict passed to ``load_game``) and
``roles``.

**Roles.** ``roles=['smuggler', 'sheriff']`` (one name per seat, seat 0 first, which is OpenSpiel's
player 0) declares a game whose seats have different jobs: each role becomes a league category with
its own players, network, learner and population (see ``docs/concepts/roles.md``), and the env
has per-seat spaces (``observation_spaces``, ``action_spaces``). Any two-player game can be declared
so; without ``roles`` one policy plays either seat. Both seats keep the game's *common* spaces: the
information-state tensor (the same shape for both players in OpenSpiel) and ``Discrete`` over all of
the game's distinct actions, each seat's legal ones in its mask. The alternative, a compact action
space per role, would need a map from each role's actions to OpenSpiel's action ids, which only a
walk of the whole game tree can find for an arbitrary game; with the common space an action is the
same number in the env, in a policy's output and in OpenSpiel's exact analysis, and a role only pays
a few never-chosen logits of its network (sheriff's smuggler never plays the sheriff's two).
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
from sparring.worker.env.battle_step import check_roles
from sparring.worker.env.errors import EnvError


def _game_name(value) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"expected an OpenSpiel game name such as 'kuhn_poker' or 'connect_four', got {value!r}")


def _role_names(value) -> None:
    if isinstance(value, (list, tuple)) and not value:
        return
    try:
        check_roles(value, NUM_SEATS, 'roles')
    except EnvError as err:
        raise ConfigError(f"{err}; expected [] (a symmetric game) or two different role names, seat 0's first "
                          f"(e.g. ['smuggler', 'sheriff'])") from None


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
            roles=[],  # one role name per seat (e.g. ['smuggler', 'sheriff']): a league category each; []: symmetric
        )

    config_constraints = dict(BATTLE_ENV_CONSTRAINTS, game=_game_name, roles=_role_names)

    @classmethod
    def exact_analysis(cls, env_cfg):
        """Exact evaluation over the whole game tree: of one policy playing both seats in a small two-player
        zero-sum game (Kuhn, Leduc, ...), or with ``roles`` of a pair of role policies in any small two-player game,
        general-sum included (:class:`~sparring.dizoo.openspiel.role_analysis.OpenSpielRoleAnalysis`)."""
        if env_cfg.get('roles'):
            from sparring.dizoo.openspiel.role_analysis import OpenSpielRoleAnalysis
            return OpenSpielRoleAnalysis(env_cfg['game'], env_cfg.get('game_params') or None, tuple(env_cfg['roles']))
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
        self.general_sum = self.game.get_type().utility == require_pyspiel().GameType.Utility.GENERAL_SUM
        self.view = SeatView(self.game)
        observation_space = spaces.Box(-np.inf, np.inf, self.view.shape, np.float32)
        self.num_actions = int(self.game.num_distinct_actions())
        action_space = spaces.Discrete(self.num_actions)
        if self.cfg.roles:  # the common spaces, per seat (see the module docstring)
            self.roles = tuple(self.cfg.roles)
            self.observation_spaces = (observation_space,) * NUM_SEATS
            self.action_spaces = (action_space,) * NUM_SEATS
            self.observation_space = self.action_space = None  # type: ignore[assignment]  # per seat instead
        else:
            self.observation_space, self.action_space = observation_space, action_space
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

    def _advance(self, actions):
        if self.roles is not None:  # one array per seat
            actions = np.stack(actions, axis=1)
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
        # A game with roles gives one array per seat: seat-major, so that each seat's is contiguous.
        seat_major = self.roles is not None
        obs = np.empty(((NUM_SEATS, n) if seat_major else (n, NUM_SEATS)) + self.view.shape, np.float32)
        mask = np.zeros((NUM_SEATS, n, self.num_actions) if seat_major else (n, NUM_SEATS, self.num_actions), bool)
        flat = obs.reshape(obs.shape[:2] + (self.view.size,))
        seat_rows = flat.swapaxes(0, 1) if seat_major else flat  # [n, seat, size] either way
        mask_rows = mask.swapaxes(0, 1) if seat_major else mask
        to_move = np.zeros((n, NUM_SEATS), bool)
        write = self.view.write
        for i, j in enumerate(rows.tolist()):
            state = self.states[j]
            write(state, 0, seat_rows[i, 0])
            write(state, 1, seat_rows[i, 1])
            if state.is_terminal():
                continue  # a finished game: nobody moves (the env restarts it right after)
            player = state.current_player()
            if player not in (0, 1):
                raise EnvError(f'{self.label}: game {j} is at a node of player {player} ({state}); expected seat '
                               f'0 or 1 to move after chance nodes are resolved')
            to_move[i, player] = True
            mask_rows[i, player, state.legal_actions()] = True
            self._mover[j] = player
        if seat_major:
            return (obs[0], obs[1]), (mask[0], mask[1]), to_move
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
        """Game ``index`` as OpenSpiel prints it (hidden information included), and the seat to move."""
        state = self.states[index]
        mover = 'game over' if state.is_terminal() else f'{self.agents[state.current_player()]} to move'
        return f'{state}\n({mover})'

    def render_seat(self, index: int, seat: int) -> str:
        """Game ``index`` as ``seat`` knows it, for a person playing that seat (``sparring play``): in a game with
        hidden information the seat's information state (its own cards, the moves it saw), the whole state once the
        game is over; in a perfect-information game, :meth:`render`."""
        state = self.states[index]
        game_type = self.game.get_type()
        if (state.is_terminal() or game_type.information == require_pyspiel().GameType.Information.PERFECT_INFORMATION
                or not game_type.provides_information_state_string):
            return self.render(index)
        return (f'what {self.agents[seat]} knows: {state.information_state_string(seat)}\n'
                f'({self.agents[state.current_player()]} to move)')
