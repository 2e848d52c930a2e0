"""Parameters served to workers by reference: an active player's newest published ones, or stored ones.

A worker says which version it holds; the reply carries arrays only when there is a newer one.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Optional, Tuple

import numpy as np

from sparring.config.compile import to_plain
from sparring.worker.remote.wire import MessageError, params_to_arrays
from sparring.worker.state_file import StateFileError

WAIT_SECONDS = 0.2


@dataclasses.dataclass
class LiveParams:
    """A player's newest published parameters, as the arrays that go out to workers."""
    version: int
    arrays: Dict[str, np.ndarray]


class ParamService:
    def __init__(self, store, player_ids, policy_cfg: dict) -> None:
        self.store = store
        self.player_ids = list(player_ids)
        self.policy_cfg = policy_cfg
        self.live: Dict[str, LiveParams] = {}
        self._stored: Dict[str, Tuple[int, Dict[str, np.ndarray], dict]] = {}

    def publish(self, pid: str, version: int, arrays: Dict[str, np.ndarray]) -> None:
        # The arrays are views of the received frames, which they keep alive: no copy needed.
        self.live[pid] = LiveParams(version, dict(arrays))

    def forget(self, ref: str) -> None:
        """``ref`` was (re)stored: serve the new parameters from now on."""
        self._stored.pop(ref, None)

    def reply(self, ref: str, have: Optional[int]):
        """``(kind, body, arrays)``: the parameters under ``ref`` if newer than ``have``, or a wait."""
        if ref in self.player_ids:
            live = self.live.get(ref)
            if live is None:
                return 'wait', dict(seconds=WAIT_SECONDS, reason=f'{ref!r} has not published parameters yet'), None
            version, arrays, policy_cfg = live.version, live.arrays, self.policy_cfg
        else:
            try:
                version, arrays, policy_cfg = self._stored_entry(ref)
            except KeyError as err:
                raise MessageError('schema', str(err)) from None
            except StateFileError:  # its file is damaged: quarantined (the coordinator reads store.damaged)
                return self._stand_in(ref, have)
        if have == version:
            return 'params', dict(ref=ref, version=version, unchanged=True, policy_cfg=None), None
        return 'params', dict(ref=ref, version=version, unchanged=False, policy_cfg=policy_cfg), arrays

    def _stand_in(self, ref: str, have: Optional[int]):
        """For a quarantined snapshot, a learning player's newest parameters: the games a collector holds against
        it (drawn before the quarantine) are played with them, and not recorded."""
        live = next(iter(self.live.values()), None)
        if live is None:
            return 'wait', dict(seconds=WAIT_SECONDS, reason=f'{ref!r} is quarantined; no stand-in published yet'), None
        if have == live.version:
            return 'params', dict(ref=ref, version=live.version, unchanged=True, policy_cfg=None), None
        return 'params', dict(ref=ref, version=live.version, unchanged=False, policy_cfg=self.policy_cfg), live.arrays

    def _stored_entry(self, ref: str):
        if ref not in self._stored:
            entry = self.store.get(ref)
            self._stored[ref] = (entry['version'], params_to_arrays(entry['params']), to_plain(entry['policy_cfg']))
        return self._stored[ref]
