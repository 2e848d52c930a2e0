"""Recurrent state in collection: carried across chunks, zeroed per column at resets, recorded per window.

The decisive check: the learner's forward over each window, started from the state the chunk
recorded and zeroed where the chunk says an episode began, reproduces the log-probs and values
the policy had while acting, in the single-agent collector and in battles (home policy in
self-play and against a frozen recurrent opponent).
"""
import numpy as np
import pytest

import sparring.dizoo  # noqa: F401  (registers the envs)
from sparring.config import compile_config, compile_section
from sparring.config.registry import POLICY_REGISTRY
from sparring.framework.run_setup import complete_league_config
from sparring.framework.serial_run import SerialRun
from sparring.worker.battle_collector import BattleCollector
from sparring.worker.chunk import Chunk
from sparring.worker.collector import SampleCollector
from sparring.worker.env.battle import make_battle_env
from sparring.worker.env.manager import make_env_manager
from sparring.worker.evaluator import Evaluator
from tests.configs import tiny_league_config
from tests.recurrent import StateSpy, recomputed

pytestmark = pytest.mark.usefixtures('one_torch_thread')

LSTM = dict(type='lstm', hidden_size=8, encoder_sizes=[8], bptt_len=4)


def _lstm_policy(env, n_steps=12, seed=0):
    cfg = compile_section('policy', dict(type='ppo', model=LSTM, collect=dict(n_steps=n_steps)))
    return POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=seed)


def test_recomputed_windows_reproduce_the_acting_log_probs_across_chunks_and_resets():
    # cue_recall episodes last 5 steps: they straddle the 4-step windows and the 12-step chunks
    env = make_env_manager(dict(type='cue_recall', delay=3), 3, seed=0)
    policy = _lstm_policy(env)
    collector = SampleCollector(env, policy, 12)
    for _ in range(3):
        chunk = collector.collect()
        chunk.validate(collector.spec)
        data = chunk.data
        assert data['window_state_0'].shape == (3, 3, 8) and data['window_state_1'].shape == (3, 3, 8)
        log_prob, value = recomputed(policy, data)
        np.testing.assert_allclose(log_prob, data['log_prob'], atol=1e-6)
        np.testing.assert_allclose(value, data['value'], atol=1e-6)
        assert (data['terminated'][:-1].any(axis=1)).any()  # resets inside the chunk were exercised
    # a learner that forgot the resets would not reproduce them
    bad = dict(data, terminated=np.zeros_like(data['terminated']))
    assert not np.allclose(recomputed(policy, bad)[0], data['log_prob'], atol=1e-4)


def test_state_is_carried_across_chunk_boundaries_and_zeroed_per_column_at_episode_ends():
    env = make_env_manager(dict(type='cartpole'), 4, seed=1)  # episodes of different lengths per column
    policy = _lstm_policy(env, n_steps=16)
    spy = StateSpy(policy)
    collector = SampleCollector(env, policy, 16)
    first = collector.collect().data
    carried = tuple(s.copy() for s in collector._state)
    second = collector.collect().data
    # the second chunk's first window starts from the state the first chunk ended with
    for i, part in enumerate(carried):
        np.testing.assert_array_equal(second[f'window_state_{i}'][0], part)
    done = np.concatenate([first['terminated'] | first['truncated'], second['terminated'] | second['truncated']])
    assert done.any() and not done.all(axis=1).any()  # some columns end while others go on
    for t in range(1, 32):
        for column in range(4):
            # zeros for a new episode, else exactly the state the previous step returned
            expected = np.zeros(8) if done[t - 1, column] else spy.returned[t - 1][0][column]
            np.testing.assert_array_equal(spy.states[t][0][column], expected)
    # each window's recorded state is the one the policy acted from at the window's first step
    for w in range(4):
        np.testing.assert_array_equal(first['window_state_0'][w], spy.states[4 * w][0])


def test_collector_reset_starts_from_zero_state_and_feed_forward_chunks_have_no_windows():
    env = make_env_manager(dict(type='cartpole'), 2, seed=0)
    collector = SampleCollector(env, _lstm_policy(env, n_steps=8), 8)
    collector.collect()
    collector.reset()
    assert not any(part.any() for part in collector._state)
    cfg = compile_section('policy', dict(type='ppo', collect=dict(n_steps=8)))
    mlp = POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space)
    data = SampleCollector(env, mlp, 8).collect().data
    assert not any(k.startswith('window_') for k in data)


def test_chunk_validates_window_arrays_against_the_spec():
    env = make_env_manager(dict(type='cartpole'), 2, seed=0)
    collector = SampleCollector(env, _lstm_policy(env, n_steps=8), 8)
    data = collector.collect().data
    windows, columns, width = data['window_state_0'].shape
    Chunk(data, version=0).validate(collector.spec)
    with pytest.raises(ValueError, match=f"field 'window_state_0' must be float32 \\[{windows}, {columns}, {width}\\]"):
        Chunk(dict(data, window_state_0=np.zeros((windows + 1, columns, width), np.float32)),
              version=0).validate(collector.spec)
    with pytest.raises(ValueError, match="missing field 'window_state_1'"):
        Chunk({k: v for k, v in data.items() if k != 'window_state_1'}, version=0).validate(collector.spec)
    with pytest.raises(ValueError, match="unexpected field 'window_state_2'"):
        Chunk(dict(data, window_state_2=data['window_state_0']), version=0).validate(collector.spec)


def test_evaluator_carries_and_resets_the_state():
    env = make_env_manager(dict(type='cue_recall', delay=2), 2, seed=0)
    policy = _lstm_policy(env)
    spy = StateSpy(policy)
    result = Evaluator(env, policy, n_episodes=4).evaluate()
    assert len(result.returns) == 4
    # episodes last 4 steps: the state is zero at each episode's first step and only there
    for t, state in enumerate(spy.states):
        assert (not state[0].any()) == (t % 4 == 0)


def _battle(game='tictactoe', opponent='self', n_steps=8, num_envs=3):
    env = make_battle_env(dict(type=game), num_envs, 0)
    policy = _lstm_policy(env, n_steps=n_steps)
    other = policy if opponent == 'self' else _lstm_policy(env, n_steps=n_steps, seed=5)
    return BattleCollector(env, policy, n_steps, lambda slot: ('me' if opponent == 'self' else 'frozen', other),
                           player_id='me'), policy, other


@pytest.mark.parametrize('opponent', ['self', 'frozen'])
def test_battle_windows_reproduce_the_home_policy_log_probs(opponent):
    collector, policy, other = _battle(opponent=opponent)
    for _ in range(3):
        chunk = collector.collect()
        chunk.validate(collector.spec)
        data = chunk.data
        assert data['window_state_0'].shape == (2, 6, 8)
        log_prob, value = recomputed(policy, data)
        home = data['value_mask']
        np.testing.assert_allclose(log_prob[home], data['log_prob'][home], atol=1e-6)
        np.testing.assert_allclose(value[home], data['value'][home], atol=1e-6)
    assert chunk.results  # games ended inside the chunks
    policy.learn(data)  # the learner takes the battle chunk as it comes


def test_recurrent_opponent_keeps_a_state_per_slot_acts_every_step_and_is_reset_when_its_game_ends():
    collector, policy, other = _battle(opponent='frozen', n_steps=4)
    spy = StateSpy(other)
    arena = collector.arena
    finished = arena.finished
    ended = []

    def spy_finished(step):
        out = finished(step)
        ended.append({slot for slot, _, _ in out})
        return out

    arena.finished = spy_finished
    for _ in range(6):
        collector.collect()
    # the opponent acts for all 3 slots at every step, also where it is not to move (turn-based)
    assert len(spy.states) == 24 and all(s[0].shape == (3, 8) for s in spy.states)
    assert any(ended)
    for t in range(1, 24):
        for slot in range(3):
            # zeros for a new game, else exactly the state its previous step returned
            expected = np.zeros(8) if slot in ended[t - 1] else spy.returned[t - 1][0][slot]
            np.testing.assert_array_equal(spy.states[t][0][slot], expected)
    assert set(arena.opponent_states) == {id(other)}


def test_league_run_with_lstm_players_and_frozen_lstm_snapshots(tmp_path):
    cfg = compile_config(tiny_league_config(
        tmp_path / 'lstm_league', policy=dict(model=LSTM, learn=dict(num_minibatches=2)),
        league=dict(active_players=dict(naive_sp=1), players=dict(naive_sp=dict(one_phase_step=2))),
        train=dict(max_env_steps=10_000, checkpoint_every_iters=50)), save=False)
    complete_league_config(cfg)
    run = SerialRun(cfg)
    try:
        for _ in range(5):
            run.train_round()
        historical = {p.player_id for p in run.league.historical_players}
        # games against frozen snapshots were played (and reported) alongside self-play
        assert any(away in historical and rec['games'] > 0 for _, away, rec in run.league.payoff.played_pairs())
        assert all(run.pool.get(p.param_ref).recurrent for p in run.league.historical_players)
        report = run.evaluate()
        assert set(report[run.player_ids[0]]) >= {'random'}
    finally:
        run.close()
