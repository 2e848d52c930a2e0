"""Checkpoints in the experiment directory: atomic writes, the newest found by iteration number.

Files are ``<exp_dir>/ckpt/iter_<n>.pt``; only the last ``keep`` are kept. A write goes to a
temporary file first and is renamed into place, so a crash never leaves a half-written
checkpoint where ``latest()`` would find it.
"""
from __future__ import annotations

import os
import re
from typing import Any, Optional

import torch

_PATTERN = re.compile(r'^iter_(\d+)\.pt$')


class CheckpointManager:
    def __init__(self, exp_dir: str, keep: int = 3) -> None:
        self.dir = os.path.join(exp_dir, 'ckpt')
        self.keep = keep

    def _all(self) -> list[tuple[int, str]]:
        if not os.path.isdir(self.dir):
            return []
        found = []
        for name in os.listdir(self.dir):
            match = _PATTERN.match(name)
            if match:
                found.append((int(match.group(1)), os.path.join(self.dir, name)))
        return sorted(found)

    def save(self, state: Any, iteration: int) -> str:
        os.makedirs(self.dir, exist_ok=True)
        path = os.path.join(self.dir, f'iter_{iteration:08d}.pt')
        tmp = path + '.tmp'
        torch.save(state, tmp)
        os.replace(tmp, path)
        for _, old in self._all()[:-self.keep]:
            os.remove(old)
        return path

    def latest(self) -> Optional[str]:
        found = self._all()
        return found[-1][1] if found else None

    def load_latest(self) -> Any:
        """The newest checkpoint's contents, for ``--resume``; FileNotFoundError if there is none."""
        path = self.latest()
        if path is None:
            raise FileNotFoundError(f'--resume: no checkpoint under {self.dir}')
        return self.load(path)

    @staticmethod
    def load(path: str) -> Any:
        # Checkpoints hold RNG states and optimiser state, not only tensors; they are our own files.
        return torch.load(path, map_location='cpu', weights_only=False)
