"""Replay buffers for off-policy learners: uniform, and prioritised with a sum-tree.

Both store transitions column-wise: a dict of numpy arrays whose first axis is the slot, filled
as a ring (the oldest transitions are overwritten once ``capacity`` is reached). The arrays are
allocated on the first ``push``, from that batch's keys, shapes and dtypes, so a policy that is
built but never learns (a frozen league snapshot) costs no memory.

:class:`PrioritizedReplayBuffer` follows Schaul et al.'s proportional variant: slot i is drawn
with probability ``p_i / sum(p)`` where ``p_i = (|td error| + eps) ** alpha``; new transitions get
the largest priority seen so far, so each is likely to be replayed at least once. Sampling is
stratified (one draw per equal slice of the total mass) and the importance weights
``(N * P(i)) ** -beta`` are divided by their largest possible value, so they lie in (0, 1].
"""
from __future__ import annotations

from typing import Dict, NamedTuple, Optional

import numpy as np

from sparring.config.schema import ConfigError, in_range
from sparring.policy import functional as F
from sparring.policy.transitions import Transitions

# Battle chunks may say whom each move was played against: the opponent's player id as an int64 code
# and its parameter version (see ``replay_opponents``); transitions keep both (``chunk_transitions``).
OPPONENT_KEYS = ('opponent', 'opponent_version')


class ReplaySample(NamedTuple):
    data: Dict[str, np.ndarray]  # one batch of transitions, [batch_size, ...] per key
    indices: np.ndarray  # the slots drawn, to hand back to ``update_priorities``
    weights: np.ndarray  # importance-sampling weights, all ones for uniform sampling


class ReplayBuffer:
    """A ring of ``capacity`` transitions sampled uniformly with replacement."""

    prioritized = False

    def __init__(self, capacity: int, seed: int = 0) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
            raise ValueError(f'{type(self).__name__}: capacity must be an int >= 1, got {capacity!r}')
        self.capacity = int(capacity)
        self.rng = np.random.default_rng(seed)
        self.storage: Optional[Dict[str, np.ndarray]] = None
        self.position = 0  # the slot the next transition goes to
        self.size = 0
        self.pushed = 0  # transitions received over the buffer's life

    def __len__(self) -> int:
        return self.size

    # -- writing ------------------------------------------------------------------------------
    def push(self, batch: Dict[str, np.ndarray]) -> np.ndarray:
        """Store a batch of transitions (a dict of equally long arrays); returns the slots written."""
        n = self._check_batch(batch)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        if n > self.capacity:  # only the newest ``capacity`` would survive anyway
            batch = {k: v[n - self.capacity:] for k, v in batch.items()}
            self.pushed += n - self.capacity
            n = self.capacity
        if self.storage is None:
            self.storage = {k: np.zeros((self.capacity, *v.shape[1:]), dtype=v.dtype) for k, v in batch.items()}
        slots = (self.position + np.arange(n)) % self.capacity
        for key, values in batch.items():
            self.storage[key][slots] = values
        self.position = int((self.position + n) % self.capacity)
        self.size = min(self.size + n, self.capacity)
        self.pushed += n
        self._on_write(slots)
        return slots

    def _check_batch(self, batch: Dict[str, np.ndarray]) -> int:
        if not isinstance(batch, dict) or not batch:
            raise ValueError(f'{type(self).__name__}.push: expected a non-empty dict of arrays, got {batch!r:.80}')
        lengths = {k: len(v) for k, v in batch.items() if isinstance(v, np.ndarray) and v.ndim >= 1}
        if len(lengths) != len(batch):
            bad = [k for k in batch if k not in lengths]
            raise ValueError(f'{type(self).__name__}.push: {bad} are not numpy arrays with a batch axis')
        if len(set(lengths.values())) != 1:
            raise ValueError(f'{type(self).__name__}.push: arrays of different lengths {lengths}')
        if self.storage is not None:
            if set(batch) != set(self.storage):
                raise ValueError(f'{type(self).__name__}.push: keys {sorted(batch)} differ from the stored '
                                 f'keys {sorted(self.storage)}')
            for key, values in batch.items():
                stored = self.storage[key]
                if values.shape[1:] != stored.shape[1:]:
                    raise ValueError(f'{type(self).__name__}.push: {key!r} has item shape {values.shape[1:]}, '
                                     f'the buffer holds {stored.shape[1:]}')
        return next(iter(lengths.values()))

    def _on_write(self, slots: np.ndarray) -> None:
        """Hook for subclasses: ``slots`` were just (over)written."""

    def drop(self, where: np.ndarray) -> int:
        """Forget the filled slots where ``where`` (``[size]`` booleans) is True; the others keep their order,
        oldest first, from slot 0. Returns how many were dropped. O(size): meant for rare clean-ups."""
        where = np.asarray(where, dtype=bool)
        if where.shape != (self.size,):
            raise ValueError(f'{type(self).__name__}.drop: expected {self.size} booleans, got shape {where.shape}')
        dropped = int(where.sum())
        if not dropped:
            return 0
        assert self.storage is not None  # size > 0: allocated by the first push
        oldest_first = (self.position + np.arange(self.size)) % self.capacity if self.size == self.capacity \
            else np.arange(self.size)
        kept = oldest_first[~where[oldest_first]]
        for values in self.storage.values():
            values[:len(kept)] = values[kept]
        self._on_compact(kept)
        self.size = len(kept)
        self.position = self.size % self.capacity
        return dropped

    def _on_compact(self, kept: np.ndarray) -> None:
        """Hook for subclasses: the slots ``kept`` moved to 0..len(kept)-1, the rest were dropped."""

    # -- reading ------------------------------------------------------------------------------
    def sample(self, batch_size: int, beta: float = 1.0) -> ReplaySample:
        """``batch_size`` transitions drawn with replacement; ``beta`` only matters when prioritised."""
        if self.size == 0:
            raise ValueError(f'{type(self).__name__}.sample: the buffer is empty')
        if batch_size < 1:
            raise ValueError(f'{type(self).__name__}.sample: batch_size must be >= 1, got {batch_size}')
        indices, weights = self._draw(int(batch_size), float(beta))
        assert self.storage is not None  # size > 0: allocated by the first add
        return ReplaySample({k: v[indices] for k, v in self.storage.items()}, indices, weights)

    def _draw(self, batch_size: int, beta: float):
        return self.rng.integers(0, self.size, batch_size), np.ones(batch_size, dtype=np.float32)

    def update_priorities(self, indices: np.ndarray, td_errors: np.ndarray) -> None:
        """Uniform sampling has no priorities: nothing to do."""

    # -- persistence --------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The stored transitions (only the filled slots), the write position and the RNG."""
        filled = None if self.storage is None else {k: v[:self.size].copy() for k, v in self.storage.items()}
        return dict(capacity=self.capacity, position=self.position, size=self.size, pushed=self.pushed,
                    storage=filled, rng=self.rng.bit_generator.state)

    def load_state_dict(self, state: dict) -> None:
        if int(state['capacity']) != self.capacity:
            raise ValueError(f'{type(self).__name__}.load_state_dict: saved capacity {state["capacity"]} differs '
                             f'from this buffer\'s {self.capacity}')
        self.position, self.size, self.pushed = int(state['position']), int(state['size']), int(state['pushed'])
        self.storage = None
        if state['storage'] is not None:
            self.storage = {k: np.zeros((self.capacity, *v.shape[1:]), dtype=v.dtype)
                            for k, v in state['storage'].items()}
            for key, values in state['storage'].items():
                self.storage[key][:self.size] = values
        self.rng.bit_generator.state = state['rng']


class SumTree:
    """Leaf values and the sums of every subtree, for O(log n) updates and prefix-sum search.

    Node 1 is the root, node i has children 2i and 2i+1, and leaf j is node ``leaves + j``.
    Updates and searches are vectorised over a batch of leaves, one tree level at a time.
    """

    def __init__(self, capacity: int) -> None:
        self.leaves = 1 << max(1, int(capacity - 1).bit_length())  # >= 2: the root is never a leaf
        self.depth = self.leaves.bit_length() - 1
        self.nodes = np.zeros(2 * self.leaves, dtype=np.float64)

    @property
    def total(self) -> float:
        return float(self.nodes[1])

    def values(self, indices: np.ndarray) -> np.ndarray:
        return self.nodes[self.leaves + np.asarray(indices)]

    def update(self, indices: np.ndarray, values: np.ndarray) -> None:
        nodes = self.leaves + np.asarray(indices, dtype=np.int64)
        self.nodes[nodes] = values
        # Recompute each touched parent once per level, from its two children: correct even when
        # ``indices`` repeats a leaf.
        for _ in range(self.depth):
            nodes = np.unique(nodes // 2)
            self.nodes[nodes] = self.nodes[2 * nodes] + self.nodes[2 * nodes + 1]

    def find(self, mass: np.ndarray) -> np.ndarray:
        """For each prefix mass, the leaf j with sum(leaves[:j]) <= mass < sum(leaves[:j + 1])."""
        mass = np.array(mass, dtype=np.float64)
        nodes = np.ones(len(mass), dtype=np.int64)
        for _ in range(self.depth):
            left = 2 * nodes
            go_right = mass >= self.nodes[left]
            mass = np.where(go_right, mass - self.nodes[left], mass)
            nodes = left + go_right
        return nodes - self.leaves


class PrioritizedReplayBuffer(ReplayBuffer):
    """Proportional prioritised replay (see the module docstring)."""

    prioritized = True

    def __init__(self, capacity: int, alpha: float = 0.6, priority_eps: float = 1e-6, seed: int = 0) -> None:
        super().__init__(capacity, seed)
        if not alpha >= 0.0:
            raise ValueError(f'PrioritizedReplayBuffer: alpha must be >= 0, got {alpha!r}')
        if not priority_eps > 0.0:
            raise ValueError(f'PrioritizedReplayBuffer: priority_eps must be > 0, got {priority_eps!r}')
        self.alpha = float(alpha)
        self.priority_eps = float(priority_eps)
        self.tree = SumTree(self.capacity)
        self.max_priority = 1.0  # of |td error| + eps, before the exponent

    def _on_write(self, slots: np.ndarray) -> None:
        self.tree.update(slots, np.full(len(slots), self.max_priority ** self.alpha))

    def _on_compact(self, kept: np.ndarray) -> None:
        priorities = self.tree.values(kept).copy()
        self.tree = SumTree(self.capacity)
        if len(kept):
            self.tree.update(np.arange(len(kept)), priorities)

    def update_priorities(self, indices: np.ndarray, td_errors: np.ndarray) -> None:
        priority = np.abs(np.asarray(td_errors, dtype=np.float64)) + self.priority_eps
        if not np.isfinite(priority).all():
            raise ValueError('PrioritizedReplayBuffer.update_priorities: non-finite TD errors')
        self.max_priority = max(self.max_priority, float(priority.max()))
        self.tree.update(indices, priority ** self.alpha)

    def probabilities(self) -> np.ndarray:
        """The sampling probability of every filled slot."""
        return self.tree.values(np.arange(self.size)) / self.tree.total

    def _draw(self, batch_size: int, beta: float):
        total = self.tree.total
        # Stratified: one uniform draw inside each of ``batch_size`` equal slices of the mass.
        mass = (np.arange(batch_size) + self.rng.random(batch_size)) * (total / batch_size)
        # Rounding can push a draw past the last filled leaf; filled slots are 0..size-1.
        indices = np.minimum(self.tree.find(mass), self.size - 1)
        leaf = self.tree.values(indices)
        smallest = self.tree.values(np.arange(self.size)).min()
        # w_i = (N P(i))^-beta divided by its maximum (N P_min)^-beta equals (p_i / p_min)^-beta.
        weights = (leaf / smallest) ** -beta
        return indices, weights.astype(np.float32)

    def state_dict(self) -> dict:
        state = super().state_dict()
        state.update(priorities=self.tree.values(np.arange(self.size)).copy(), max_priority=self.max_priority)
        return state

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.tree = SumTree(self.capacity)
        if self.size:
            self.tree.update(np.arange(self.size), state['priorities'])
        self.max_priority = float(state['max_priority'])


def check_batch_fits_replay(section: dict) -> None:
    """A replay policy's config: a learning batch cannot be larger than the buffer it is drawn from."""
    if section['learn']['batch_size'] > section['replay']['capacity']:
        raise ConfigError(f'config key "policy.learn.batch_size": {section["learn"]["batch_size"]} exceeds '
                          f'"policy.replay.capacity" {section["replay"]["capacity"]}')


def make_replay_buffer(cfg: dict, seed: int = 0) -> ReplayBuffer:
    """The buffer a policy's ``replay`` config section describes."""
    if cfg['prioritized']:
        return PrioritizedReplayBuffer(cfg['capacity'], cfg['alpha'], cfg['priority_eps'], seed=seed)
    return ReplayBuffer(cfg['capacity'], seed=seed)


def replay_default_config(capacity: int) -> dict:
    """The ``replay`` config section shared by the off-policy policies (a new dict each call)."""
    return dict(
        capacity=capacity,  # transitions kept; the oldest are overwritten first
        prioritized=False,  # proportional prioritised replay (Schaul et al.) instead of uniform sampling
        alpha=0.6,  # priority exponent
        beta_start=0.4,  # importance-sampling exponent, annealed linearly ...
        beta_end=1.0,  # ... to this by the end of the run
        priority_eps=1e-6,  # added to |td error| so every transition keeps a chance to be drawn
        in_checkpoint=True,  # save the buffer's transitions with the policy's state
    )


REPLAY_CONSTRAINTS = {
    'replay.capacity': in_range(1, None),
    'replay.alpha': in_range(0.0, None),
    'replay.beta_start': in_range(0.0, 1.0),
    'replay.beta_end': in_range(0.0, 1.0),
    'replay.priority_eps': in_range(0.0, None, open_lo=True),
}


def chunk_transitions(chunk: Dict[str, np.ndarray], gamma: float, n_step: int, who: str) -> Transitions[np.ndarray]:
    """A chunk's n-step :class:`~sparring.policy.transitions.Transitions`: ``obs, action, ret, discount, next_obs``
    and, for chunks with action masks, ``mask`` (legal actions where the move was chosen) and ``next_mask`` (where
    it bootstraps), and whom each move was against where the chunk says so.

    Transitions run between the policy's own decisions (``train_mask`` rows in battle chunks, every row in
    single-agent ones; see ``functional.nstep_transitions``). A truncated episode bootstraps from its final
    observation, which collectors put into ``next_obs`` for policies whose chunk spec names it.
    """
    if 'next_obs' not in chunk:
        raise ValueError(f'{who}.learn: the chunk has no "next_obs" array; collectors add it for policies whose '
                         f'chunk spec names it (the observation after each step, bootstrapped from)')
    decision = chunk.get('train_mask')
    # Past a single-agent chunk's end the next state is a decision of the policy again; in a
    # battle chunk it may be the opponent's turn, so the transition waits for an own move.
    tr = F.nstep_transitions(chunk['reward'], chunk['terminated'], chunk['truncated'], decision, gamma, n_step,
                             bootstrap_tail=decision is None)
    obs, next_obs = chunk['obs'], chunk['next_obs']
    from_next = tr.boot_kind == F.BOOT_NEXT_OBS
    boot_obs = obs[tr.boot_row, tr.col]
    boot_obs[from_next] = next_obs[tr.boot_row[from_next], tr.col[from_next]]
    data = dict(obs=obs[tr.row, tr.col], action=np.asarray(chunk['action'])[tr.row, tr.col],
                ret=tr.ret, discount=tr.discount, next_obs=boot_obs)
    if 'action_mask' in chunk:
        data['mask'] = chunk['action_mask'][tr.row, tr.col].astype(bool)
        next_mask = chunk['action_mask'][tr.boot_row, tr.col].astype(bool)
        # A truncated episode's final state comes without its legal actions: all count.
        next_mask[from_next] = True
        data['next_mask'] = next_mask
    for key in OPPONENT_KEYS:  # who the move was played against (battle chunks that say so)
        if key in chunk:
            data[key] = np.asarray(chunk[key])[tr.row, tr.col]
    return Transitions.of(data)
