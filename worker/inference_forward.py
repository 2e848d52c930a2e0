"""The acting step cut in two, for forward-pass (inference) workers: the network's forward pass, and the draw.

OpenAI Five's rollout workers run the game but not the policy: a forward-pass worker runs the network for
many of them in batches and answers with what acting needs; the rollout worker draws the action with its
own RNG, so a chunk means exactly what it means when the policy acts in the collector itself.

* :func:`forward_rows` -- the forward half, on the forward-pass worker (``PPOPolicy.network_output``): a policy's
  distribution parameters (``head``: logits, or a Gaussian's mean), values and next recurrent state for a batch.
* :func:`act_from_forward` -- the draw, on the rollout worker: the same computation as ``PPOPolicy.act``
  after its network, from the forward half's output, with the acting policy's own generator.
* :class:`ForwardSpec` -- what one network's forward request must carry (observations of the env's shape, the
  recurrent state of that network's width, finite values), checked request by request before a request joins a
  batch, so one sender's mistake is its own error reply and never its batch-mates'.
* :class:`Batcher` -- dynamic batching: requests wait until ``max_batch`` rows are pending or the oldest has
  waited ``max_wait_ms``; it takes no more than ``max_batch`` rows in (a request of more is its own batch),
  so what a forward-pass worker holds is bounded and the rest waits in the sockets' bounded queues.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np
import torch

from sparring.policy import distributions as D
from sparring.policy.base import ActOutput
from sparring.policy.ppo import NetworkOutput, PPOPolicy


ForwardOut = NetworkOutput  # what a forward pass answers: the policy's own type, so both ends read one shape


class RequestRefused(ValueError):
    """A forward request (or one segment of a wave) that its network cannot take; ``why`` names the check for the
    counters (``dropped/<why>``)."""

    def __init__(self, why: str, message: str) -> None:
        super().__init__(message)
        self.why = why


@dataclasses.dataclass(frozen=True)
class ForwardSpec:
    """What a forward request for one network carries: ``rows`` observations of ``observation_shape`` (numbers:
    a float, integer or bool dtype of at most 8 bytes, finite), and for a recurrent network exactly its state's
    arrays, each ``rows`` float32 rows of the per-row shape in ``state_shapes`` (finite); a feed-forward network
    (``state_shapes`` None) takes no state. No action mask travels: the mask is applied where the action is drawn,
    in the collector. Built from the network itself (:meth:`of`), so a snapshot of another width is checked
    against its own."""
    observation_shape: Tuple[int, ...]
    state_shapes: Optional[Tuple[Tuple[int, ...], ...]] = None

    @classmethod
    def of(cls, policy, observation_shape: Tuple[int, ...]) -> 'ForwardSpec':
        state = policy.initial_state(1)
        shapes = None if state is None else tuple(tuple(np.shape(part))[1:] for part in state)
        return cls(tuple(observation_shape), shapes)

    def row_bytes(self) -> int:
        """The most bytes one row of a request for this network may hold: observations of up to 8 bytes an element
        (a float64 sender is served), the state's float32 arrays."""
        state = sum(int(np.prod(shape)) for shape in self.state_shapes or ())
        return 8 * int(np.prod(self.observation_shape)) + 4 * state

    def check(self, name: str, obs: np.ndarray, state: Optional[Sequence[np.ndarray]], rows: int) -> None:
        """Raise :class:`RequestRefused` naming what is wrong with ``obs`` and ``state`` (the arrays of a request
        or of a wave's segment ``name``) for ``rows`` rows of this network."""
        if obs.shape != (rows, *self.observation_shape) or obs.dtype.kind not in 'fiub' or obs.dtype.itemsize > 8:
            raise RequestRefused('observation', f'{name} must be {rows} rows of shape {self.observation_shape} '
                                                f'(numbers), got {obs.dtype}{list(obs.shape)}')
        if obs.dtype.kind == 'f' and not np.isfinite(obs).all():
            raise RequestRefused('non_finite', f'{name} holds NaN or infinite values')
        parts = tuple(state or ())
        if self.state_shapes is None:
            if parts:
                raise RequestRefused('state', f'{name}: this network is feed-forward; a request carries no '
                                              f'recurrent state, got {len(parts)} state arrays')
            return
        wanted = [(rows, *shape) for shape in self.state_shapes]
        got = [p.shape for p in parts]
        if len(parts) != len(wanted) or any(p.dtype != np.float32 for p in parts) or \
                any(tuple(g) != w for g, w in zip(got, wanted)):
            raise RequestRefused('state', f'{name}: this recurrent network\'s state is {len(wanted)} float32 '
                                          f'arrays of shapes {wanted}, got {[f"{p.dtype}{list(p.shape)}" for p in parts]}')
        if not all(np.isfinite(p).all() for p in parts):
            raise RequestRefused('non_finite', f'{name}: the recurrent state holds NaN or infinite values')


def forwards_remotely(policy) -> bool:
    """Whether ``policy``'s acting splits into a network forward and a draw (PPO's does; bots, DQN and SAC act
    whole: SAC's ``_step`` is a gradient step, not a forward pass)."""
    return isinstance(policy, PPOPolicy)


def forward_rows(policy, obs: np.ndarray, state: Any = None) -> ForwardOut:
    """One batched forward pass of ``policy``'s network on ``obs`` (and recurrent ``state``)."""
    return policy.network_output(obs, state)


def act_from_forward(policy, out: ForwardOut, deterministic: bool = False,
                     action_mask: Optional[np.ndarray] = None) -> ActOutput:
    """What ``policy.act`` returns, drawn with ``policy.generator`` from a forward pass made elsewhere.

    ``PPOPolicy.draw``, the sampling ``PPOPolicy.act`` does after its network (on the CPU, where the rollout
    worker is): the same generator draws the same actions from the same distribution parameters."""
    with torch.inference_mode():
        head = torch.from_numpy(np.ascontiguousarray(out.head))
        log_std = torch.from_numpy(np.ascontiguousarray(out.log_std)) if policy.continuous else None
        action, log_prob = policy.draw(head, log_std, deterministic, action_mask)
        return ActOutput(action.numpy(), log_prob.numpy(), np.asarray(out.value, dtype=np.float32), out.state)


def probabilities_from_forward(out: ForwardOut, action_mask: Optional[np.ndarray] = None) -> np.ndarray:
    """``[N, A]`` action probabilities from a categorical head."""
    with torch.inference_mode():
        mask = None if action_mask is None else torch.from_numpy(np.asarray(action_mask, dtype=bool))
        return D.categorical_log_probs(torch.from_numpy(np.ascontiguousarray(out.head)), mask).exp().numpy()


@dataclasses.dataclass
class Pending:
    """One request (or one segment of a wave request) waiting for its batch: what to answer with, the key of the
    network it asks, its rows."""
    reply_to: Any
    key: Tuple[str, int, Optional[str]]  # (reference, version, role): role None in a symmetric game
    obs: np.ndarray
    state: Any = None
    arrived: float = 0.0  # the batcher's clock when it came in (its batching delay is measured from here)
    wave: Any = None  # the wave request this is a segment of (answered once all its segments are), or None
    segment: int = 0  # its place in that wave


class Batcher:
    """Requests gathered into batches of at most ``max_batch`` rows, held at most ``max_wait_ms`` (see the module)."""

    def __init__(self, max_batch: int, max_wait_ms: float, clock: Callable[[], float] = time.monotonic) -> None:
        if max_batch < 1 or max_wait_ms < 0:
            raise ValueError(f'Batcher: max_batch must be >= 1 and max_wait_ms >= 0, got {max_batch}, {max_wait_ms}')
        self.max_batch = max_batch
        self.max_wait = max_wait_ms / 1000.0
        self.clock = clock
        self.pending: List[Pending] = []
        self.rows = 0
        self.oldest = 0.0
        self.most_rows = 0  # the most rows ever held at once (the bound a test checks)

    def has_room(self) -> bool:
        """Whether another request may come in: below ``max_batch`` rows (the first request always fits)."""
        return self.rows < self.max_batch

    def add(self, *requests: Pending) -> None:
        """One request, or a wave's segments (they come in together and go out in the same batch)."""
        if not self.has_room():
            raise RuntimeError(f'Batcher: {self.rows} rows pending already; max_batch is {self.max_batch}')
        now = self.clock()
        if not self.pending:
            self.oldest = now
        for request in requests:
            request.arrived = now
            self.pending.append(request)
            self.rows += len(request.obs)
        self.most_rows = max(self.most_rows, self.rows)

    def due_in(self) -> Optional[float]:
        """Seconds until the pending batch is due (0: now), or None when nothing is pending."""
        if not self.pending:
            return None
        if not self.has_room():
            return 0.0
        return max(0.0, self.oldest + self.max_wait - self.clock())

    def take(self) -> List[List[Pending]]:
        """The pending requests, grouped by network (one forward pass each), in arrival order; empties the batcher."""
        groups: dict = {}
        for request in self.pending:
            groups.setdefault(request.key, []).append(request)
        self.pending, self.rows = [], 0
        return list(groups.values())


def stack_group(group: List[Pending]) -> Tuple[np.ndarray, Any]:
    """One group's observations and recurrent states stacked into one batch."""
    obs = np.concatenate([r.obs for r in group]) if len(group) > 1 else group[0].obs
    if group[0].state is None:
        return obs, None
    return obs, tuple(np.concatenate([r.state[i] for r in group]) for i in range(len(group[0].state)))


def split_out(out: ForwardOut, group: List[Pending]) -> List[ForwardOut]:
    """The batch's output cut back into each request's rows."""
    parts, start = [], 0
    for request in group:
        stop = start + len(request.obs)
        state = None if out.state is None else tuple(p[start:stop] for p in out.state)
        parts.append(ForwardOut(out.head[start:stop], out.value[start:stop], state, out.log_std))
        start = stop
    return parts
