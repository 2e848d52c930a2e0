"""Run logging: tensorboardX scalars, one concise console line per iteration, a progress bar.

Console lines also go to ``<exp_dir>/log.txt``. The progress bar counts env steps and is shown
only on a terminal (tqdm disables itself otherwise), so CI logs stay readable.
"""
from __future__ import annotations

import os
import sys
from typing import Dict, Optional

from sparring.worker.run_files import open_run_file, refuse_linked_dirs


class RunLogger:
    def __init__(self, exp_dir: str, total_env_steps: int, tensorboard: bool = True, progress_bar: bool = True,
                 initial_env_steps: int = 0) -> None:
        os.makedirs(exp_dir, exist_ok=True)
        self.exp_dir = exp_dir
        self._file = open_run_file(os.path.join(exp_dir, 'log.txt'), 'a')
        self._writer = None
        if tensorboard:
            from tensorboardX import SummaryWriter
            # tensorboardX opens its event file itself, following links, under a name that tells the second it was
            # made: in a folder that is no link, a random suffix leaves no name at which to plant a link in advance.
            refuse_linked_dirs(exp_dir, ('tb',))
            self._writer = SummaryWriter(os.path.join(exp_dir, 'tb'), filename_suffix=f'.{os.urandom(8).hex()}')
        self._bar = None
        if progress_bar:
            from tqdm import tqdm
            self._bar = tqdm(total=total_env_steps, initial=initial_env_steps, unit='step', unit_scale=True,
                             dynamic_ncols=True, disable=None, leave=False)
        self._last_steps = initial_env_steps

    def scalars(self, values: Dict[str, float], step: int, prefix: str = '') -> None:
        if self._writer is None:
            return
        for key, value in values.items():
            if isinstance(value, (int, float)) and value == value:  # skip NaN (e.g. explained variance)
                self._writer.add_scalar(f'{prefix}{key}', value, step)

    def histogram(self, tag: str, values, step: int) -> None:
        """A distribution (e.g. the staleness of the chunks a learner trained on) at ``step``."""
        if self._writer is not None and len(values):
            import numpy as np
            self._writer.add_histogram(tag, np.asarray(values, dtype=np.float64), step)

    def line(self, text: str) -> None:
        if self._bar is not None and not self._bar.disable:
            self._bar.write(text)
        else:
            print(text, file=sys.stdout, flush=True)
        self._file.write(text + '\n')
        self._file.flush()

    def progress(self, env_steps: int) -> None:
        if self._bar is not None:
            self._bar.update(env_steps - self._last_steps)
        self._last_steps = env_steps

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> 'RunLogger':
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def format_outcome_rates(report: Dict[str, dict]) -> str:
    """Evaluation rates per opponent, labelled (``random:w0.86/d0.06/l0.08``): two bare numbers read as
    win/loss when they are win/draw."""
    return ' '.join(f'{oid}:w{s["win"]:.2f}/d{s["draw"]:.2f}/l{s["loss"]:.2f}' for oid, s in report.items())


def device_line(policy_cfg) -> Optional[str]:
    """The learner's device as this process resolves ``policy.device``, said once at a run's start
    (``device: cpu (auto: no CUDA)``), and the acting device where it differs; None when both are the
    default 'cpu' (nothing was chosen, so nothing to say)."""
    from sparring.policy.device import acting_device, cuda_available, learner_device
    if policy_cfg['device'] == 'cpu' and policy_cfg['collect']['device'] == 'cpu':
        return None
    spec, device = policy_cfg['device'], learner_device(policy_cfg)
    text = f'device: {device}'
    if spec == 'auto':
        text += ' (auto: CUDA available)' if cuda_available() else ' (auto: no CUDA)'
    acting = acting_device(policy_cfg)
    if acting != device:
        text += f'; acting on {acting} (policy.collect.device)'
    return text


def format_stats(values: Dict[str, Optional[float]]) -> str:
    """``key=value`` pairs with compact number formatting, skipping None."""
    parts = []
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, float):
            parts.append(f'{key}={value:.4g}')
        else:
            parts.append(f'{key}={value}')
    return ' '.join(parts)
