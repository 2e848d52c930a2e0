"""Recurrent policies in games of three seats (three-player Kuhn poker): the home policy's state per (slot, seat) and a
recurrent opponent's per seat it plays, each equal at every step to a fresh unroll of that seat's observations since
its game began (so zeroed when a slot's game ends and a new job is seated, and carried across chunks); the chunk's
window states replay the home policy's log-probs and values as the learner computes them; and a short league run
of recurrent players through ``serial_pipeline``."""
import copy

import numpy as np
import pytest

from sparring.config import compile_section
from sparring.config.registry import BOT_REGISTRY, POLICY_REGISTRY
from sparring.framework.serial import serial_pipeline
from sparring.worker.multiseat_collector import MultiSeatCollector
from tests.recurrent import recomputed

pytest.importorskip('pyspiel')
from sparring.dizoo.openspiel.multiseat_env import OpenSpielMultiSeatEnv

pytestmark = pytest.mark.usefixtures('one_torch_thread')

S = 3
LSTM = dict(type='lstm', hidden_size=8, encoder_sizes=[8], bptt_len=4)


def _lstm_policy(env, n_steps, seed=0):
    cfg = compile_section('policy', dict(type='ppo', model=LSTM, collect=dict(n_steps=n_steps),
                                         learn=dict(epochs=1, num_minibatches=1)))
    return POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=seed)


def _collector(num_envs=2, n_steps=8):
    """The home player against a frozen recurrent opponent and a random bot, seated in turn."""
    env = OpenSpielMultiSeatEnv(dict(game='kuhn_poker', game_params=dict(players=S)), num_envs, 0)
    home, frozen = _lstm_policy(env, n_steps), _lstm_policy(env, n_steps, seed=5)
    bot = BOT_REGISTRY.get('random')({}, env.observation_space, env.action_space, seed=1)
    draws = []

    def sample(slot):
        draws.append(slot)
        flip = len(draws) % 2  # the opponents change seats from game to game
        ids, opponents = (['frozen', 'random'], [frozen, bot]) if flip else (['random', 'frozen'], [bot, frozen])
        return ['me'] + ids, opponents

    return MultiSeatCollector(env, home, n_steps, sample, player_id='me'), home, frozen


def test_every_seats_state_is_a_fresh_unroll_of_its_game_so_far_across_game_ends_and_chunks():
    collector, home, frozen = _collector()
    seen = []  # before each step: the observations, who plays each seat, and the states the collector holds
    act, step = collector._act, collector.env.step
    ended = []

    def spy_act(current):
        seen.append((current.obs.copy(), [list(seats) for seats in collector.seat_policy],
                     collector.home_state[0].copy(), collector.opponent_states.of(frozen)[0].copy()))
        return act(current)

    def spy_step(actions):
        out = step(actions)
        ended.append(out.terminated | out.truncated)
        return out

    collector._act, collector.env.step = spy_act, spy_step
    for _ in range(3):
        collector.collect()
    B = collector.env.num_envs
    expected = {}  # (slot, seat) -> the state a fresh unroll of this game's observations reaches
    checked = 0
    for t, (obs, players, home_h, frozen_h) in enumerate(seen):
        for b in range(B):
            for s in range(S):
                policy = players[b][s]
                if t == 0 or ended[t - 1][b]:
                    expected[b, s] = policy.initial_state(1) if policy in (home, frozen) else None
                if policy is home:
                    np.testing.assert_allclose(home_h[b, s], expected[b, s][0][0], atol=1e-6)
                elif policy is frozen:
                    np.testing.assert_allclose(frozen_h[b, s], expected[b, s][0][0], atol=1e-6)
                else:
                    continue
                checked += 1
                expected[b, s] = policy.network_output(obs[b, s][None], expected[b, s]).state
    assert checked == 2 * B * len(seen)  # each slot has a home seat and the frozen opponent's, at every step
    assert sum(e.sum() for e in ended) >= 4 and collector.episodes >= 4  # games ended inside and across chunks
    assert set(collector.opponent_states) == {id(frozen)}  # the bot is feed-forward: no state


def test_the_chunks_window_states_replay_the_home_policys_log_probs_and_values():
    collector, home, _ = _collector(n_steps=12)
    for _ in range(2):
        chunk = collector.collect()
        chunk.validate(collector.spec)
        data = chunk.data
        assert data['window_state_0'].shape == (3, 2 * S, 8) and data['window_state_1'].shape == (3, 2 * S, 8)
        log_prob, value = recomputed(home, data)
        held = data['value_mask']
        np.testing.assert_allclose(log_prob[held], data['log_prob'][held], atol=1e-5)
        np.testing.assert_allclose(value[held], data['value'][held], atol=1e-5)
        assert data['terminated'][:-1].any()  # games ended inside the chunk
    # a learner that forgot where the games ended would not replay them
    bad = dict(data, terminated=np.zeros_like(data['terminated']))
    assert not np.allclose(recomputed(home, bad)[0][held], data['log_prob'][held], atol=1e-4)
    home.learn(data)  # the learner takes the chunk as it comes


def test_a_collection_of_steps_that_are_not_whole_windows_records_no_window_states():
    env = OpenSpielMultiSeatEnv(dict(game='kuhn_poker', game_params=dict(players=S)), 2, 0)
    policy = _lstm_policy(env, 8)
    bot = BOT_REGISTRY.get('random')({}, env.observation_space, env.action_space, seed=1)
    collector = MultiSeatCollector(env, policy, 6, lambda slot: (['me', 'a', 'b'], [bot, bot]))  # an evaluation's
    chunk = collector.collect()
    assert chunk.rankings and not any(k.startswith('window_') for k in chunk.data)
    with pytest.raises(ValueError, match="missing field 'window_state_0'"):
        chunk.validate(collector.spec)  # a learner refuses it


def test_a_league_of_recurrent_players_trains_on_three_player_kuhn_poker(tmp_path):
    from sparring.dizoo.openspiel.config.kuhn3_league import config as kuhn3
    config = copy.deepcopy(kuhn3)
    config.update(exp_name=str(tmp_path / 'kuhn3_lstm'))
    config['env'].update(collector_env_num=4)
    config['policy'].update(model=dict(type='lstm', hidden_size=8, encoder_sizes=[8]))  # 16-step BPTT windows
    config['policy']['collect'].update(n_steps=16)
    config['league']['players']['naive_sp'].update(one_phase_step=2)
    config['league'].update(reference_players=[dict(player_id='random', param_ref='bot:random')])
    config['battle'].update(exact_analysis=False)  # OpenSpiel's NashConv reads a feed-forward policy's table
    config['env'].update(n_evaluator_episodes=4)
    config['train'].update(max_env_steps=64 * 6, max_wall_seconds=0.0, eval_every_iters=3, tensorboard=False,
                           progress_bar=False)
    summary = serial_pipeline(config)
    assert summary['env_steps'] == 64 * 6 and summary['rounds'] == 6 and summary['games'] > 0
    assert 'naive_sp_0_h1' in summary['league_table']  # a recurrent snapshot was frozen, and played from the pool
    assert summary['eval']['naive_sp_0']['games'] == 4  # its evaluations' few steps are not whole windows
