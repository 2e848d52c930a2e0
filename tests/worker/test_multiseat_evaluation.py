"""A multi-seat evaluation in a team game: opponents are dealt team by team (seat by seat in a free-for-all), and
a teammate's shared rank is no game against it in the report."""
import pytest
from easydict import EasyDict

from sparring.config import compile_section
from sparring.config.registry import BOT_REGISTRY, POLICY_REGISTRY
from sparring.dizoo.target_chase import TargetChaseEnv
from sparring.worker.multiseat_evaluation import MultiSeatEvaluation

pytestmark = pytest.mark.usefixtures('one_torch_thread')


def test_a_teammates_games_are_left_out_of_how_often_the_player_finished_ahead():
    # Six seats in three teams of two, the player's team last in the first game and first in the second; 'greedy' is
    # its teammate in the first game and a rival (twice) in the second, 'random' a rival four times, then a teammate
    # and a rival twice.
    teams = [0, 0, 1, 1, 2, 2]
    results = [[['greedy', 'random', 'random', 'random', 'random'], [4, 4, 0, 0, 2, 2], teams],
               [['random', 'greedy', 'greedy', 'random', 'random'], [0, 0, 2, 2, 4, 4], teams]]
    report, score, _ = MultiSeatEvaluation.summarise(results, [-1.0, 1.0])
    # greedy: ahead of both its rival seats; random: behind four seats, then ahead of two (the teammate left out)
    assert report['ahead'] == dict(greedy=1.0, random=pytest.approx(2 / 6)) and score == pytest.approx(2 / 6)


class _Bots:
    """A pool of the scripted bots of target chase, by reference ``bot:<name>``."""

    def __init__(self, env):
        self.spaces = env.observation_space, env.action_space

    def get(self, ref):
        return BOT_REGISTRY.get(ref[len('bot:'):])({}, *self.spaces, seed=0)


def _evaluate(games, **env):
    cfg = EasyDict(env=dict(type='target_chase', evaluator_env_num=4, n_evaluator_episodes=games, **env))
    probe = TargetChaseEnv(cfg.env, 1, 0)
    policy = POLICY_REGISTRY.get('ppo')(compile_section('policy', dict(type='ppo')), probe.observation_space,
                                        probe.action_space, seed=0)
    opponents = [('greedy', 'bot:target_chase_greedy'), ('random', 'bot:random')]
    rankings, returns = MultiSeatEvaluation(cfg, seed=0)(policy, opponents, _Bots(probe))
    assert len(rankings) == len(returns) == games
    return rankings


def test_a_team_game_deals_the_opponents_team_by_team_and_a_free_for_all_seat_by_seat():
    for opponent_ids, ranks, teams in _evaluate(12, seats=6, team_size=2):
        by_team = {}
        for oid, team in zip(opponent_ids, teams[1:]):
            by_team.setdefault(team, set()).add(oid)
        assert all(len(ids) == 1 for ids in by_team.values())  # one opponent in every seat of a team
        assert len(set(ranks)) == 3 and sorted(set(teams)) == [0, 1, 2]
    dealt = [ids for ids, _, teams in _evaluate(6, seats=3) if teams is None]
    assert len(dealt) == 6 and all(ids[0] != ids[1] for ids in dealt)  # in turn, seat by seat
