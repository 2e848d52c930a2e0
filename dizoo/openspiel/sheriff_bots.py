"""Scripted bots of OpenSpiel's ``sheriff``, one for each role, for a run that declares the roles
``['smuggler', 'sheriff']`` (``dict(type='openspiel', game='sheriff', roles=['smuggler', 'sheriff'])``).

The game: the smuggler first loads some illegal items (0 to ``max_items``), then over ``num_rounds`` rounds offers
a bribe (0 to ``max_bribe``) and the sheriff says whether it would inspect; only the last round's bribe and answer
count. Not inspected, the smuggler gains each item's value and pays the bribe to the sheriff; inspected, a smuggler
caught with items pays ``item_penalty`` per item to the sheriff, and a sheriff who finds none pays
``sheriff_penalty`` to the smuggler.

* ``sheriff_smuggler`` (role ``smuggler``): loads ``items`` items (-1: as many as the game allows) and always offers
  ``bribe``;
* ``sheriff_inspector`` (role ``sheriff``): inspects with probability ``inspect`` (1: always).

Both read only their legal actions (the action mask) and the game's parameters, in OpenSpiel's action ids: the
sheriff's answers first (0: let pass, 1: inspect), then the loads (``2 + items``), then the bribes
(``3 + max_items + bribe``).
"""
from __future__ import annotations

import numpy as np

from sparring.config.registry import BOT_REGISTRY
from sparring.config.schema import in_range
from sparring.policy.bot import Bot, given_mask

INSPECT = 1  # the sheriff's answer "inspect" (0: let pass)
FIRST_LOAD = 2  # the action of loading 0 items


def sheriff_parameters(env_cfg) -> dict:
    """The sheriff game's parameters in the run's ``env`` section (OpenSpiel's defaults for those not set);
    ValueError if the section names another game."""
    from sparring.dizoo.openspiel.spiel import load_two_player_game
    game = (env_cfg or {}).get('game') or 'sheriff'
    if game.split('(', 1)[0].strip() != 'sheriff':
        raise ValueError(f'the sheriff bots play OpenSpiel\'s game \'sheriff\'; the env plays {game!r}')
    loaded = load_two_player_game(game, (env_cfg or {}).get('game_params') or {}, label='sheriff bot')
    return dict(loaded.get_parameters())


class _SheriffBot(Bot):
    """What both bots share: the game's parameters, read from the run's ``env`` section."""

    def __init__(self, cfg, observation_space, action_space, seed: int = 0, env=None) -> None:
        super().__init__(cfg, observation_space, action_space, seed, env)
        try:
            self.params = sheriff_parameters(self.env_cfg)
        except ValueError as err:
            raise ValueError(f'bot {self.name!r}: {err}') from None
        self.first_bribe = FIRST_LOAD + int(self.params['max_items']) + 1


@BOT_REGISTRY.register('sheriff_smuggler')
class SmugglerBot(_SheriffBot):
    """The smuggler's bot: loads ``items`` items (-1: the most the game allows) and offers ``bribe`` every round."""

    roles = ('smuggler',)

    @classmethod
    def default_config(cls) -> dict:
        return dict(items=-1,  # illegal items to load (-1: max_items)
                    bribe=0)  # the bribe offered in every round (capped at max_bribe)

    config_constraints = {'items': in_range(-1, None), 'bribe': in_range(0, None)}

    def _actions(self, mask: np.ndarray) -> np.ndarray:
        """The load where loading is legal, else the bribe."""
        max_items, max_bribe = int(self.params['max_items']), int(self.params['max_bribe'])
        items = max_items if self.cfg['items'] < 0 else min(int(self.cfg['items']), max_items)
        load, offer = FIRST_LOAD + items, self.first_bribe + min(int(self.cfg['bribe']), max_bribe)
        return np.where(mask[:, FIRST_LOAD:self.first_bribe].any(axis=1), load, offer)

    def action_probabilities(self, obs, action_mask=None, state=None) -> np.ndarray:
        """One-hot on its choice where it is the smuggler's move (exact analysis reads this); uniform over the legal
        actions elsewhere (the sheriff's information states, which the smuggler never plays)."""
        mask = np.asarray(action_mask, bool)
        probs = mask / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        mine = mask[:, FIRST_LOAD:].any(axis=1)
        probs[mine] = 0.0
        probs[np.flatnonzero(mine), self._actions(mask[mine])] = 1.0
        return probs

    def _choose(self, obs: np.ndarray, action_mask) -> np.ndarray:
        mask = given_mask(action_mask, self.name)
        actions = self._actions(mask)
        legal = mask[np.arange(len(mask)), actions]
        if not legal.all():
            row = int(np.flatnonzero(~legal)[0])
            raise ValueError(f'bot {self.name!r}: action {int(actions[row])} is not legal here (legal: '
                             f'{np.flatnonzero(mask[row]).tolist()}); expected the smuggler\'s seat of sheriff')
        return actions


@BOT_REGISTRY.register('sheriff_inspector')
class InspectorBot(_SheriffBot):
    """The sheriff's bot: inspects with probability ``inspect``, whatever the bribe."""

    roles = ('sheriff',)

    @classmethod
    def default_config(cls) -> dict:
        return dict(inspect=1.0)  # probability of inspecting (else it lets the smuggler pass)

    config_constraints = {'inspect': in_range(0.0, 1.0)}

    def action_probabilities(self, obs, action_mask=None, state=None) -> np.ndarray:
        """``[1 - inspect, inspect]`` where it is the sheriff's answer (exact analysis reads this); uniform over the
        legal actions elsewhere (the smuggler's information states, which the sheriff never plays)."""
        mask = np.asarray(action_mask, bool)
        probs = mask / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        mine = ~mask[:, FIRST_LOAD:].any(axis=1)
        probs[mine] = 0.0
        probs[mine, INSPECT] = self.cfg['inspect']
        probs[mine, 1 - INSPECT] = 1.0 - self.cfg['inspect']
        return probs

    def _choose(self, obs: np.ndarray, action_mask) -> np.ndarray:
        mask = given_mask(action_mask, self.name)
        if mask[:, FIRST_LOAD:].any():
            raise ValueError(f'bot {self.name!r}: legal actions {np.flatnonzero(mask.any(axis=0)).tolist()} are the '
                             f'smuggler\'s; expected the sheriff\'s seat of sheriff (actions 0 and 1)')
        return (self.rng.random(len(obs)) < self.cfg['inspect']).astype(np.int64) * INSPECT
