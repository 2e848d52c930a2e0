"""Self-play replay: transitions carry their opponent, the buffer reports its opponent mix, and
``replay.max_opponent_age`` forgets transitions against opponents that left the league or grew too old."""
import gymnasium as gym
import numpy as np
import pytest

from sparring.config.compile import compile_section
from sparring.policy.replay_buffer import PrioritizedReplayBuffer, ReplayBuffer
from sparring.policy.replay_opponents import (MAX_ROSTER, UNTAGGED, OpponentLedger, forget_stale_opponents,
                                             opponent_code, roster_problem, roster_to_send)
from sparring.policy.sac import SACPolicy
from tests.chunks import battle_chunk


@pytest.mark.parametrize('cls', [ReplayBuffer, PrioritizedReplayBuffer])
def test_drop_keeps_the_rest_oldest_first_also_after_the_ring_wrapped(cls):
    buffer = cls(5)
    buffer.push(dict(x=np.arange(4)))
    buffer.push(dict(x=np.arange(4, 7)))  # the ring wrapped: slots hold 5 6 2 3 4, the oldest (2) at slot 2
    np.testing.assert_array_equal(buffer.storage['x'], [5, 6, 2, 3, 4])
    if buffer.prioritized:  # each transition's priority from its value, to follow it
        buffer.update_priorities(np.arange(5), buffer.storage['x'].astype(float))
    dropped = buffer.drop(np.isin(buffer.storage['x'][:5], [3, 6]))
    assert dropped == 2 and len(buffer) == 3 and buffer.position == 3
    np.testing.assert_array_equal(buffer.storage['x'][:3], [2, 4, 5])
    if buffer.prioritized:  # the priorities moved with their transitions
        np.testing.assert_allclose(buffer.tree.values(np.arange(3)), (np.array([2.0, 4.0, 5.0]) + 1e-6) ** 0.6)
        assert buffer.tree.total == pytest.approx(buffer.tree.values(np.arange(3)).sum())
    buffer.push(dict(x=np.array([9])))
    np.testing.assert_array_equal(buffer.storage['x'][:4], [2, 4, 5, 9])
    with pytest.raises(ValueError, match='expected 4 booleans'):
        buffer.drop(np.zeros(3, bool))


def test_codes_are_stable_numbers_and_the_ledger_names_mixes_and_finds_stale_ones():
    assert opponent_code('main_h1') == opponent_code('main_h1') != opponent_code('main_h2')
    assert 0 <= opponent_code('x') < 2 ** 63
    ledger = OpponentLedger()
    a, b, c = (opponent_code(n) for n in 'abc')
    codes = np.array([b, a, b, c, UNTAGGED])
    ledger.remember(['a', 'b'])  # c never named: shown by its code
    mix = ledger.mix(codes)
    assert mix == {'b': 0.4, 'a': 0.2, f'#{c:x}': 0.2, '(untagged)': 0.2} and next(iter(mix)) == 'b'  # largest first
    roster = {'a': 0, 'b': 3}  # c left the league; b is three snapshots old
    np.testing.assert_array_equal(ledger.stale(codes, roster, max_age=2), [True, False, True, True, False])
    np.testing.assert_array_equal(ledger.stale(codes, roster, max_age=None), [False, False, False, True, False])
    again = OpponentLedger()
    again.load_state_dict(ledger.state_dict())
    assert again.names == ledger.names


def test_sac_stores_the_opponent_of_each_transition_and_forgets_stale_ones():
    cfg = compile_section('policy', dict(type='sac', model=dict(hidden_sizes=[8]),
                                         learn=dict(learning_starts=10_000), replay=dict(max_opponent_age=1)))
    policy = SACPolicy(cfg, gym.spaces.Box(-1.0, 1.0, (3,), np.float32), gym.spaces.Discrete(3))
    policy.remember_opponents(['main', 'main_h1', 'main_h2'])  # a learner names those of finished games
    policy.learn(battle_chunk(['main_h1', 'main_h2']))
    policy.learn(battle_chunk(['main', 'main_h2']))
    assert len(policy.replay) == 8
    assert policy.opponent_mix() == {'main_h2': 0.5, 'main_h1': 0.25, 'main': 0.25}
    np.testing.assert_array_equal(policy.replay.storage['opponent_version'][:8], 4)
    # main_h1 is now two snapshots old, main_h2 one: the first goes.
    assert policy.forget_opponents({'main': 0, 'main_h2': 1, 'main_h1': 2}) == 2
    assert policy.opponent_mix() == {'main_h2': 4 / 6, 'main': 2 / 6}
    assert policy.forget_opponents({'main': 0}) == 4  # main_h2 left the league
    restored = SACPolicy(cfg, gym.spaces.Box(-1.0, 1.0, (3,), np.float32), gym.spaces.Discrete(3))
    restored.load_state_dict(policy.state_dict())
    assert restored.opponent_mix() == {'main': 1.0}


def test_without_max_opponent_age_nothing_is_forgotten_and_untagged_chunks_are_kept():
    cfg = compile_section('policy', dict(type='sac', model=dict(hidden_sizes=[8]), learn=dict(learning_starts=10_000)))
    policy = SACPolicy(cfg, gym.spaces.Box(-1.0, 1.0, (3,), np.float32), gym.spaces.Discrete(3))
    chunk = battle_chunk(['x', 'y'])
    del chunk['opponent'], chunk['opponent_version']
    policy.learn(chunk)
    assert policy.opponent_mix() == {'(untagged)': 1.0}
    assert policy.forget_opponents({}) == 0 and len(policy.replay) == 4


def test_the_learner_logs_the_buffer_mix_by_the_names_of_finished_games_opponents():
    from sparring.worker.chunk import Chunk
    from sparring.worker.learner import Learner
    cfg = compile_section('policy', dict(type='sac', model=dict(hidden_sizes=[8]), learn=dict(learning_starts=10_000)))
    learner = Learner(SACPolicy(cfg, gym.spaces.Box(-1.0, 1.0, (3,), np.float32), gym.spaces.Discrete(3)), 1000,
                      battle=True)
    data = battle_chunk(['main_h1', 'bot:random'])
    data.update({k: np.zeros(data['reward'].shape, np.float32) for k in ('log_prob', 'value', 'next_value')},
                value_mask=data['train_mask'])
    stats = learner.train(Chunk(data=data, version=0, results=[('main_h1', 'win'), ('bot:random', 'loss')]))
    assert stats['replay_opponents/main_h1'] == stats['replay_opponents/bot:random'] == 0.5


def _forgetting_sac(max_age=1):
    cfg = compile_section('policy', dict(type='sac', model=dict(hidden_sizes=[8]), learn=dict(learning_starts=10_000),
                                         replay=dict(max_opponent_age=max_age)))
    policy = SACPolicy(cfg, gym.spaces.Box(-1.0, 1.0, (3,), np.float32), gym.spaces.Discrete(3))
    policy.learn(battle_chunk(['main_h1', 'main_h2']))  # 2 transitions against each
    return policy


def test_forget_stale_opponents_asks_the_league_once_and_only_when_a_policy_forgets():
    calls = []

    def roster():
        calls.append(1)
        return {'main': 0, 'main_h2': 1, 'main_h1': 2}
    assert forget_stale_opponents([object(), object()], roster) == 0 and calls == []  # PPO-like: nothing asked
    policies = [_forgetting_sac(), object(), _forgetting_sac()]
    assert forget_stale_opponents(policies, roster) == 4 and calls == [1]  # main_h1's two, in each SAC
    assert [len(p.replay) for p in policies[::2]] == [2, 2]
    assert forget_stale_opponents([_forgetting_sac()], {'main': 0, 'main_h2': 1}) == 2  # a plain roster too


class _League:
    def __init__(self, ages):
        self.ages, self.asked = ages, 0

    def opponent_ages(self):
        self.asked += 1
        return self.ages


def test_the_roster_sent_to_a_learner_is_trimmed_to_the_young_and_forgets_the_same():
    league = _League({'main': 0, 'random': 0, 'main_h3': 1, 'main_h2': 2, 'main_h1': 3})
    assert roster_to_send(league, None) == {} and league.asked == 0  # no max_opponent_age: nothing sent or asked
    assert roster_to_send(object(), 1) == {}  # a single-agent league has no opponents to age
    assert roster_to_send(league, 1) == dict(opponent_ages={'main': 0, 'random': 0, 'main_h3': 1})
    full, trimmed = _forgetting_sac(max_age=1), _forgetting_sac(max_age=1)
    ages = {'main': 0, 'main_h2': 1, 'main_h1': 2}
    sent = roster_to_send(_League(ages), 1)['opponent_ages']
    assert full.forget_opponents(ages) == trimmed.forget_opponents(sent) == 2
    np.testing.assert_array_equal(full.replay.storage['opponent'][:2], trimmed.replay.storage['opponent'][:2])


@pytest.mark.parametrize('value, problem', [
    ({'main': 0, 'main_h1': 7}, None),
    ([('main', 0)], 'must be a dict'),
    ({'main': -1}, "['main'] must map a player id to an int age"),
    ({'main': 1.5}, 'int age'),
    ({'main': True}, 'int age'),
    ({'main': 2 ** 40}, 'int age in [0, 2147483647]'),
    ({str(i): 0 for i in range(MAX_ROSTER + 1)}, f'at most {MAX_ROSTER} expected'),
])
def test_a_roster_from_the_wire_is_checked(value, problem):
    found = roster_problem(value)
    assert found is None if problem is None else problem in found
