"""The rules of :mod:`sparring.worker.env.check` that one position, one step or one game's end must keep.

:class:`PositionRules` reads the :class:`BattleStep` arrays of one form of the env (a batch of games),
so the same rules judge a single game through its loop and a natively vectorised env. What it finds
goes into :class:`Findings`, one line per kind of problem with a count of the repeats.
"""
from __future__ import annotations

from typing import Dict, List

import numpy as np
from gymnasium import spaces

from sparring.worker.env.battle_api import RESULT_NAME
from sparring.worker.env.battle_step import BattleStep, seat_view

TOLERANCE = 1e-5  # for float bounds and zero sums


class Findings:
    """Lines keyed by kind: the first of each kind is kept, the others are counted (a bug repeats every step)."""

    def __init__(self) -> None:
        self.first: Dict[str, str] = {}
        self.more: Dict[str, int] = {}

    def add(self, kind: str, line: str) -> None:
        if kind in self.first:
            self.more[kind] += 1
        else:
            self.first[kind] = ' '.join(line.split())
            self.more[kind] = 0

    def __contains__(self, kind: str) -> bool:
        return kind in self.first

    def lines(self) -> List[str]:
        return [line + (f' (and {self.more[k]} more like it)' if self.more[k] else '') for k, line in self.first.items()]


class PositionRules:
    """The rules on the positions and game ends of one form's games; also counts the turn-based positions
    where the seat to move and the waiting seat observe the same (for :meth:`seats_warning`)."""

    def __init__(self, vec, problems: Findings, warnings: Findings, zero_sum: bool) -> None:
        self.vec, self.problems, self.warnings, self.zero_sum = vec, problems, warnings, zero_sum
        self.alike = self.turns = 0
        self.first_alike = ''

    def rewards(self, step: BattleStep, where) -> None:
        """A zero sum at every step, where the class declares ``zero_sum = True``."""
        if self.zero_sum:
            for j in np.flatnonzero(np.abs(step.reward.sum(axis=1)) > TOLERANCE):
                self.problems.add('zero_sum', f'{where(j)}: rewards {step.reward[j].tolist()} do not sum to 0; '
                                              f'expected a zero sum (the class says zero_sum = True)')

    def positions(self, step: BattleStep, rows, where, final: bool) -> None:
        """Observations and masks of the games ``rows``: the finished positions (``final``) or the current ones."""
        obs_all = step.final_obs if final else step.obs
        agents, obs_spaces = self.vec.agents, self.vec.observation_spaces  # each seat's own (roles: they differ)
        seat_obs = [seat_view(obs_all, s) for s in range(len(agents))]
        any_discrete = any(isinstance(space, spaces.Discrete) for space in self.vec.action_spaces)
        for j in rows:
            for s, agent in enumerate(agents):
                obs, space = seat_obs[s][j], obs_spaces[s]
                if obs.shape != tuple(space.shape):
                    self.problems.add('obs_shape', f'{where(j)}: observations of shape {obs.shape}; expected '
                                                   f'{tuple(space.shape)} ({space!r})')
                    break
                if isinstance(space, spaces.Box):
                    outside = (obs < space.low - TOLERANCE) | (obs > space.high + TOLERANCE)
                    if outside.any():
                        i = tuple(int(k) for k in np.argwhere(outside)[0])
                        self.problems.add('obs_bounds', f'{where(j)}, {agent}: observation[{", ".join(map(str, i))}] '
                                                        f'= {obs[i]:g} lies outside the observation space '
                                                        f'[{space.low[i]:g}, {space.high[i]:g}]')
            else:
                if final or not any_discrete:
                    continue
                self._masks(step, j, where)

    def _masks(self, step: BattleStep, j: int, where) -> None:
        to_move, agents = step.to_move[j], self.vec.agents
        has_legal = np.array([step.seat_mask(s)[j].any() for s in range(len(agents))])
        if not np.array_equal(has_legal, to_move):
            self.problems.add('to_move', f'{where(j)}: to_move is {to_move.tolist()} but the action masks give legal '
                                         f'actions to {has_legal.tolist()}; expected a seat to move exactly when its '
                                         f'mask has a True entry')
        if self.vec.turn_based:
            if has_legal.all():
                self.problems.add('both_move', f'{where(j)}: both {agents[0]} and {agents[1]} have legal actions in a '
                                               f'turn-based game; expected an all-False action_mask for the seat not '
                                               f'to move')
            elif not has_legal.any():
                self.problems.add('none_move', f'{where(j)}: no seat has a legal action, yet the game goes on; '
                                               f'expected a True entry in the action_mask of the seat to move')
            else:
                self.turns += 1
                if not step.per_seat and np.array_equal(step.obs[j, 0], step.obs[j, 1]):
                    self.first_alike = self.first_alike or where(j)
                    self.alike += 1
        else:
            for s in np.flatnonzero(~has_legal):
                self.problems.add('idle_seat', f'{where(j)}, {agents[s]}: action_mask is all False in a game that is '
                                               f'not turn-based; expected a legal action for every seat, or '
                                               f'turn_based = True on the class if the seats take turns')

    def end(self, step: BattleStep, j: int, totals: np.ndarray, where: str) -> None:
        """The result of the game that ended in row ``j``, against its rewards ``totals`` per seat."""
        result, agents = step.result[j].astype(int), self.vec.agents
        if not (set(result.tolist()) <= {-1, 0, 1} and result[0] == -result[1]):
            self.problems.add('result', f'{where}: results {result.tolist()} at the game\'s end; expected +1/-1 (a win '
                                        f'and a loss) or 0/0 (a draw)')
            return
        if getattr(self.vec, 'general_sum', False):  # the higher return wins; the loser may have gained too
            difference = float(totals[0] - totals[1])
            expected = 0 if abs(difference) <= TOLERANCE else int(np.sign(difference))
            if result[0] != expected:
                self.problems.add('result_sign', f"{where}: infos['result'] is {RESULT_NAME[int(result[0])]!r} for "
                                                 f"{agents[0]} but the seats' rewards sum to {float(totals[0]):+g} and "
                                                 f'{float(totals[1]):+g}; expected the seat with the higher rewards to '
                                                 f'win, equal rewards to draw (a general-sum game)')
            return
        for s, agent in enumerate(agents):
            name, total = RESULT_NAME[int(result[s])], float(totals[s])
            if result[s] * total < 0:
                self.problems.add('result_sign', f"{where}, {agent}: infos['result'] is {name!r} but the game's "
                                                 f'rewards sum to {total:+g}; expected the result to agree with the '
                                                 f'sign of the rewards (the league records the result, the learner '
                                                 f'learns from the rewards)')
            elif result[s] and abs(total) <= TOLERANCE:
                self.warnings.add('result_zero', f"{where}, {agent}: infos['result'] is {name!r} but the game's "
                                                 f'rewards sum to 0: the learner sees nothing of the result')

    def seats_warning(self, label: str) -> None:
        if self.alike and 'seats' not in self.warnings:
            self.warnings.add('seats', f'{label}: in {self.alike} of {self.turns} turn-based positions the seat to move '
                                       f'and the waiting seat got the same observation (first at {self.first_alike}); '
                                       f'the value head is trained on both seats\' observations and learns their '
                                       f'average there instead of either seat\'s value: add a feature that says '
                                       f'whose turn it is (e.g. 1.0 for the seat to move, 0.0 for the other)')
