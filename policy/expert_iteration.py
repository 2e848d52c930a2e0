"""Expert iteration as a PPO objective, mixed into :class:`PPOPolicy`: the network learns from its own search.

``learn.objective='search'``. The player collects its moves by a search its network guides
(``battle.collect_search``); every chunk records the search's visit distribution at each move
(``search_policy``) and its value of the position for the player to move (``search_value``). The
policy's loss is the cross-entropy from the visits to the policy (:func:`F.search_target_loss`); the
value's target is the game's result (``gamma = gae_lambda = 1``), or with ``search_value_weight`` = w
the blend ``(1 - w) * result + w * search value`` where the player moved: the search's judgement is
less noisy than one game's ending (Oracle's study of AlphaZero on connect four averaged the two).

``search_window`` = N trains each update on the last N chunks together, as AlphaZero trains on a
window of recent games: a search's targets stay valid for older positions, where a policy-gradient
loss needs the current policy's own chunk. The window travels in the policy's state dict and moves
with the policy between devices.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable, Deque, Dict

import numpy as np

from sparring.config.schema import ConfigError, in_range
from sparring.policy import distributions as D
from sparring.policy import functional as F
from sparring.policy.device import Placement
from sparring.policy.ppo_host import PPOHost
from sparring.policy.train_batch import TrainBatch

# PPO's ``learn`` keys of this objective (checked against it by :func:`check_search_config`).
SEARCH_DEFAULTS = dict(
    search_window=1,  # each update trains on the last this many chunks (AlphaZero's window)
    search_value_weight=0.0,  # the share of the search's value in the value target where the player moved
)

SEARCH_CONSTRAINTS = {
    'learn.search_window': in_range(1, None),
    'learn.search_value_weight': in_range(0.0, 1.0),
}


def check_search_config(learn: dict) -> None:
    """The keys of this objective are refused under another one, which has no search to learn from."""
    if learn['search_window'] > 1 and learn['objective'] != 'search':
        raise ConfigError(f'config key "policy.learn.search_window": {learn["search_window"]} chunks at once is for '
                          f'objective=\'search\' (its targets stay valid for older positions); objective '
                          f'{learn["objective"]!r} needs the current chunk only: set 1')
    if learn['search_value_weight'] > 0 and learn['objective'] != 'search':
        raise ConfigError(f'config key "policy.learn.search_value_weight": {learn["search_value_weight"]} blends the '
                          f'value of the search a player collected its moves by, for objective=\'search\'; objective '
                          f'{learn["objective"]!r} has no search: set 0')


class SearchSteps(PPOHost):
    """The 'search' objective's window of recent chunks, value targets and policy loss."""

    def _init_search(self, learn: dict) -> None:
        self.learns_from_search = learn['objective'] == 'search'
        if self.learns_from_search and (self.continuous or self.recurrent):
            raise ConfigError('config key "policy.learn.objective": \'search\' needs discrete actions and a '
                              'feed-forward model (the search evaluates single positions)')
        self.search_window = int(learn['search_window'])
        self.search_value_weight = float(learn['search_value_weight'])
        self._reset_window()

    def _reset_window(self) -> None:
        self.recent_batches: Deque[TrainBatch] = deque(maxlen=self.search_window - 1)  # the window before this chunk

    def _search_returns(self, chunk: Dict[str, np.ndarray], returns: np.ndarray) -> np.ndarray:
        """The value targets of a chunk, the search's value blended in; refuses a chunk without the search's records."""
        if not self.learns_from_search:
            return returns
        if 'search_policy' not in chunk:
            raise ValueError('PPO.learn: objective \'search\' trains towards the chunk\'s search_policy, which it '
                             'lacks; collect with battle.collect_search')
        weight = self.search_value_weight
        if not weight:
            return returns
        if 'search_value' not in chunk:
            raise ValueError('PPO.learn: search_value_weight blends the chunk\'s search_value into the value '
                             'target, which it lacks; collect with battle.collect_search')
        moved = chunk['train_mask']  # a seat not to move was not searched: its target stays the result
        return np.where(moved, (1.0 - weight) * returns + weight * chunk['search_value'], returns)

    def _with_window(self, fresh: TrainBatch) -> TrainBatch:
        """The batch an update trains on: the window's chunks, then this one."""
        return TrainBatch.concat([*self.recent_batches, fresh]) if self.recent_batches else fresh

    def _remember(self, fresh: TrainBatch) -> None:
        if self.recent_batches.maxlen:
            self.recent_batches.append(fresh)

    def _search_loss(self, part: TrainBatch, head, mask, log_prob, old_log_prob):
        log_probs, target = self._acting_steps(part, D.categorical_log_probs(head, mask), part.steps('search_policy'))
        return F.search_target_loss(log_probs, target, log_prob, old_log_prob)

    def _move_window(self, placement: Placement) -> None:
        self.recent_batches = deque((placement.move(b) for b in self.recent_batches), maxlen=self.recent_batches.maxlen)

    def _window_state(self, host: Callable[[Any], Any]) -> Dict[str, Any]:
        return dict(recent_batches=[host(b.state_dict()) for b in self.recent_batches]) if self.recent_batches else {}

    def _load_window_state(self, state: Dict[str, Any]) -> None:
        """The window of a checkpoint (an empty window is not written)."""
        self.recent_batches.clear()
        self.recent_batches.extend(self.placement.move(TrainBatch.from_state_dict(b))
                                   for b in state.get('recent_batches', []))
