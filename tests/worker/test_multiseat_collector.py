"""The multi-seat collector: a home player in one seat of three-player Kuhn poker and drawn opponents in the others;
chunks of S columns per slot, masks of the seats the home policy holds, the home seat going round, and every
finished game reported once as a ranking in job order."""
import collections

import numpy as np
import pytest

from sparring.config import compile_section
from sparring.config.registry import BOT_REGISTRY, POLICY_REGISTRY
from sparring.framework.seat_games import RankedGames
from sparring.league import OneVsOneLeague
from sparring.worker.env.multiseat_api import MultiSeatVecEnv
from sparring.worker.multiseat_collector import MultiSeatCollector

pytest.importorskip('pyspiel')
from sparring.dizoo.openspiel.multiseat_env import OpenSpielMultiSeatEnv

S = 3


def _env(num_envs, seed=0):
    return OpenSpielMultiSeatEnv(dict(game='kuhn_poker', game_params=dict(players=S)), num_envs, seed)


def _policy(env, seed=0):
    cfg = compile_section('policy', dict(type='ppo', learn=dict(epochs=1, num_minibatches=1)))
    return POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=seed)


def _collector(num_envs=4, n_steps=12, self_seats=0, train_own_seats=True):
    """Against two random bots, or with ``self_seats`` of the two opponents' seats given to the home player."""
    env = _env(num_envs)
    policy = _policy(env)
    bots = [BOT_REGISTRY.get('random')({}, env.observation_space, env.action_space, seed=k) for k in (1, 2)]
    jobs = []

    def sample(slot):
        ids = ['me'] + ['me' if k < self_seats else f'bot_{k}' for k in range(S - 1)]
        opponents = [policy if k < self_seats else bots[k] for k in range(S - 1)]
        jobs.append(slot)
        return ids, opponents

    return MultiSeatCollector(env, policy, n_steps, sample, player_id='me', train_own_seats=train_own_seats), jobs


def test_a_chunk_has_a_column_per_seat_and_learns_only_where_the_home_player_sits():
    collector, _ = _collector()
    chunk = collector.collect()
    chunk.validate(collector.spec)
    d = chunk.data
    assert d['obs'].shape == (12, 4 * S, 3 * 4 + 5) and chunk.env_steps == 12 * 4
    assert (d['train_mask'] <= d['value_mask']).all()
    t, c = np.nonzero(d['train_mask'])
    assert d['action_mask'][t, c, d['action'][t, c]].all()
    # against two bots: one column of three per slot holds the home player at every step
    assert (d['value_mask'].reshape(12, 4, S).sum(-1) == 1).all()


def test_the_home_seat_goes_round_and_every_game_is_reported_once_in_job_order():
    collector, jobs = _collector(num_envs=2, n_steps=40)
    seats_before = collector.home_seat.copy()
    chunk = collector.collect()
    assert len(chunk.rankings) == collector.episodes == len(jobs) - 2  # each slot's first job, then one per game
    for ids, ranks, teams in chunk.rankings:
        assert ids == ('me', 'bot_0', 'bot_1') and sorted(ranks)[0] == 0 and len(ranks) == S and teams is None
    games_per_slot = np.bincount(jobs[2:], minlength=2)
    assert (collector.home_seat == (seats_before + games_per_slot) % S).all()
    # the home player's return of each game is its chips: in three-player Kuhn a hand is won or lost by 1 to 4
    assert all(r != 0 and -2 <= r <= 4 for r in chunk.episode_returns)


def test_the_ranks_are_those_of_each_seats_chips():
    collector, _ = _collector(num_envs=3, n_steps=30)
    step_of = collector.env.step
    seen = []

    def spy(actions):
        step = step_of(actions)
        for b in np.flatnonzero(step.terminated):
            seats = collector.home_seat[b], (collector.home_seat[b] + 1) % S, (collector.home_seat[b] + 2) % S
            seen.append(tuple(int(step.rank[b, s]) for s in seats))
        return step

    collector.env.step = spy
    chunk = collector.collect()
    assert [ranks for _, ranks, _ in chunk.rankings] == seen


@pytest.mark.parametrize('train_own_seats, held', [(True, 2), (False, 1)])
def test_self_play_seats_are_learnt_from_when_asked(train_own_seats, held):
    collector, _ = _collector(self_seats=1, train_own_seats=train_own_seats)
    d = collector.collect().data
    assert (d['value_mask'].reshape(12, 4, S).sum(-1) == held).all()


def test_a_job_of_the_wrong_size_is_refused():
    env = _env(2)
    policy = _policy(env)
    collector = MultiSeatCollector(env, policy, 4, lambda slot: (['me', 'x'], [policy]))
    with pytest.raises(ValueError, match='a job for 3 seats gave 2 player ids and 1 opponents'):
        collector.collect()


class TeamCoins(MultiSeatVecEnv):
    """Two teams of two: every seat shows 0 or 1 at once, the team with more ones wins (ties draw)."""

    teams = (0, 1, 0, 1)

    def __init__(self, num_envs, seed=0):
        from gymnasium import spaces
        super().__init__({}, num_envs, seed)
        self.num_seats, self.turn_based = 4, False
        self.observation_space = spaces.Box(0.0, 1.0, (2,), np.float32)
        self.action_space = spaces.Discrete(2)

    def _reset_games(self, rows):
        pass

    def _advance(self, actions):
        team_ones = np.stack([actions[:, 0] + actions[:, 2], actions[:, 1] + actions[:, 3]], axis=1)
        team_rank = (team_ones[:, ::-1] > team_ones).astype(np.int8)  # 1 where the other team showed more
        rank = team_rank[:, [0, 1, 0, 1]]
        B = len(actions)
        return np.zeros((B, 4), np.float32), np.ones(B, bool), np.zeros(B, bool), rank

    def _observe(self, rows):
        n = len(rows)
        return np.zeros((n, 4, 2), np.float32), np.ones((n, 4, 2), bool), np.ones((n, 4), bool)


def test_a_team_game_reports_each_games_teams_in_job_order_and_the_league_compares_only_rivals():
    env = TeamCoins(3)
    policy = _policy(env)
    bots = [BOT_REGISTRY.get('random')({}, env.observation_space, env.action_space, seed=k) for k in range(3)]
    ids = ['naive_sp_0', 'bot_0', 'bot_1', 'bot_2']
    collector = MultiSeatCollector(env, policy, 5, lambda slot: (ids, bots), player_id='naive_sp_0')
    chunk = collector.collect()
    assert len(chunk.rankings) == 15
    for slot_game, (_, ranks, teams) in enumerate(chunk.rankings):
        home = slot_game % 3 + slot_game // 3  # slot b starts at seat b and moves on one seat a game
        seats = [(home + k) % 4 for k in range(4)]
        assert teams == tuple(TeamCoins.teams[s] for s in seats)
        assert ranks[0] == ranks[2] and ranks[1] == ranks[3]  # job order: home, bot_0 (a rival), bot_1 (a mate)
    league = OneVsOneLeague(dict(seats=4, active_players=dict(naive_sp=1), payoff=dict(decay=1.0),
                                 reference_players=[dict(player_id=i, param_ref=f'bot:{i}') for i in ids[1:]]))
    counters = collections.Counter()
    RankedGames.record(league, RankedGames.entry('naive_sp_0', chunk.rankings, 0), set(), counters)
    assert counters['games'] == 15
    assert league.payoff.get_record('naive_sp_0', 'bot_1')['games'] == 0  # teammates in every game
    assert league.payoff.get_record('naive_sp_0', 'bot_0')['games'] == 15
