"""Fingerprints of the games a vectorised battle env plays: a hash of every step of a game (the actions
both seats took, and the observation the env answered, or at the game's end its result), so that an
evaluation can say how many *distinct* games it played.

Greedy players on a game without chance repeat the same few games: a win rate over 100 copies of one
game, and its standard error, measure nothing more than that one game. Both the league's periodic
evaluations (:class:`~sparring.worker.battle_evaluator.BattleEvaluator`) and ``sparring eval`` count the
games through this one class, so the two counts agree.
"""
from __future__ import annotations

import hashlib
from typing import Dict

import numpy as np


def _new_hash():
    return hashlib.blake2b(digest_size=16)


class GameFingerprints:
    """One running hash per env slot; :meth:`step` feeds a step and hands back the finished games' hashes."""

    def __init__(self, num_envs: int) -> None:
        self._hashes = [_new_hash() for _ in range(num_envs)]

    def step(self, actions, step) -> Dict[int, str]:
        """Feed the ``actions`` given to the env and the ``step`` it answered (a ``BattleStep``); returns
        ``{slot: fingerprint}`` of the games that ended at this step (their slots start a new hash)."""
        slots = len(self._hashes)
        actions = _bytes_per_slot(actions, slots)
        done = np.asarray(step.terminated) | np.asarray(step.truncated)
        # One buffer per slot (its actions, then its observation) and one hash update per slot: the hashing
        # runs at every step of every evaluation, so it is kept to a Python call per slot.
        rows = np.concatenate([actions, _bytes_per_slot(step.obs, slots)], axis=1)
        for slot in np.flatnonzero(~done):
            self._hashes[slot].update(rows[slot])
        ended: Dict[int, str] = {}
        # At a game's end the observation is already the next game's first one: the result stands for it.
        finished = np.flatnonzero(done)
        results = _bytes_per_slot(step.result, slots) if len(finished) else np.empty((slots, 0), np.uint8)
        for slot in finished:
            game = self._hashes[slot]
            game.update(actions[slot])
            game.update(results[slot])
            ended[int(slot)] = game.hexdigest()
            self._hashes[slot] = _new_hash()
        return ended


def _bytes_per_slot(values, slots: int) -> np.ndarray:
    """``[slots, n]`` uint8: each slot's values as their bytes in memory order."""
    return np.ascontiguousarray(values).reshape(slots, -1).view(np.uint8)
