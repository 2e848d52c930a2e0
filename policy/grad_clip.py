"""OpenAI Five's per-element gradient clipping: each element to within +-k * sqrt(v).

``v`` is an Adam-style running second moment (same beta2, same bias correction) of the
*unclipped* gradient, updated with the current gradient before it is clipped. Adam itself is
then fed the clipped gradient, so its own second moment cannot serve here: it would track the
clipped values and the bound would ratchet down. Updating before clipping also means the first
step is never clipped (its bias-corrected moment is the squared gradient itself).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List

import torch


def clip_to_second_moment(grad: torch.Tensor, second_moment: torch.Tensor, scale: float) -> torch.Tensor:
    """``grad`` clamped element-wise to ``[-scale * sqrt(second_moment), +scale * sqrt(second_moment)]``."""
    bound = scale * second_moment.sqrt()
    return torch.maximum(torch.minimum(grad, bound), -bound)


class SecondMomentClipper:
    """Clips the ``.grad`` of ``params`` in place; call between ``backward()`` and ``optimizer.step()``."""

    def __init__(self, params: Iterable[torch.nn.Parameter], scale: float = 5.0, beta2: float = 0.999) -> None:
        if scale <= 0:
            raise ValueError(f'SecondMomentClipper: scale must be > 0, got {scale}')
        if not 0.0 <= beta2 < 1.0:
            raise ValueError(f'SecondMomentClipper: beta2 must be in [0, 1), got {beta2}')
        self.params: List[torch.nn.Parameter] = list(params)
        self.scale = float(scale)
        self.beta2 = float(beta2)
        self.steps = 0
        self.second_moments = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]

    @torch.no_grad()
    def clip_(self) -> float:
        """Update the moments with the current gradients, clip them; returns the fraction of elements clipped."""
        self.steps += 1
        bias_correction = 1.0 - self.beta2 ** self.steps
        clipped = total = 0
        for param, moment in zip(self.params, self.second_moments):
            if param.grad is None:
                continue
            grad = param.grad
            moment.mul_(self.beta2).addcmul_(grad, grad, value=1.0 - self.beta2)
            limited = clip_to_second_moment(grad, moment / bias_correction, self.scale)
            clipped += int((limited != grad).sum())
            total += grad.numel()
            grad.copy_(limited)
        return clipped / max(total, 1)

    def reset(self) -> None:
        self.steps = 0
        for moment in self.second_moments:
            moment.zero_()

    def state_dict(self) -> Dict[str, Any]:
        return dict(steps=self.steps, second_moments=[m.clone() for m in self.second_moments])

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        moments = state['second_moments']
        if len(moments) != len(self.second_moments):
            raise ValueError(f'SecondMomentClipper: state holds {len(moments)} moments; expected '
                             f'{len(self.second_moments)} (one per parameter)')
        self.steps = int(state['steps'])
        for mine, saved in zip(self.second_moments, moments):
            mine.copy_(saved)
