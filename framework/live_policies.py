"""The players' policies as the commander holds them: the newest published parameters of each active
player and the stored ones of every snapshot, for what the commander computes itself (the exact analysis
of small games: exploitability and the meta-game the ``nash`` branch solves)."""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from sparring.config.registry import POLICY_REGISTRY
from sparring.framework.commander import Commander
from sparring.policy.base import Policy
from sparring.worker.run_kind import run_kind
from sparring.worker.remote.wire import arrays_to_params


class LivePolicies:
    def __init__(self, commander: Commander, pool_seed: Optional[int] = None) -> None:
        """``pool_seed``: the seed of the snapshots' and bots' pool (default: the run's)."""
        self.commander = commander
        cfg = commander.cfg
        self.kind = run_kind(cfg)
        self.pool = self.kind.policy_pool(commander.coordinator.store, cfg.seed if pool_seed is None else pool_seed)
        self._live: Dict[str, Tuple[int, Policy]] = {}  # player -> (version, policy)

    def get(self, ref: str, role: Optional[str] = None):
        """The policy under ``ref``: an active player's at its newest published version, else a stored one (in a
        game with roles, built for ``role``'s seat)."""
        live = self.commander.live.get(ref)
        if live is None:
            return self.pool.get(ref) if role is None else self.pool.get(ref, role)
        held = self._live.get(ref)
        version: Optional[int]
        if held is None:
            cfg = self.commander.cfg
            role = self.commander.coordinator.role_of(ref)
            version, policy = None, POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, *self.kind.spaces(role),
                                                                          seed=cfg.seed)
            policy.role = role
        else:
            version, policy = held
        if version != live.version:
            policy.set_params(arrays_to_params(live.arrays), live.version)
            self._live[ref] = (live.version, policy)
        return policy
