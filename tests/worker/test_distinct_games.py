"""Distinct games: the fingerprint of each game, the evaluator's count of the games it recorded, and the
evaluation's report and log text, which keep the count and name the opponents whose games repeated."""
from types import SimpleNamespace

import numpy as np
import pytest

import sparring.dizoo  # noqa: F401  (registers the games and bots)
from sparring.config.registry import BOT_REGISTRY
from sparring.policy.bot import Bot
from sparring.worker.battle_evaluator import BattleEvaluator
from sparring.worker.env.battle import make_battle_env
from sparring.worker.evaluation import GameEvaluation, GameOutcomes, distinct_games_of
from sparring.worker.game_fingerprints import GameFingerprints


def _step(obs, done, result=None):
    done = np.asarray(done, dtype=bool)
    return SimpleNamespace(obs=np.asarray(obs, dtype=np.float32), terminated=done, truncated=np.zeros_like(done),
                           result=np.asarray(result if result is not None else np.zeros((len(done), 2)), np.int8))


def test_a_fingerprint_names_the_whole_game_and_is_handed_back_when_it_ends():
    fingerprints = GameFingerprints(3)
    # Slots 0 and 1 play the same two steps; slot 2 plays other actions, and is still playing.
    assert fingerprints.step([[1, 0], [1, 0], [2, 0]], _step([[5], [5], [5]], [False, False, False])) == {}
    ended = fingerprints.step([[0, 3], [0, 3], [0, 3]], _step([[9], [9], [9]], [True, True, False],
                                                              [[1, -1], [1, -1], [0, 0]]))
    assert sorted(ended) == [0, 1] and ended[0] == ended[1]
    ended_later = fingerprints.step([[0, 3]] * 3, _step([[9]] * 3, [False, False, True], [[1, -1]] * 3))
    assert list(ended_later) == [2] and ended_later[2] != ended[0]
    # A slot starts a new game after its end: the same single step again is another game than the first.
    again = GameFingerprints(1)
    first = again.step([[1, 0]], _step([[5]], [True], [[1, -1]]))[0]
    assert again.step([[1, 0]], _step([[5]], [True], [[1, -1]]))[0] == first
    assert again.step([[1, 0]], _step([[5]], [True], [[-1, 1]]))[0] != first  # another result: another game


class _FirstFreeCell(Bot):
    """Always the lowest legal action: a player without chance."""

    def _choose(self, obs, action_mask):
        return action_mask.argmax(axis=1)


def test_the_evaluator_counts_the_distinct_games_it_recorded():
    env = make_battle_env(dict(type='tictactoe'), 1, 0)
    first_free = _FirstFreeCell({}, env.observation_space, env.action_space)
    evaluator = BattleEvaluator(lambda: make_battle_env(dict(type='tictactoe'), 3, 0), n_episodes=7,
                                deterministic=True)
    random_bot = BOT_REGISTRY.get('random')({}, env.observation_space, env.action_space, seed=4)
    same, varied = evaluator.evaluate(first_free, [('first_free', first_free), ('random', random_bot)])
    # Against itself the home seat changes nothing: both seats take the first free cell, one game seven times.
    assert (same.games, same.distinct_games) == (7, 1)
    # The second of two games in a slot against the random bot: the home player moves first once, second once.
    assert varied.games == 7 and 2 <= varied.distinct_games <= 7
    env.close()


def _outcomes(**counts):
    results = {'heuristic': ['win', 'draw', 'loss', 'win'], 'random': ['win'] * 4}
    return GameOutcomes(results, counts)


def test_the_report_keeps_the_count_and_its_text_names_the_repeated_games():
    report, score, text = GameEvaluation.summarise(_outcomes(heuristic=2, random=4), [])
    assert report['heuristic'] == dict(win=0.5, draw=0.25, loss=0.25, games=4, distinct_games=2)
    assert report['random']['distinct_games'] == 4 and score == 0.625
    assert text == ('heuristic:w0.50/d0.25/l0.25 random:w1.00/d0.00/l0.00 '
                    '(games repeated: heuristic 2 distinct of 4)')
    # Outcomes without counts (a peer that does not count them): the report as before, no note.
    report, _, text = GameEvaluation.summarise({'random': ['win'] * 4}, [])
    assert report == {'random': dict(win=1.0, draw=0.0, loss=0.0, games=4)} and '(' not in text
    # A chance opponent that repeats a game now and then is not named: more than half its games were distinct.
    assert '(' not in GameEvaluation.summarise(_outcomes(heuristic=3, random=3), [])[2]
    assert distinct_games_of({'random': ['win']}) == {}


@pytest.mark.parametrize('counts, match', [
    (dict(heuristic=5), r"^5 distinct games against 'heuristic'; expected 1 to 4, the games played$"),
    (dict(heuristic=0), r"^0 distinct games against 'heuristic'; expected 1 to 4"),
    (dict(bot=1), r"^distinct games counted against \['bot'\], which played no games here$"),
])
def test_counts_that_do_not_fit_the_outcomes_are_refused(counts, match):
    with pytest.raises(ValueError, match=match):
        GameEvaluation.summarise(_outcomes(**counts), [])
