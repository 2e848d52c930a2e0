"""One acting step of several policies, with the remote ones' forward passes in one round trip.

A battle step asks the home policy and then each opponent group to act. Where those networks run on a
forward-pass worker, one request each would cost a round trip each; :func:`act_together` sends the forward
passes of every policy that can join a *wave* (a policy with a ``forward_wave``: the remote policies of
:mod:`sparring.worker.inference_client`, sharing their collector's socket) in one request, and calls every
other policy's ``act`` as before, in the order given. A local run has no such policy, so it acts call for call
exactly as it did without this module (its golden runs stay bit-identical).

The actions are drawn by each policy's own generator (every policy appears at most once in a step), so the
order in which the wave's answers are drawn from does not change what any policy draws.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from sparring.policy.base import ActOutput


@dataclasses.dataclass
class ActCall:
    """One ``policy.act(obs, state, action_mask=..., deterministic=..., **kwargs)`` to make."""
    policy: Any
    obs: np.ndarray
    state: Any = None
    action_mask: Optional[np.ndarray] = None
    deterministic: bool = False
    kwargs: Dict[str, Any] = dataclasses.field(default_factory=dict)


def act_together(calls: Sequence[ActCall]) -> List[ActOutput]:
    """Each call's :class:`~sparring.policy.base.ActOutput`, in order (see the module)."""
    outs: List[Optional[ActOutput]] = [None] * len(calls)
    waves: Dict[int, tuple] = {}
    for i, call in enumerate(calls):
        # A policy that needs more than rows (a game state, say) acts whole, wherever its network is.
        wave = None if call.kwargs else getattr(call.policy, 'forward_wave', None)
        if wave is None:
            outs[i] = call.policy.act(call.obs, call.state, action_mask=call.action_mask,
                                      deterministic=call.deterministic, **call.kwargs)
        else:
            waves.setdefault(id(wave), (wave, []))[1].append(i)
    for wave, indices in waves.values():
        for i, out in zip(indices, wave.act([calls[i] for i in indices])):
            outs[i] = out
    return outs  # type: ignore[return-value]  # every index was filled above
