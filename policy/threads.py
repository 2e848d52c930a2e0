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
    """``count`` intra-op threads inside the block (None: leave the process's setting alone).

    Set even when ``torch.get_num_threads()`` already reports ``count``: that figure is the process's, while OpenMP
    keeps its team size per thread, so in a thread started later (a learner or evaluator thread) torch reports the
    count set in the main thread while its operations still run with OpenMP's default team of every core."""
    if count is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
