"""Per-process runtime set-up: torch threads and seeding, and capture/restore of every RNG state."""
from __future__ import annotations

import random

import numpy as np
import torch


def set_torch_threads(n: int) -> None:
    """Small networks on a few cores run far faster with one intra-op thread (see DESIGN).

    OpenMP keeps the count per thread: a thread started later runs torch's operations with its default team (every
    core) until it calls this itself, so every thread that runs torch calls it (a loaded machine then makes each
    call wait for a team member the scheduler parked: 48 ms a one-row forward pass instead of 0.15 ms)."""
    if n < 1:
        raise ValueError(f'torch_threads must be >= 1, got {n}')
    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(n)
    except RuntimeError:
        pass  # only settable before the first parallel op; the intra-op setting is what matters


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2 ** 32)
    torch.manual_seed(seed)


def capture_rng() -> dict:
    return dict(python=random.getstate(), numpy=np.random.get_state(), torch=torch.get_rng_state())


def restore_rng(state: dict) -> None:
    random.setstate(state['python'])
    np.random.set_state(state['numpy'])
    torch.set_rng_state(state['torch'])
