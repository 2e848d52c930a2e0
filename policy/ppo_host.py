"""What the PPO policy's step mixins read of the policy they are mixed into, declared once for the type checker.

:class:`~sparring.policy.ppo.PPOPolicy` is assembled from mixins (the average policy, the magnet, the
KL penalty, search targets) that use the policy's attributes and methods. Each derives from
:class:`PPOHost`, which states that contract; at run time it adds nothing (annotations only, and the
methods exist for the type checker alone).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Tuple

import numpy as np
import torch

from sparring.policy.device import Placement
from sparring.policy.train_batch import TrainBatch


class PPOHost:
    cfg: dict
    net: Any  # ppo._Network: the model behind its observation normaliser (not named: ppo.py imports the mixins)
    model: Any  # the registered model: an nn.Module whose extra members (log_std, unroll, value) vary by type
    placement: Placement
    generator: torch.Generator
    continuous: bool
    recurrent: bool

    if TYPE_CHECKING:  # as PPOPolicy (and KLPenaltySteps) define them
        def _obs_tensor(self, obs: np.ndarray) -> torch.Tensor: ...
        def _forward(self, batch: TrainBatch) -> Tuple[torch.Tensor, torch.Tensor]: ...
        @staticmethod
        def _acting_steps(batch: TrainBatch, *tensors: torch.Tensor) -> Tuple[torch.Tensor, ...]: ...
        def _keep_old_policy(self, batch: TrainBatch) -> None: ...
