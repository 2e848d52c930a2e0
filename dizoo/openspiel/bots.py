"""The OpenSpiel MCTS bot: OpenSpiel's own (C++) Monte-Carlo tree search with random-rollout evaluation.

It searches the true game state, so it plays perfect-information games only (tic-tac-toe,
connect four, ...): in a game with hidden information it would see the cards it must not. The
observation cannot be turned back into a state, so the bot declares ``needs_game_state = True``
and its ``act`` takes ``game_states``, the ``pyspiel.State`` of each game it moves in (a
battle evaluator passes ``env.game_states(indices)`` of an :class:`OpenSpielBattleEnv`).

Each search gets a fresh OpenSpiel bot seeded from the bot's numpy Generator, so a bot's play is
reproducible from its seed and its ``state_dict`` (the Generator's state) alone.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from sparring.config.schema import in_range
from sparring.dizoo.openspiel.spiel import require_pyspiel
from sparring.config.registry import BOT_REGISTRY
from sparring.policy.base import ActOutput
from sparring.policy.bot import Bot, given_mask


@BOT_REGISTRY.register('openspiel_mcts')
class OpenSpielMCTSBot(Bot):
    """UCT search (``num_simulations`` per move, exploration ``uct_c``) whose leaves are valued by
    ``rollouts`` uniformly random playouts; with ``solve`` proven wins and losses are backed up exactly
    (MCTS-Solver)."""

    #: the battle arena passes ``game_states=env.game_states(indices)`` to bots with this flag
    needs_game_state = True

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            num_simulations=1000,  # MCTS simulations per move
            uct_c=2.0,  # UCT's exploration constant
            rollouts=1,  # random rollouts that evaluate each new leaf
            solve=True,  # MCTS-Solver: back up proven wins and losses exactly
            max_memory_mb=1000,  # the search tree's memory limit
        )

    config_constraints = {
        'num_simulations': in_range(1, None),
        'uct_c': in_range(0.0, None),
        'rollouts': in_range(1, None),
        'max_memory_mb': in_range(1, None),
    }

    def __init__(self, cfg, observation_space, action_space, seed: int = 0, env=None) -> None:
        super().__init__(cfg, observation_space, action_space, seed, env)
        self.pyspiel = require_pyspiel()
        self._movers_states: Optional[list] = None  # the states of the rows ``_choose`` is given

    def act(self, obs: np.ndarray, state: Any = None, deterministic: bool = False,
            action_mask: Optional[np.ndarray] = None, game_states: Optional[Sequence] = None) -> ActOutput:
        """Like :meth:`Bot.act`; ``game_states[i]`` is the ``pyspiel.State`` of row ``i`` (required)."""
        if game_states is None:
            raise ValueError(f'bot {self.name!r} searches the true game state: act() needs game_states, one '
                             f'pyspiel.State per row (env.game_states(indices) of an openspiel battle env)')
        game_states = list(game_states)
        if len(game_states) != len(obs):
            raise ValueError(f'bot {self.name!r}: {len(game_states)} game_states for {len(obs)} observations; '
                             f'expected one state per row')
        # Bot.act hands _choose only the rows with a legal action (those of seats to move), in order.
        movers = np.ones(len(obs), bool) if action_mask is None else np.any(np.asarray(action_mask), axis=1)
        self._movers_states = [s for s, moves in zip(game_states, movers) if moves]
        try:
            return super().act(obs, state, deterministic, action_mask)
        finally:
            self._movers_states = None

    def _choose(self, obs: np.ndarray, action_mask: Optional[np.ndarray]) -> np.ndarray:
        action_mask = given_mask(action_mask, self.name)
        states = self._movers_states
        if states is None:
            raise ValueError(f'bot {self.name!r}: _choose is called by act(), which is given the game states')
        actions = np.empty(len(obs), np.int64)
        for i, game_state in enumerate(states):
            self._check_state(game_state, action_mask[i], i)
            actions[i] = self._search(game_state)
        return actions

    def _check_state(self, game_state, mask_row: np.ndarray, row: int) -> None:
        """The state must be a perfect-information decision node whose legal actions are the mask's."""
        if not isinstance(game_state, self.pyspiel.State):
            raise ValueError(f'bot {self.name!r}: game_states[{row}] is a {type(game_state).__name__}; expected a '
                             f'pyspiel.State')
        information = game_state.get_game().get_type().information
        if information != self.pyspiel.GameType.Information.PERFECT_INFORMATION:
            raise ValueError(f'bot {self.name!r} searches the true state, which in {game_state.get_game()} hides '
                             f'information from the players; expected a perfect-information game')
        if game_state.is_terminal() or game_state.is_chance_node():
            raise ValueError(f'bot {self.name!r}: game state of row {row} is not a player\'s decision ({game_state})')
        legal = game_state.legal_actions()
        if legal != np.flatnonzero(mask_row).tolist():
            raise ValueError(f'bot {self.name!r}: the game state of row {row} has legal actions {legal} but the '
                             f'action mask allows {np.flatnonzero(mask_row).tolist()}; game_states must be in the '
                             f'order of the observations')

    def _search(self, game_state) -> int:
        cfg, pyspiel = self.cfg, self.pyspiel
        seeds = self.rng.integers(2 ** 31, size=2).tolist()
        evaluator = pyspiel.RandomRolloutEvaluator(cfg['rollouts'], seeds[0])
        search = pyspiel.MCTSBot(game_state.get_game(), evaluator, cfg['uct_c'], cfg['num_simulations'],
                                 cfg['max_memory_mb'], cfg['solve'], seeds[1], False)
        return int(search.step(game_state))
