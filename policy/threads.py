"""Torch's intra-op threads for one phase of a process (a policy's update), restored after it.

A serial run collects with one thread (small forward passes run fastest so, see DESIGN) and its other
core idles while the learner updates; a large update (a CNN on thousands of samples) can use both.
Only worth it where the cores are free: on a loaded machine extra threads spin and cost far more
than they give, so it is opt-in (``policy.learn.threads``).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional

import torch


@contextmanager
def torch_threads(count: Optional[int]) -> Iterator[None]:
    """``count`` intra-op threads inside the block (None: leave the process's setting alone)."""
    before = torch.get_num_threads()
    if count is None or count == before:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
