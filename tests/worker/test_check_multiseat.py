"""check-env for games of three or more seats: a good game passes, and each broken rule is named."""
import re

import numpy as np
import pytest
from gymnasium import spaces

from easydict import EasyDict

from sparring.worker.env.check import MAX_GAME_STEPS
from sparring.worker.env.check_multiseat import check_any_env, check_multiseat_env
from sparring.worker.env.multiseat_api import MultiSeatVecEnv


class Showdown(MultiSeatVecEnv):
    """Three seats show a card 0..2 in turn; the highest card wins (ties share the rank). ``flaw`` breaks one rule."""

    flaw = None

    def __init__(self, cfg, num_envs, seed=None):
        super().__init__(cfg, num_envs, seed)
        self.num_seats = 3
        self.observation_space = spaces.Box(0.0, 2.0, (3,), np.float32)
        self.action_space = spaces.Discrete(3)
        self.cards = np.zeros((num_envs, 3))
        self.turn = np.zeros(num_envs, np.int64)

    def _reset_games(self, rows):
        self.cards[rows] = 0.0
        self.turn[rows] = 0

    def _advance(self, actions):
        B = self.num_envs
        rows = np.arange(B)
        shown = actions[rows, self.turn]
        if self.flaw == 'unseeded':  # randomness from the global numpy RNG, not self.np_random
            shown = np.random.randint(0, 3, B)
        self.cards[rows, self.turn] = shown
        self.turn += 1
        over = self.turn == 3
        rank = (self.cards[:, None, :] > self.cards[:, :, None]).sum(axis=-1).astype(np.int8)
        if self.flaw == 'no_winner':
            rank = rank + 1
        rank[~over] = 0
        return np.zeros((B, 3), np.float32), over, np.zeros(B, bool), rank

    def _observe(self, rows):
        n = len(rows)
        obs = np.clip(self.cards[rows, None, :].repeat(3, axis=1), 0, 2).astype(np.float32)
        to_move = np.zeros((n, 3), bool)
        live = self.turn[rows] < 3
        to_move[np.arange(n)[live], self.turn[rows][live]] = True
        mask = to_move[:, :, None].repeat(3, axis=2)
        if self.flaw == 'waiting_mask':
            mask[:] = True
        return obs, mask, to_move


def _check(flaw=None, teams=None, games=12):
    """check-env of a Showdown with ``flaw`` (an unregistered class, so no registry is touched)."""
    cls = type('Showdown', (Showdown,), dict(flaw=flaw, teams=teams))
    return check_multiseat_env(cls, EasyDict(type='showdown'), games, 0, MAX_GAME_STEPS)


def test_a_game_that_keeps_the_rules_passes():
    report = _check()
    assert report.passed, report.format()
    assert '12 random games of 3 seats, 4 side by side, each seat for itself' in report.format()


@pytest.mark.parametrize('flaw, teams, message', [
    ('no_winner', None, r'ended with ranks \[.*\]; expected ranks in 0..2 with at least one seat at 0'),
    ('waiting_mask', None, 'a seat that waits has one'),
    (None, (0, 0, 1), r'teammates \[0, 1\] differ; expected one rank per team'),
    (None, (0, 0), r'teams is \(0, 0\); expected one team index per seat \(3\)'),
])
def test_each_broken_rule_is_named(flaw, teams, message):
    report = _check(flaw, teams)
    assert not report.passed
    assert any(re.search(message, p) for p in report.problems), report.format()


def test_a_game_whose_randomness_is_not_seeded_is_named():
    np.random.seed(0)
    report = _check('unseeded')
    expected = ("two runs with seed 0 played different games; expected the env's randomness to come from "
                "self.np_random, seeded by the constructor")
    assert report.problems == [expected]


def test_check_env_sends_each_kind_of_game_to_its_checker():
    pytest.importorskip('pyspiel')
    import sparring.dizoo  # noqa: F401  (registers the OpenSpiel envs)
    report = check_any_env(dict(type='openspiel_multiseat', game='kuhn_poker', game_params=dict(players=3)), games=6)
    assert report.passed and 'random games of 3 seats, 4 side by side' in report.format()


def test_a_two_seat_game_goes_to_the_two_seat_checker():
    import sparring.dizoo  # noqa: F401  (registers the games)
    report = check_any_env('tictactoe', games=2)
    assert report.passed and 'vectorised' in report.format()
