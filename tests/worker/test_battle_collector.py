"""BattleCollector and BattleEvaluator: seats, masks, results, self-play columns, bootstrapping."""
import numpy as np
import pytest

import sparring.dizoo  # noqa: F401  (registers the games and bots)
from sparring.config import compile_section
from sparring.config.registry import BOT_REGISTRY, POLICY_REGISTRY
from sparring.policy.bot import Bot
from sparring.worker.battle_collector import BattleCollector
from sparring.worker.battle_evaluator import BattleEvaluator
from sparring.worker.env.battle import make_battle_env


def _policy(env, seed=0):
    cfg = compile_section('policy', dict(type='ppo', learn=dict(epochs=1, num_minibatches=1)))
    return POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=seed)


def _bot(env, name='random', seed=1):
    return BOT_REGISTRY.get(name)({}, env.observation_space, env.action_space, seed=seed)


def _collector(game, num_envs, opponent='bot', n_steps=16, seed=0, both_sides=True):
    env = make_battle_env(dict(type=game), num_envs, seed)
    policy = _policy(env, seed)
    other = policy if opponent == 'self' else _bot(env)
    calls = []

    def sample(slot):
        calls.append(slot)
        return ('me' if opponent == 'self' else 'random'), other

    return BattleCollector(env, policy, n_steps, sample, player_id='me', train_both_sides=both_sides), calls


def test_chunk_layout_masks_and_legal_actions():
    collector, _ = _collector('connect_four', num_envs=4)
    chunk = collector.collect()
    chunk.validate(collector.spec)
    d = chunk.data
    assert d['obs'].shape == (16, 8, 3, 6, 7) and d['reward'].shape == (16, 8)
    assert chunk.env_steps == 16 * 4  # a column per seat, but one env step moves both seats' game
    # the policy is trained only where it chose an action, and every such action was legal
    assert (d['train_mask'] <= d['value_mask']).all()
    t, c = np.nonzero(d['train_mask'])
    assert d['action_mask'][t, c, d['action'][t, c]].all()
    # against a bot only the home seat of each slot is learnt from: one of the two columns per slot
    per_slot = d['value_mask'].reshape(16, 4, 2).sum(-1)
    assert (per_slot == 1).all()


def test_seats_alternate_between_games():
    collector, _ = _collector('tictactoe', num_envs=2, n_steps=9)
    arena = collector.arena
    played = {0: [], 1: []}  # slot -> home seat of each finished game, in order
    finished = arena.finished

    def spy(step):
        seats = arena.home_seat.copy()
        out = finished(step)
        for slot, _, _ in out:
            played[slot].append(int(seats[slot]))
        return out

    arena.finished = spy
    for _ in range(20):
        collector.collect()
    for slot, seats in played.items():
        assert len(seats) > 10
        # slot b starts on seat b % 2 and switches seat after every game
        assert seats == [(slot + i) % 2 for i in range(len(seats))]
    everything = played[0] + played[1]
    assert abs(everything.count(0) - everything.count(1)) <= 2


def test_every_finished_game_is_reported_exactly_once():
    collector, calls = _collector('tictactoe', num_envs=3, n_steps=7)
    total_results, total_ends = 0, 0
    for _ in range(15):
        chunk = collector.collect()
        total_results += len(chunk.results)
        ends = chunk.data['terminated'] | chunk.data['truncated']
        total_ends += int(ends.reshape(7, 3, 2)[:, :, 0].sum())  # both seat columns carry the same flag
        assert all(opponent == 'random' and outcome in ('win', 'draw', 'loss') for opponent, outcome in chunk.results)
    assert total_results == total_ends == collector.episodes > 0
    # one opponent draw per slot at the start, then one per finished game
    assert len(calls) == 3 + total_results


def test_self_play_learns_from_both_seats_only_when_asked():
    both, _ = _collector('tictactoe', num_envs=2, opponent='self', n_steps=12)
    d = both.collect().data
    assert (d['value_mask'].reshape(12, 2, 2).sum(-1) == 2).all()
    # turn-based: exactly one seat of a game moves each step
    assert (d['train_mask'].reshape(12, 2, 2).sum(-1) == 1).all()
    one, _ = _collector('tictactoe', num_envs=2, opponent='self', n_steps=12, both_sides=False)
    d = one.collect().data
    assert (d['value_mask'].reshape(12, 2, 2).sum(-1) == 1).all()


def test_truncated_games_are_bootstrapped_from_their_final_observation():
    env = make_battle_env(dict(type='pong_duel', max_steps=20), 2, 0)
    policy = _policy(env)
    bot = _bot(env)
    collector = BattleCollector(env, policy, 25, lambda slot: ('random', bot), player_id='me')
    d = collector.collect().data
    truncated = d['truncated'] & ~d['terminated'] & d['value_mask']
    assert truncated.any()
    t, c = np.nonzero(truncated)
    assert (d['next_value'][t, c] != 0).all()  # V(final obs), not a zero as for a terminated game
    terminated = d['terminated'] & d['value_mask']
    assert (d['next_value'][terminated] == 0).all()


def test_evaluator_plays_the_quota_on_both_seats():
    evaluator = BattleEvaluator(lambda: make_battle_env(dict(type='connect_four'), 4, 5), n_episodes=10)
    env = make_battle_env(dict(type='connect_four'), 1, 0)
    heuristic = _bot(env, 'connect_four_heuristic', seed=3)
    random_bot = _bot(env, 'random', seed=4)
    (result,) = evaluator.evaluate(heuristic, [('random', random_bot)])
    assert result.games == 10 and result.opponent_id == 'random'
    assert result.win_rate >= 0.8
    with pytest.raises(ValueError, match='n_episodes must be >= 1'):
        BattleEvaluator(lambda: None, n_episodes=0)


class _FirstFreeCell(Bot):
    """Always the lowest legal action."""

    def _choose(self, obs, action_mask):
        return action_mask.argmax(axis=1)


def test_the_evaluator_records_each_games_seat():
    # Both sides take the first free cell: the first mover holds 0, 2, 4 and completes the diagonal 2-4-6
    # with its fourth stone, so seat 0 wins every game and seat 1 loses every game (worked by hand).
    env = make_battle_env(dict(type='tictactoe'), 1, 0)
    first_free = _FirstFreeCell({}, env.observation_space, env.action_space)
    evaluator = BattleEvaluator(lambda: make_battle_env(dict(type='tictactoe'), 3, 0), n_episodes=7)
    (result,) = evaluator.evaluate(first_free, [('first_free', first_free)])
    assert sorted(result.seats) == [0, 0, 0, 0, 1, 1, 1]  # slots of 3, 2, 2 games, each alternating from its own seat
    assert [o for o, s in zip(result.outcomes, result.seats) if s == 0] == ['win'] * 4
    assert [o for o, s in zip(result.outcomes, result.seats) if s == 1] == ['loss'] * 3
    assert [len(result.outcomes), len(result.returns)] == [7, 7]


def test_a_policy_that_learns_from_a_field_no_collection_records_is_refused_when_the_collector_is_built():
    from sparring.policy.chunk_spec import ChunkField
    env = make_battle_env(dict(type='tictactoe'), 2, 0)
    policy = POLICY_REGISTRY.get('ppo')(compile_section('policy', dict(type='ppo')), env.observation_space,
                                        env.action_space)
    policy.chunk_spec = lambda spaces: type(policy).chunk_spec(policy, spaces).plus(ChunkField('gaze', np.float32))
    with pytest.raises(ValueError, match=r"battle collector: the policy learns from \['gaze'\], which this "
                                         r"collection does not record"):
        BattleCollector(env, policy, 4, lambda slot: ('me', policy))
    env.close()
