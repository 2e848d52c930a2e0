"""The OpenSpiel battle env (random play checked against OpenSpiel's own states, chance sampling, seeding,
game_states, config and errors) and the OpenSpiel MCTS bot."""
import math

import numpy as np
import pytest

from sparring.config.compile import compile_config
from sparring.config.schema import ConfigError
from sparring.config.registry import BOT_REGISTRY, ENV_REGISTRY
from sparring.worker.env.battle import is_battle_env, make_battle_env
from sparring.worker.env.errors import EnvError

pyspiel = pytest.importorskip('pyspiel')

GAMES = ['kuhn_poker', 'leduc_poker', 'tic_tac_toe', 'connect_four']


def openspiel_env(game, num_envs, seed=0, **options):
    return make_battle_env(dict(type='openspiel', game=game, **options), num_envs, seed)


def seat_tensor(state, seat):
    """What a seat should observe, read with the state's own method (not the env's observer); a perfect-
    information game's board is followed by a plane saying whether the seat is to move."""
    game_type = state.get_game().get_type()
    if game_type.provides_information_state_tensor:
        return np.asarray(state.information_state_tensor(seat), np.float32)
    board = np.asarray(state.observation_tensor(seat), np.float32)
    if game_type.information != pyspiel.GameType.Information.PERFECT_INFORMATION:
        return board
    plane_size = board.size // state.get_game().observation_tensor_shape()[0]
    turn = np.full(plane_size, 1.0 if state.current_player() == seat else 0.0, np.float32)
    return np.concatenate([board, turn])


# ---------------------------------------------------------------------------------- random play
@pytest.mark.parametrize('game', GAMES)
@pytest.mark.slow
def test_random_play_matches_openspiel_step_by_step(game, random_actions):
    """Each env step is replayed on a clone of the game's state: observations, masks, the seat to move,
    rewards (summing to OpenSpiel's returns) and results (by the returns' sign) must all agree."""
    B, target_games = 8, 60
    env = openspiel_env(game, B, seed=5)
    rng = np.random.default_rng(0)
    step = env.reset()
    episode_reward = np.zeros((B, 2))
    results = []
    while len(results) < target_games:
        assert np.array_equal(step.to_move.sum(axis=1), np.ones(B)), 'exactly one seat moves in every game'
        assert np.array_equal(step.action_mask.any(axis=2), step.to_move), 'only the seat to move has actions'
        before = env.game_states()
        actions = random_actions(step, rng)
        step = env.step(actions)
        episode_reward += step.reward
        assert not step.truncated.any()
        for j, state in enumerate(before):
            mover = state.current_player()
            state.apply_action(int(actions[j, mover]))
            if state.is_terminal():
                assert step.terminated[j]
                returns = state.returns()
                np.testing.assert_allclose(episode_reward[j], returns, atol=1e-6)
                expected = int(np.sign(returns[0] - returns[1]))
                assert step.result[j].tolist() == [expected, -expected]
                for seat in (0, 1):
                    np.testing.assert_array_equal(step.final_obs[j, seat].ravel(), seat_tensor(state, seat))
                results.append(expected)
                episode_reward[j] = 0.0
            else:
                assert not step.terminated[j] and not step.result[j].any()
                if state.is_chance_node():
                    continue  # the env sampled the outcome; the next game_states() checks from there
                for seat in (0, 1):
                    np.testing.assert_array_equal(step.obs[j, seat].ravel(), seat_tensor(state, seat))
                legal = np.flatnonzero(step.action_mask[j, state.current_player()]).tolist()
                assert legal == state.legal_actions()
    assert len(set(results)) >= 2, 'random play of these games produces different results'


def test_observations_keep_the_tensor_shape_and_spaces_match_the_game():
    env = openspiel_env('connect_four', 2)
    # OpenSpiel's three board planes and the plane saying whether the seat observing is to move
    assert env.observation_space.shape == (4, 6, 7) and env.action_space.n == 7 and env.turn_based
    step = env.reset()
    assert step.obs.shape == (2, 2, 4, 6, 7) and step.obs.dtype == np.float32
    np.testing.assert_array_equal(step.obs[:, 0, 3], 1.0)  # seat 0 moves first
    np.testing.assert_array_equal(step.obs[:, 1, 3], 0.0)
    np.testing.assert_array_equal(step.obs[:, 0, :3], step.obs[:, 1, :3])  # the same board for both
    kuhn = openspiel_env('kuhn_poker', 1)
    assert kuhn.observation_space.shape == (11,) and kuhn.action_space.n == 2
    assert is_battle_env('openspiel') and ENV_REGISTRY.get('openspiel').reference_bots == ('random',)


def test_general_sum_games_are_decided_by_the_higher_return(random_actions):
    env = openspiel_env('lewis_signaling', 4, seed=1)
    step, rng = env.reset(), np.random.default_rng(1)
    for _ in range(4):
        step = env.step(random_actions(step, rng))
    assert step.terminated.all() and (step.result[:, 0] == -step.result[:, 1]).all()


def test_simultaneous_games_play_in_turns_through_the_suggested_transform(random_actions):
    with pytest.raises(ConfigError, match='turn_based_simultaneous_game'):
        openspiel_env('goofspiel', 1)
    env = openspiel_env('turn_based_simultaneous_game(game=goofspiel(num_cards=3))', 4, seed=0)
    step, rng, ended = env.reset(), np.random.default_rng(0), 0
    for _ in range(30):
        step = env.step(random_actions(step, rng))
        ended += int(step.terminated.sum())
    assert ended >= 4


# ---------------------------------------------------------------------------------- chance and seeds
@pytest.mark.slow
def test_chance_outcomes_follow_their_probabilities():
    """Kuhn poker deals one of 6 card pairs with probability 1/6 each."""
    n = 6000
    env = openspiel_env('kuhn_poker', n, seed=0)
    env.reset()
    deals = np.array([tuple(state.history()[:2]) for state in env.game_states()])
    codes = deals[:, 0] * 3 + deals[:, 1]
    for code in (1, 2, 3, 5, 6, 7):  # the six ordered pairs of distinct cards
        freq = float(np.mean(codes == code))
        assert abs(freq - 1 / 6) <= 4.5 * math.sqrt((1 / 6) * (5 / 6) / n), (code, freq)


def test_same_seed_same_games_other_seed_other_deals(random_actions):
    def trajectory(seed):
        env = openspiel_env('leduc_poker', 8, seed=seed)
        step, rng, out = env.reset(), np.random.default_rng(0), []
        for _ in range(20):
            out.append(step.obs.copy())
            step = env.step(random_actions(step, rng))
        return np.stack(out)

    assert np.array_equal(trajectory(3), trajectory(3))
    assert not np.array_equal(trajectory(3), trajectory(4))


# ---------------------------------------------------------------------------------- game_states
def test_game_states_are_clones_in_the_order_asked():
    env = openspiel_env('tic_tac_toe', 3)
    env.reset()
    env.step(np.array([[4, 0], [0, 0], [8, 0]]))
    states = env.game_states(np.array([2, 0]))
    assert [s.history() for s in states] == [[8], [4]]
    states[0].apply_action(0)  # a clone: the env's game is untouched
    assert env.game_states([2])[0].history() == [8]
    assert len(env.game_states()) == 3 and env.game_states([]) == []
    for bad in ([3], [-1], [[0]], [0.5]):
        with pytest.raises(EnvError, match='game_states'):
            env.game_states(bad)


def test_game_states_before_reset_is_an_error():
    with pytest.raises(EnvError, match='reset'):
        openspiel_env('kuhn_poker', 1).game_states()


# ---------------------------------------------------------------------------------- config and errors
def test_config_one_liner_compiles():
    cfg = compile_config(dict(env=dict(type='openspiel', game='kuhn_poker')), save=False)
    assert cfg.env.game == 'kuhn_poker' and cfg.env.game_params == {} and cfg.env.collector_env_num == 8
    cfg = compile_config(dict(env=dict(type='openspiel', game='leduc_poker', game_params=dict(players=2))),
                         save=False)
    assert cfg.env.game_params == dict(players=2)
    assert openspiel_env('leduc_poker', 1, game_params=dict(players=2)).game.num_players() == 2


@pytest.mark.parametrize('env_cfg, message', [
    (dict(), 'OpenSpiel game name'),
    (dict(game=''), 'OpenSpiel game name'),
    (dict(game='kuhn_poker', game_params=dict(players=[2])), 'env.game_params'),
    (dict(game='kuhn_poker', game_parms={}), 'game_params'),
])
def test_config_errors_at_compile_time(env_cfg, message):
    with pytest.raises(ConfigError, match=message):
        compile_config(dict(env=dict(type='openspiel', **env_cfg)), save=False)


@pytest.mark.parametrize('game, params, message', [
    ('kuhn_pokr', {}, "unknown OpenSpiel game 'kuhn_pokr'. Close names: kuhn_poker"),
    ('kuhn_poker', dict(players=3), 'has 3 players; expected exactly 2'),
    ('kuhn_poker', dict(no_such_option=1), 'OpenSpiel cannot load'),
    ('matrix_rps', {}, 'simultaneous moves; expected a sequential'),
])
def test_unusable_games_are_rejected_when_the_env_is_built(game, params, message):
    with pytest.raises(ConfigError, match=message):
        openspiel_env(game, 1, game_params=params)


# ---------------------------------------------------------------------------------- the MCTS bot
def mcts_bot(env, seed=0, **cfg):
    return BOT_REGISTRY.get('openspiel_mcts')(dict(dict(num_simulations=200), **cfg), env.observation_space,
                                              env.action_space, seed=seed)


def play_against_random(game, bot_seat, num_games, seed=0):
    """Results from the bot's side (+1/0/-1) of ``num_games`` games, one per env."""
    env = openspiel_env(game, num_games, seed=seed)
    bot = mcts_bot(env, seed=seed)
    rng = np.random.default_rng(seed)
    step = env.reset()
    results = np.zeros(num_games, np.int64)
    finished = np.zeros(num_games, bool)
    while not finished.all():
        actions = np.zeros((num_games, 2), np.int64)
        movers = np.flatnonzero(step.to_move[:, bot_seat])
        out = bot.act(step.obs[movers, bot_seat], action_mask=step.action_mask[movers, bot_seat],
                      game_states=env.game_states(movers))
        actions[movers, bot_seat] = out.action
        other = 1 - bot_seat
        scores = rng.random(step.action_mask[:, other].shape) * step.action_mask[:, other]
        actions[:, other] = np.where(step.to_move[:, other], scores.argmax(axis=1), 0)
        step = env.step(actions)
        first_end = step.terminated & ~finished
        results[first_end] = step.result[first_end, bot_seat]
        finished |= first_end
    return results


@pytest.mark.parametrize('bot_seat', [0, 1])
def test_mcts_bot_beats_random_play_at_tic_tac_toe(bot_seat):
    results = play_against_random('tic_tac_toe', bot_seat, 12, seed=bot_seat)
    assert (results >= 0).all() and (results == 1).mean() >= 0.6, results


def test_mcts_bot_config_registry_and_flag():
    env = openspiel_env('connect_four', 1)
    bot = mcts_bot(env)
    assert type(bot).needs_game_state and bot.cfg['num_simulations'] == 200 and bot.cfg['uct_c'] == 2.0
    assert bot.cfg['rollouts'] == 1
    with pytest.raises(ConfigError, match='num_simulations'):
        mcts_bot(env, num_simulations=0)


def test_mcts_bot_is_reproducible_from_its_seed_and_state():
    env = openspiel_env('connect_four', 6)
    step = env.reset()
    states = env.game_states()
    kwargs = dict(action_mask=step.action_mask[:, 0], game_states=states)
    first = mcts_bot(env, seed=9, num_simulations=20)
    a = first.act(step.obs[:, 0], **kwargs).action
    saved = first.state_dict()
    b = first.act(step.obs[:, 0], **kwargs).action
    assert np.array_equal(mcts_bot(env, seed=9, num_simulations=20).act(step.obs[:, 0], **kwargs).action, a)
    first.load_state_dict(saved)
    assert np.array_equal(first.act(step.obs[:, 0], **kwargs).action, b)


def test_mcts_bot_errors_name_what_is_missing_or_wrong():
    env = openspiel_env('tic_tac_toe', 2)
    step = env.reset()
    bot = mcts_bot(env)
    obs, mask = step.obs[:, 0], step.action_mask[:, 0]
    with pytest.raises(ValueError, match='needs game_states'):
        bot.act(obs, action_mask=mask)
    with pytest.raises(ValueError, match='one state per row'):
        bot.act(obs, action_mask=mask, game_states=env.game_states([0]))
    env.step(np.array([[4, 0], [0, 0]]))
    moved = env.game_states()  # game 0 now has seat 1 to move with 8 legal actions, game 1 still 9
    with pytest.raises(ValueError, match='order of the observations'):
        bot.act(obs, action_mask=mask, game_states=moved[::-1])
    kuhn = openspiel_env('kuhn_poker', 1)
    kuhn_step = kuhn.reset()
    seat = int(np.flatnonzero(kuhn_step.to_move[0])[0])
    with pytest.raises(ValueError, match='perfect-information'):
        mcts_bot(kuhn).act(kuhn_step.obs[:, seat], action_mask=kuhn_step.action_mask[:, seat],
                           game_states=kuhn.game_states())
