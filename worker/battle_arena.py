"""Who controls which seat of B two-seat games, and one batched step of acting for all of them.

Shared by the battle collector and the battle evaluator. Slot b holds a game between the
*home* policy and an opponent ``opponents[b]``. The home seat alternates between episodes in a
slot (and starts at ``b % 2``), so no player always moves first. Acting is batched: the home
policy acts once for its seat in every slot (plus the opponent seat where the opponent is the
home policy itself, i.e. self-play), and every other opponent acts once for the slots it plays
in (grouped by opponent), only where it is to move.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Tuple

import numpy as np

from sparring.policy.base import Policy
from sparring.worker.env.battle import BattleStep, RESULT_NAME


class Arena:
    def __init__(self, env, home: Policy, deterministic: bool = False) -> None:
        self.env = env
        self.home = home
        self.deterministic = deterministic
        B = env.num_envs
        self.home_seat = np.arange(B) % 2
        self.opponents: List[Optional[Policy]] = [None] * B
        self.opponent_ids: List[Optional[str]] = [None] * B
        self.step_result: Optional[BattleStep] = None

    @property
    def num_envs(self) -> int:
        return self.env.num_envs

    def set_opponent(self, slot: int, opponent_id: str, policy: Policy) -> None:
        self.opponent_ids[slot] = opponent_id
        self.opponents[slot] = policy

    def self_play_slots(self) -> np.ndarray:
        return np.array([opp is self.home for opp in self.opponents], dtype=bool)

    def reset(self) -> BattleStep:
        self.step_result = self.env.reset()
        return self.step_result

    def act(self) -> Tuple[np.ndarray, dict]:
        """Actions ``[B, 2]`` for the current step, and the home policy's outputs.

        The returned dict holds ``[B, 2]`` arrays ``action, log_prob, value`` and a bool
        ``home_controlled`` for the (slot, seat) pairs the home policy acted for.
        """
        step = self.step_result
        B = self.num_envs
        rows = np.arange(B)
        seats = self.home_seat
        selfplay = self.self_play_slots()
        # The home policy acts for its seat everywhere, and for the other seat in self-play slots.
        h_rows = np.concatenate([rows, rows[selfplay]])
        h_seats = np.concatenate([seats, 1 - seats[selfplay]])
        out = self.home.act(step.obs[h_rows, h_seats], action_mask=step.action_mask[h_rows, h_seats],
                            deterministic=self.deterministic)
        actions = np.zeros((B, 2), dtype=np.int64)
        actions[h_rows, h_seats] = out.action
        home = dict(action=np.zeros((B, 2), dtype=np.int64), log_prob=np.zeros((B, 2), dtype=np.float32),
                    value=np.zeros((B, 2), dtype=np.float32), home_controlled=np.zeros((B, 2), dtype=bool))
        home['action'][h_rows, h_seats] = out.action
        home['log_prob'][h_rows, h_seats] = out.log_prob
        home['value'][h_rows, h_seats] = out.value
        home['home_controlled'][h_rows, h_seats] = True
        # Other opponents: one batched call per distinct opponent, only where it is to move.
        opp_seats = 1 - seats
        moving = step.to_move[rows, opp_seats] & ~selfplay
        for policy, idx in _group_by_policy(self.opponents, np.flatnonzero(moving)):
            kwargs = {}
            if getattr(policy, 'needs_game_state', False):
                kwargs['game_states'] = self.env.game_states(idx)
            o = policy.act(step.obs[idx, opp_seats[idx]], action_mask=step.action_mask[idx, opp_seats[idx]],
                           deterministic=self.deterministic, **kwargs)
            actions[idx, opp_seats[idx]] = o.action
        return actions, home

    def step(self, actions: np.ndarray) -> BattleStep:
        self.step_result = self.env.step(actions)
        return self.step_result

    def finished(self, step: BattleStep) -> List[Tuple[int, str, str]]:
        """``(slot, opponent_id, outcome)`` for every game that just ended, outcome from the home view;
        then the home seat of those slots flips for their next game."""
        done = np.flatnonzero(step.terminated | step.truncated)
        out = [(int(b), self.opponent_ids[b], RESULT_NAME[int(step.result[b, self.home_seat[b]])]) for b in done]
        self.home_seat[done] = 1 - self.home_seat[done]
        return out


def _group_by_policy(opponents: List[Optional[Policy]], slots: np.ndarray):
    groups: dict = {}
    for b in slots:
        policy = opponents[b]
        if policy is None:
            raise RuntimeError(f'battle arena: slot {b} has no opponent; call set_opponent first')
        groups.setdefault(id(policy), (policy, []))[1].append(b)
    for policy, idx in groups.values():
        yield policy, np.asarray(idx)


OpponentSampler = Callable[[int], Tuple[str, Policy]]
