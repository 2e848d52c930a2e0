"""Checkpoints in the experiment directory: pickle-free, atomic, the newest intact one found by iteration.

Files are ``<exp_dir>/ckpt/iter_<n>.pt`` (the name of earlier versions; the content is a pickle-free
state file, :mod:`sparring.worker.state_file`); only the last ``keep`` are kept. A write goes to a
temporary file first and is renamed into place, so a crash never leaves a half-written checkpoint
where :meth:`CheckpointManager.latest` would find it, and temporary files a kill left behind are
removed. Resuming takes the newest checkpoint that reads back whole; a damaged one is named and
passed over for the one before it.
"""
from __future__ import annotations

import glob
import logging
import os
import re
from typing import Any, List, Optional, Tuple

from sparring.worker.state_file import StateFileError, load_state_file, save_state_file

log = logging.getLogger(__name__)

_PATTERN = re.compile(r'^iter_(\d+)\.pt$')


class CheckpointError(RuntimeError):
    """No checkpoint of the run could be read."""


class CheckpointManager:
    def __init__(self, exp_dir: str, keep: int = 3) -> None:
        self.dir = os.path.join(exp_dir, 'ckpt')
        self.keep = keep

    def _all(self) -> List[Tuple[int, str]]:
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
        self.remove_partial_files()
        path = save_state_file(state, os.path.join(self.dir, f'iter_{iteration:08d}.pt'))
        for _, old in self._all()[:-self.keep]:
            os.remove(old)
        return path

    def remove_partial_files(self) -> None:
        """Temporary files of writes a kill interrupted: never complete, never read."""
        for path in glob.glob(os.path.join(self.dir, '*.tmp')) + glob.glob(os.path.join(self.dir, '.*.tmp')):
            log.warning('removing %s, left half-written by an interrupted save', path)
            os.remove(path)

    def latest(self) -> Optional[str]:
        found = self._all()
        return found[-1][1] if found else None

    def load_latest(self) -> Any:
        """The newest checkpoint that reads back whole, for ``--resume``; a damaged one is named and skipped."""
        found = self._all()
        if not found:
            raise FileNotFoundError(f'--resume: no checkpoint under {self.dir}')
        problems = []
        for _, path in reversed(found):
            try:
                state = self.load(path)
            except StateFileError as err:
                log.warning('%s; trying the checkpoint before it', err)
                problems.append(str(err))
                continue
            if problems:
                log.warning('resuming from %s, the newest intact checkpoint', path)
            self.resumed_from = path
            return state
        raise CheckpointError(f'--resume: none of the {len(found)} checkpoints under {self.dir} can be read: '
                              + '; '.join(problems))

    @staticmethod
    def load(path: str) -> Any:
        """A checkpoint's contents (:class:`StateFileError` naming the file if it is damaged or untrusted)."""
        return load_state_file(path)
