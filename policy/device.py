"""Where a policy's tensors live (``policy.device``, ``policy.collect.device``), and the one place that moves them.

* A policy is **built on its acting device**, ``policy.collect.device`` (CPU by default): collectors,
  evaluators, league snapshots and every other process that only acts build policies there.
* A :class:`~sparring.worker.learner.Learner` moves its policy to ``policy.device``: the model, the
  optimiser state, the normaliser and every batch it trains on live there (a replay buffer stays in
  host memory; the batches sampled from it move).
* Whatever leaves a policy is on the CPU: ``get_params()``, ``state_dict()`` (checkpoints), the numpy
  results of ``act``. ``set_params`` / ``load_state_dict`` copy CPU tensors onto the policy's device, so
  parameters and checkpoints load on any device.

``'auto'`` is resolved in the process that builds or moves the policy: CUDA where that process's torch
has it, else the CPU, so one config serves a CUDA learner beside CPU-only collectors or a CPU-only
driver. Asking for CUDA where torch has none is a :class:`ConfigError` naming the key.

Each policy holds one :class:`Placement` and routes every host-device crossing through it, so the same
code runs unchanged on a CUDA machine. Random draws stay on the policy's CPU generator (the
distributions move the noise), so the numbers drawn do not depend on the device.
"""
from __future__ import annotations

import re
from typing import Any, Optional

import numpy as np
import torch

from sparring.config.schema import ConfigError
from sparring.policy.train_batch import TrainBatch

DEVICE_KEY = 'policy.device'
COLLECT_DEVICE_KEY = 'policy.collect.device'
CPU = torch.device('cpu')
_SPEC = re.compile(r'(cpu|auto|cuda(:\d+)?)')
_FORMS = "'cpu', 'cuda', 'cuda:N' or 'auto'"


# -- what torch offers (the two checks tests replace to walk the CUDA branch on a CPU-only machine) --
def cuda_available() -> bool:
    return torch.cuda.is_available()


def cuda_device_count() -> int:
    return torch.cuda.device_count()


def _problem(spec: Any) -> Optional[str]:
    """Why ``spec`` cannot be used in this process, or None."""
    if not isinstance(spec, str) or not _SPEC.fullmatch(spec):
        return f'expected {_FORMS}, got {spec!r}'
    if not spec.startswith('cuda'):
        return None
    if not cuda_available():
        return f'{spec!r} asks for CUDA, but torch {torch.__version__} has no CUDA; expected \'cpu\' or \'auto\''
    count = cuda_device_count()
    index = int(spec.split(':')[1]) if ':' in spec else 0
    if index >= count:
        return f'{spec!r}: torch sees {count} CUDA device(s), cuda:0 to cuda:{count - 1}'
    return None


def check_device_spec(value: Any) -> None:
    """Config constraint of ``device`` / ``collect.device`` (the compiler prefixes the key)."""
    problem = _problem(value)
    if problem is not None:
        raise ConfigError(problem)


check_device_spec.description = _FORMS  # type: ignore[attr-defined]  # how the config reference names it


def resolve_device(spec: Any, key: str = DEVICE_KEY) -> torch.device:
    """The ``torch.device`` a config value names in this process; ConfigError naming ``key`` if unusable."""
    problem = _problem(spec)
    if problem is not None:
        raise ConfigError(f'config key "{key}": {problem}')
    if spec == 'auto':
        return torch.device('cuda') if cuda_available() else CPU
    return torch.device(spec)


def learner_device(policy_cfg) -> torch.device:
    return resolve_device(policy_cfg['device'], DEVICE_KEY)


def acting_device(policy_cfg) -> torch.device:
    return resolve_device(policy_cfg['collect']['device'], COLLECT_DEVICE_KEY)


def devices_usable_here(policy_cfg) -> list:
    """Point a stored policy config's devices at what this process has: each of ``device`` and
    ``collect.device`` that names CUDA this process lacks becomes ``'cpu'``, in place.

    A run trained with its learner or its acting on CUDA stores those specs in its config; the
    commands that open the run later (eval, play, export, exploit) may run on a machine without a
    GPU, where the stored parameters act just as well on the CPU. Returns one line per key changed.
    """
    changed = []
    for key, section in ((DEVICE_KEY, policy_cfg), (COLLECT_DEVICE_KEY, policy_cfg['collect'])):
        problem = _problem(section['device'])
        if problem is not None:
            changed.append(f'{key}={section["device"]!r} cannot be used here ({problem}): using the CPU')
            section['device'] = 'cpu'
    return changed


class Placement:
    """One policy's device and every crossing between it and the host. On the CPU each method returns
    its input's tensors themselves (no copy), so CPU runs compute exactly what they did before devices."""

    def __init__(self, device: torch.device = CPU) -> None:
        self.device = torch.device(device)
        self.on_cpu = self.device.type == 'cpu'

    def __repr__(self) -> str:
        return f'Placement({self.device})'

    # -- into the device ----------------------------------------------------------------------
    def tensor(self, data, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
        """A numpy array (observations, masks, recurrent state) or tensor as a tensor on the device."""
        return torch.as_tensor(data, dtype=dtype, device=self.device)

    def move(self, obj: Any) -> Any:
        """Tensors inside dicts, lists, tuples and :class:`TrainBatch` es, on the device."""
        return _map_tensors(obj, lambda t: t if t.device == self.device else t.to(self.device))

    def module(self, module: torch.nn.Module) -> None:
        """Parameters (and their gradients) and buffers (a normaliser's statistics, DQN's epsilon) onto the device.

        The tensors are swapped in place, so every Parameter stays the same object whatever the two devices:
        optimisers, gradient clippers and gradient hooks that hold them keep working (a plain ``.to`` keeps
        them only between devices of compatible tensor types, e.g. CPU and CUDA, and replaces them otherwise).
        """
        swapping = torch.__future__.get_swap_module_params_on_conversion()
        torch.__future__.set_swap_module_params_on_conversion(True)
        try:
            module.to(self.device)
        finally:
            torch.__future__.set_swap_module_params_on_conversion(swapping)

    def optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """Its state next to its (already moved) parameters: torch's own loading casts each state tensor
        to its parameter's device and keeps what must stay on the CPU (Adam's step counts) there."""
        optimizer.load_state_dict(optimizer.state_dict())

    # -- out to the host ----------------------------------------------------------------------
    @staticmethod
    def numpy(tensor: torch.Tensor) -> np.ndarray:
        return tensor.cpu().numpy()

    @staticmethod
    def to_host(obj: Any) -> Any:
        """Tensors inside ``obj`` on the CPU (CPU tensors as they are, shared)."""
        return _map_tensors(obj, lambda t: t.cpu())

    @staticmethod
    def host_copy(obj: Any) -> Any:
        """Tensors inside ``obj`` as detached CPU copies that later updates leave alone (parameters)."""
        return _map_tensors(obj, lambda t: t.detach().clone() if t.device == CPU else t.detach().cpu())


def _map_tensors(obj: Any, fn) -> Any:
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, TrainBatch):
        return TrainBatch.from_state_dict(_map_tensors(obj.state_dict(), fn))
    if isinstance(obj, dict):
        mapped = {k: _map_tensors(v, fn) for k, v in obj.items()}
        return mapped if type(obj) is dict else type(obj)(mapped)
    if isinstance(obj, tuple) and hasattr(obj, '_fields'):  # a named tuple
        return type(obj)(*(_map_tensors(v, fn) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map_tensors(v, fn) for v in obj)
    return obj
