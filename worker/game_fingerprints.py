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
        # A game with roles: one array per seat for the actions and observations (their shapes differ); a slot's
        # are its row of each.
        per_seat = getattr(step, 'per_seat', False)
        seat_actions = list(actions) if per_seat else [np.asarray(actions)]
        seat_obs = list(step.obs) if per_seat else [np.asarray(step.obs)]
        done = np.asarray(step.terminated) | np.asarray(step.truncated)
        ended: Dict[int, str] = {}
        for slot, game in enumerate(self._hashes):
            for seat in seat_actions:
                game.update(np.ascontiguousarray(seat[slot]).tobytes())
            # At a game's end the observation is already the next game's first one: the result stands for it.
            if done[slot]:
                game.update(np.ascontiguousarray(step.result[slot]).tobytes())
            else:
                for seat in seat_obs:
                    game.update(np.ascontiguousarray(seat[slot]).tobytes())
            if done[slot]:
                ended[slot] = game.hexdigest()
                self._hashes[slot] = _new_hash()
        return ended
