"""Learner replicas: N processes that train one player as one, averaging gradients with torch.distributed.

Collectors stream a player's chunks to its replicas in turn, so each replica holds its own part of
the data. Every round the replicas *agree* (one small all-reduce): they train only when every one of
them has a chunk, so each update is one learner's update on the union of their chunks, split N ways;
the gradients are averaged as they are computed (a hook on every parameter), so every replica takes
the same optimiser step and the parameters stay identical. Replica 0, the *lead*, is the player's
learner as the commander sees it: it publishes, checkpoints, hears the league's verdicts and decides
when the group stops; it also sends its parameters and buffers to the others when the group forms and
after a reset, so they start equal.

Only what is the same on every replica may decide how many gradient steps an update takes, or the
replicas would wait for each other forever: the clip objective without ``target_kl`` (no early stop),
no re-training of old chunks. :func:`check_replica_config` refuses the rest. The group runs gloo on CPU
and NCCL on CUDA; a replica that dies takes its group down, and the launcher restarts it whole.
"""
from __future__ import annotations

import datetime
from typing import Dict, List, Tuple, Union

import torch
import torch.distributed as dist

from sparring.config.schema import ConfigError


def check_replica_config(cfg) -> None:
    """Refuse settings under which replicas could disagree on the number of gradient steps."""
    if cfg.parallel.learner_replicas <= 1:
        return
    learn = cfg.policy.get('learn', {})
    if learn.get('objective', 'clip') != 'clip' or learn.get('target_kl') is not None:
        raise ConfigError('config key "parallel.learner_replicas": replicas need the same number of gradient steps '
                          'on every replica; expected policy.learn.objective "clip" with target_kl None (the KL '
                          'penalty and target_kl stop epochs early by a KL each replica measures on its own data)')
    if cfg.parallel.target_sample_reuse:
        raise ConfigError('config key "parallel.learner_replicas": replicas train only on fresh chunks, in step; '
                          'expected parallel.target_sample_reuse 0')


class ReplicaGroup:
    """One replica's membership of its player's group (``rank`` 0 is the lead)."""

    def __init__(self, address: str, rank: int, size: int, timeout_seconds: float,
                 device: Union[str, torch.device] = 'cpu') -> None:
        host, port = address.replace('tcp://', '').rsplit(':', 1)
        self.rank, self.size = rank, size
        self.store = dist.TCPStore(host, int(port), size, is_master=rank == 0,
                                   timeout=datetime.timedelta(seconds=timeout_seconds))
        self.device = torch.device(device)
        backend = 'nccl' if self.device.type == 'cuda' else 'gloo'  # NCCL reduces tensors on the GPUs
        self.group_started = False
        dist.init_process_group(backend, store=self.store, rank=rank, world_size=size,
                                timeout=datetime.timedelta(seconds=timeout_seconds))
        self.group_started = True
        self._hooks: List = []

    @property
    def is_lead(self) -> bool:
        return self.rank == 0

    def average_gradients(self, module: torch.nn.Module) -> None:
        """Every gradient of ``module``'s parameters is averaged over the group as backward computes it."""
        for param in module.parameters():
            if param.requires_grad:
                self._hooks.append(param.register_hook(self._averaged))

    def _averaged(self, grad: torch.Tensor) -> torch.Tensor:
        grad = grad.clone()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        return grad / self.size

    def agree(self, has_chunk: bool, stop: bool, counts: Dict[str, int]) -> Tuple[bool, bool, Dict[str, int]]:
        """``(train, stop, totals)``: train when every replica has a chunk; stop when the lead says so;
        ``counts`` summed over the group (each replica passes the same keys)."""
        keys = sorted(counts)
        state = torch.tensor([float(has_chunk), float(stop and self.is_lead)] + [float(counts[k]) for k in keys],
                             dtype=torch.float64, device=self.device)
        dist.all_reduce(state, op=dist.ReduceOp.SUM)
        state = state.cpu()
        totals = {k: int(v) for k, v in zip(keys, state[2:].tolist())}
        return bool(state[0] == self.size), bool(state[1] > 0), totals

    def share_lead_state(self, module: torch.nn.Module, buffers_only: bool = False) -> None:
        """Every replica takes the lead's parameters and buffers (when the group forms, and after a reset),
        or only its buffers (after every update: a running normaliser follows the lead's data)."""
        tensors = list(module.buffers()) + ([] if buffers_only else list(module.parameters()))
        with torch.no_grad():
            for tensor in tensors:
                dist.broadcast(tensor.data, src=0)

    def share_numbers(self, *values: float) -> List[float]:
        """The lead's ``values`` on every replica (a reset flag, its version and iteration)."""
        state = torch.tensor([float(v) for v in values], dtype=torch.float64, device=self.device)
        dist.broadcast(state, src=0)
        return state.cpu().tolist()

    def close(self) -> None:
        for hook in self._hooks:
            hook.remove()
        if self.group_started and dist.is_initialized():
            dist.destroy_process_group()
