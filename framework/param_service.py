"""Parameters served to workers by reference: an active player's newest published ones, or stored ones.

A worker says which version it holds; the reply carries arrays only when there is a newer one. A learner's
publish is checked against the player's initial parameters before it is served or kept: the same names,
shapes and dtypes, and finite numbers. Parameters that fail would make every collector and evaluator play
illegal actions or die of a size mismatch, and would live on in the league's snapshots; they are refused
(counted as ``params_refused``) and the learner is told which array was wrong.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, Mapping, Optional, Tuple

import numpy as np

from sparring.config.compile import to_plain
from sparring.framework.coordinator import INIT_REF
from sparring.worker.remote.wire import MessageError, params_to_arrays, short
from sparring.worker.state_file import StateFileError

WAIT_SECONDS = 0.2


@dataclasses.dataclass
class LiveParams:
    """A player's newest published parameters, as the arrays that go out to workers."""
    version: int
    arrays: Dict[str, np.ndarray]


class ParamService:
    """``initial_refs``: where each player's initial parameters are (a game with roles has one per role; by default
    every player's are ``init``)."""

    def __init__(self, store, player_ids, policy_cfg: dict, counters: Optional[Dict[str, int]] = None,
                 initial_refs: Optional[Mapping[str, str]] = None) -> None:
        self.store = store
        self.player_ids = list(player_ids)
        self.policy_cfg = policy_cfg
        self.counters = counters if counters is not None else {}
        self.live: Dict[str, LiveParams] = {}
        self._stored: Dict[str, Tuple[int, Dict[str, np.ndarray], dict]] = {}
        self.initial_refs = dict(initial_refs or {})
        # initial ref -> {name -> (shape, dtype)} of every array of the players that start from it
        self._layouts: Dict[str, Dict[str, Tuple[tuple, np.dtype]]] = {}

    def publish(self, pid: str, version: int, arrays: Dict[str, np.ndarray]) -> None:
        """Serve ``arrays`` as ``pid``'s newest parameters; raises MessageError for parameters unlike the player's."""
        problem = self._problem(arrays, self.initial_refs.get(pid, INIT_REF))
        if problem:
            self.counters['params_refused'] = self.counters.get('params_refused', 0) + 1
            raise MessageError('schema', f'publish of {pid!r} version {version} refused: {problem}')
        # The arrays are views of the received frames, which they keep alive: no copy needed.
        self.live[pid] = LiveParams(version, dict(arrays))

    def _problem(self, arrays: Mapping[str, np.ndarray], initial_ref: str) -> Optional[str]:
        """What makes ``arrays`` unfit to be the parameters of a player that started from ``initial_ref``, or None."""
        layout = self._layouts.get(initial_ref)
        if layout is None:
            initial = self.store.get(initial_ref)['params']
            layout = self._layouts[initial_ref] = {name: (a.shape, a.dtype)
                                                   for name, a in params_to_arrays(initial).items()}
        if set(arrays) != set(layout):
            missing, extra = sorted(set(layout) - set(arrays)), sorted(set(arrays) - set(layout))
            return f'its arrays differ from the player\'s: missing {short(missing)}, unknown {short(extra)}'
        for name, (shape, dtype) in layout.items():
            array = arrays[name]
            if array.shape != shape or array.dtype != dtype:
                return f'{name!r} is {array.dtype}{list(array.shape)}; the player\'s is {dtype}{list(shape)}'
            if array.dtype.kind == 'f' and not np.isfinite(array).all():
                return f'{name!r} holds NaN or infinite values'
        return None

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
