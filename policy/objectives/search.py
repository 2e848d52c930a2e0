"""Expert iteration (``learn.objective='search'``): the network learns from the search it collects its moves by.

The player collects its moves by a search its network guides (``battle.collect_search``); every chunk
records the search's visit distribution at each move (``search_policy``) and its value of the position
for the player to move (``search_value``). The policy's loss is the cross-entropy from the visits to the
policy (:func:`sparring.policy.functional.search_target_loss`); the value's target is the game's result
(``gamma = gae_lambda = 1``), or with ``search_value_weight`` = w the blend ``(1 - w) * result + w *
search value`` where the player moved: the search's judgement is less noisy than one game's ending
(Oracle's study of AlphaZero on connect four averaged the two). Where the chunk carries a ``value_target``
(the solver's exact outcome near the end: ``battle.collect_search.exact_value_empty_cells``), that is the
target where the player moved and ``value_labelled`` says the solver labelled the position; likewise a
``policy_target`` (the solver's best moves: ``battle.collect_search.exact_policy_empty_cells``; or a win in one
or a forced block: ``tactics_weight``) replaces the visits as the policy's target where ``policy_labelled``, and a
``policy_weight`` weighs each step's policy loss (its weighted mean over the minibatch).

``search_window`` = N trains each update on the last N chunks together, as AlphaZero trains on a
window of recent games: a search's targets stay valid for older positions, where a policy-gradient
loss needs the current policy's own chunk. The window travels in the checkpoint (``recent_batches``)
and moves with the policy between devices. Discrete actions and a feed-forward model only.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Deque, Dict, Tuple

import numpy as np

from sparring.config.schema import ConfigError, in_range
from sparring.policy import distributions as D
from sparring.policy import functional as F
from sparring.policy.chunk_spec import ChunkField, ChunkSpaces
from sparring.policy.device import Placement
from sparring.policy.objectives.base import Minibatch, Objective, PolicyLoss, PolicyParts
from sparring.policy.train_batch import TrainBatch, present

# PPO's ``learn`` keys of this objective (refused under another one by ``check_config``).
SEARCH_DEFAULTS = dict(
    search_window=1,  # each update trains on the last this many chunks (AlphaZero's window)
    search_value_weight=0.0,  # the share of the search's value in the value target where the player moved
)

SEARCH_CONSTRAINTS = {
    'learn.search_window': in_range(1, None),
    'learn.search_value_weight': in_range(0.0, 1.0),
}


class SearchObjective(Objective):
    learns_from_search = True
    graph_safe = True

    def __init__(self, parts: PolicyParts) -> None:
        super().__init__(parts)
        if parts.continuous or parts.recurrent:
            raise ConfigError('config key "policy.learn.objective": \'search\' needs discrete actions and a '
                              'feed-forward model (the search evaluates single positions)')
        self.search_value_weight = float(self.learn['search_value_weight'])
        self.recent_batches: Deque[TrainBatch] = deque(maxlen=int(self.learn['search_window']) - 1)  # before this chunk

    @classmethod
    def check_config(cls, learn: dict) -> None:
        """The keys of this objective are refused under another one, which has no search to learn from."""
        if learn['search_window'] > 1 and learn['objective'] != 'search':
            raise ConfigError(f'config key "policy.learn.search_window": {learn["search_window"]} chunks at once is '
                              f'for objective=\'search\' (its targets stay valid for older positions); objective '
                              f'{learn["objective"]!r} needs the current chunk only: set 1')
        if learn['search_value_weight'] > 0 and learn['objective'] != 'search':
            raise ConfigError(f'config key "policy.learn.search_value_weight": {learn["search_value_weight"]} blends '
                              f'the value of the search a player collected its moves by, for objective=\'search\'; '
                              f'objective {learn["objective"]!r} has no search: set 0')

    def chunk_fields(self, spaces: ChunkSpaces) -> Tuple[ChunkField, ...]:
        """The search's visits and values at every step; the solver's labels where the collection options ask for them
        (optional: the search's ``label_columns`` say which a chunk carries)."""
        actions = (spaces.num_actions,)
        return (ChunkField('search_policy', np.float32, actions, finite=True),
                ChunkField('search_value', np.float32, finite=True),
                ChunkField('value_target', np.float32, finite=True, required=False),
                ChunkField('value_labelled', np.bool_, required=False),
                ChunkField('policy_target', np.float32, actions, finite=True, required=False),
                ChunkField('policy_labelled', np.bool_, required=False),
                ChunkField('policy_weight', np.float32, finite=True, required=False))

    def returns(self, chunk: Dict[str, np.ndarray], returns: np.ndarray) -> np.ndarray:
        """The value targets of a chunk, the search's value blended in; refuses a chunk without the search's records."""
        if 'search_policy' not in chunk:
            raise ValueError('PPO.learn: objective \'search\' trains towards the chunk\'s search_policy, which it '
                             'lacks; collect with battle.collect_search')
        weight = self.search_value_weight
        moved = chunk['train_mask']  # a seat not to move was not searched: its target stays the result
        if weight:
            if 'search_value' not in chunk:
                raise ValueError('PPO.learn: search_value_weight blends the chunk\'s search_value into the value '
                                 'target, which it lacks; collect with battle.collect_search')
            returns = np.where(moved, (1.0 - weight) * returns + weight * chunk['search_value'], returns)
        if 'value_target' in chunk:  # exact values where the collector could label the position
            if 'value_labelled' not in chunk:
                raise ValueError('PPO.learn: the chunk\'s value_target comes without value_labelled, the steps it '
                                 'holds a target for; collect with battle.collect_search')
            returns = np.where(moved & chunk['value_labelled'], chunk['value_target'], returns)
        return returns

    def policy_targets(self, chunk: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """The chunk with the solver's moves as ``search_policy`` where the collector labelled the position."""
        if 'policy_target' not in chunk:
            return chunk
        if 'policy_labelled' not in chunk:
            raise ValueError('PPO.learn: the chunk\'s policy_target comes without policy_labelled, the steps it '
                             'holds a target for; collect with battle.collect_search')
        labelled = (chunk['train_mask'] & chunk['policy_labelled'])[..., None]
        return dict(chunk, search_policy=np.where(labelled, chunk['policy_target'], chunk['search_policy']))

    def training_batch(self, fresh: TrainBatch) -> TrainBatch:
        """The window's chunks, then this one. A chunk collected without ``policy_weight`` (a run resumed with
        ``tactics_weight`` turned on or off) weighs its steps 1, as its own update did."""
        if not self.recent_batches:
            return fresh
        return TrainBatch.concat([*self.recent_batches, fresh], fill=dict(policy_weight=1.0))

    def policy_loss(self, mb: Minibatch) -> PolicyLoss:
        kept = mb.part.kept
        log_probs, target = mb.part.acting_steps(D.categorical_log_probs(mb.head, mb.mask),
                                                 present(kept.search_policy, 'search_policy'))
        weight = kept.policy_weight
        if weight is not None:
            weight = mb.part.acting_steps(weight)[0]
        return PolicyLoss(*F.search_target_loss(log_probs, target, mb.log_prob, mb.old_log_prob, weight))

    def after_update(self, batch: TrainBatch, fresh: TrainBatch) -> Dict[str, float]:
        if self.recent_batches.maxlen:
            self.recent_batches.append(fresh)
        return {}

    def reset(self) -> None:
        self.recent_batches.clear()

    def state_dict(self, placement: Placement) -> Dict[str, Any]:
        state = super().state_dict(placement)
        if self.recent_batches:  # an empty window is not written
            state['recent_batches'] = [placement.to_host(b.state_dict()) for b in self.recent_batches]
        return state

    def load_state_dict(self, state: Dict[str, Any], placement: Placement) -> None:
        self.recent_batches.clear()
        self.recent_batches.extend(placement.move(TrainBatch.from_state_dict(b))
                                   for b in state.get('recent_batches', []))

    def to(self, placement: Placement) -> None:
        self.recent_batches = deque((placement.move(b) for b in self.recent_batches), maxlen=self.recent_batches.maxlen)
