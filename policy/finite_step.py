"""The guard before every optimiser step: a loss or gradient that is not finite is skipped, not applied.

One absurd sample (a 1e30 reward, an overflow) makes the loss infinite; stepping on it would turn the
parameters into NaN for good. Policies call :func:`finite_update` between ``backward()`` and any
gradient clipping or ``optimizer.step()``, skip the step when it says no, and count it.
"""
from __future__ import annotations

from typing import Iterable

import torch


def finite_update(loss: torch.Tensor, params: Iterable[torch.nn.Parameter]) -> bool:
    """Whether ``loss`` and every gradient of ``params`` are finite (so the step may be taken)."""
    if not bool(torch.isfinite(loss)):
        return False
    return all(p.grad is None or bool(torch.isfinite(p.grad).all()) for p in params)
