"""Bots: the Policy surface of fixed opponents, the random bot, config handling, and the registry."""
import numpy as np
import pytest
from gymnasium import spaces

from sparring.config.schema import ConfigError
from sparring.dizoo.pong_duel.pong_duel_env import DOWN, OBS_FIELDS, OBS_INDEX, STAY, UP
from sparring.config.registry import BOT_REGISTRY
from sparring.policy.base import ActOutput, Policy
from sparring.policy.bot import Bot, RandomBot

OBS = spaces.Box(0.0, 1.0, (4,), np.float32)
ACTIONS = spaces.Discrete(5)


def test_registered_bot_names():
    assert {'random', 'tictactoe_heuristic', 'connect_four_heuristic', 'tictactoe_mcts', 'connect_four_mcts',
            'pong_duel_heuristic'} <= set(BOT_REGISTRY.names())
    for name in BOT_REGISTRY.names():
        assert issubclass(BOT_REGISTRY.get(name), Bot) and issubclass(BOT_REGISTRY.get(name), Policy)


def test_random_bot_plays_uniformly_over_legal_actions_and_0_without_any():
    bot = RandomBot({}, OBS, ACTIONS, seed=0)
    mask = np.array([[True, False, True, False, True], [False] * 5, [False, False, False, True, False]])
    counts = np.zeros((3, 5))
    for _ in range(600):
        out = bot.act(np.zeros((3, 4), np.float32), action_mask=mask)
        counts[np.arange(3), out.action] += 1
    assert not counts[~mask[:, :] & mask.any(axis=1, keepdims=True)].any()  # never an illegal action
    assert counts[1].tolist() == [600, 0, 0, 0, 0] and counts[2, 3] == 600
    assert np.all(np.abs(counts[0, [0, 2, 4]] - 200) < 60)
    free = bot.act(np.zeros((2000, 4), np.float32)).action  # no mask: every action
    assert set(free.tolist()) == set(range(5))


def test_bot_outputs_are_policy_shaped_and_carry_no_parameters():
    bot = RandomBot(None, OBS, ACTIONS, seed=0)
    out = bot.act(np.zeros((3, 4), np.float32), deterministic=True)
    assert isinstance(out, ActOutput) and out.state is None
    assert out.action.dtype == np.int64 and out.action.shape == (3,)
    assert out.log_prob.tolist() == [0.0] * 3 and out.value.tolist() == [0.0] * 3 and out.value.dtype == np.float32
    assert bot.get_params() == {} and bot.version == 0
    bot.set_params({}, 5)
    assert bot.version == 0
    with pytest.raises(ValueError, match='has no parameters'):
        bot.set_params({'w': 1}, 1)
    with pytest.raises(NotImplementedError, match='does not learn'):
        bot.learn({})
    assert bot.value(np.zeros((2, 4))).tolist() == [0.0, 0.0]


def test_bots_are_reproducible_from_their_seed_and_state_dict():
    obs = np.zeros((50, 4), np.float32)
    a, b = RandomBot({}, OBS, ACTIONS, seed=3), RandomBot({}, OBS, ACTIONS, seed=3)
    assert a.act(obs).action.tolist() == b.act(obs).action.tolist()
    state = a.state_dict()
    first = a.act(obs).action.tolist()
    a.load_state_dict(state)
    assert a.act(obs).action.tolist() == first
    assert RandomBot({}, OBS, ACTIONS, seed=4).act(obs).action.tolist() != first


def test_bot_inputs_are_checked():
    bot = RandomBot({}, OBS, ACTIONS)
    with pytest.raises(ValueError, match=r'observations of shape \(3, 5\); expected \(batch,\) \+ \(4,\)'):
        bot.act(np.zeros((3, 5)))
    with pytest.raises(ValueError, match='action_mask of shape'):
        bot.act(np.zeros((3, 4)), action_mask=np.ones((3, 5), np.int8))
    with pytest.raises(ValueError, match=r'expected Discrete\(n\) starting at 0 or a Box'):
        RandomBot({}, OBS, spaces.MultiDiscrete([2, 2]))  # the random bot plays Box spaces too (continuous games)
    with pytest.raises(ValueError, match=r'expected Discrete\(n\) starting at 0$'):
        BOT_REGISTRY.get('connect_four_heuristic')({}, OBS, spaces.Box(0, 1, (2,)))
    with pytest.raises(ValueError, match='expected Pong duel'):
        BOT_REGISTRY.get('pong_duel_heuristic')({}, OBS, ACTIONS)
    with pytest.raises(ValueError, match=r'expected \(3, rows, cols\) planes'):
        BOT_REGISTRY.get('connect_four_heuristic')({}, OBS, ACTIONS)


def test_bot_config_is_merged_over_defaults_and_checked():
    board = spaces.Box(0.0, 1.0, (3, 6, 7), np.float32)
    columns = spaces.Discrete(7)
    mcts = BOT_REGISTRY.get('connect_four_mcts')
    bot = mcts({'type': 'connect_four_mcts', 'num_simulations': 7}, board, columns)
    assert bot.cfg == {'win_length': 4, 'num_simulations': 7, 'exploration': 1.4}
    with pytest.raises(ConfigError, match="Did you mean 'num_simulations'"):
        mcts({'num_simulation': 7}, board, columns)
    with pytest.raises(ConfigError, match='num_simulations.*expected a number in'):
        mcts({'num_simulations': 0}, board, columns)
    with pytest.raises(ConfigError, match='expected int'):
        mcts({'num_simulations': 'many'}, board, columns)
    with pytest.raises(ConfigError, match='unknown key .speed. in "bot.random", which takes no options'):
        RandomBot({'speed': 1}, OBS, ACTIONS)
    with pytest.raises(ConfigError, match="expected 'random' or no type"):
        RandomBot({'type': 'connect_four_mcts'}, OBS, ACTIONS)
    with pytest.raises(ValueError, match='7 actions for a 6x7 board; expected 42'):
        BOT_REGISTRY.get('tictactoe_heuristic')({'win_length': 4}, board, columns)


def test_pong_tracker_moves_toward_the_ball_at_its_reaction_rate():
    space = spaces.Box(-1.0, 1.0, (len(OBS_FIELDS),), np.float32)
    obs = np.zeros((3, len(OBS_FIELDS)), np.float32)
    obs[:, OBS_INDEX['ball_y']] = [0.5, -0.5, 0.02]  # above, below, within the dead zone
    sure = BOT_REGISTRY.get('pong_duel_heuristic')({'reaction': 1.0}, space, spaces.Discrete(3))
    assert sure.act(obs).action.tolist() == [UP, DOWN, STAY]
    slow = BOT_REGISTRY.get('pong_duel_heuristic')({'reaction': 0.3}, space, spaces.Discrete(3), seed=1)
    moves = np.array([slow.act(obs[:1]).action[0] for _ in range(1000)])
    assert set(moves.tolist()) == {UP, STAY} and abs((moves == UP).mean() - 0.3) < 0.06


def test_bot_references_carry_options_in_query_form():
    from sparring.config.schema import ConfigError
    from sparring.policy.bot import parse_bot_ref
    assert parse_bot_ref('connect_four_mcts?num_simulations=1000&exploration=0.5') == (
        'connect_four_mcts', dict(num_simulations=1000, exploration=0.5))
    assert parse_bot_ref('random') == ('random', {})
    assert parse_bot_ref('x?name=abc') == ('x', dict(name='abc'))
    with pytest.raises(ConfigError, match='key=value'):
        parse_bot_ref('connect_four_mcts?num_simulations')


def test_policy_pool_builds_bots_with_their_options(tmp_path):
    from sparring.dizoo.board_games.board_game_env import ConnectFourEnv
    from sparring.config.schema import ConfigError
    from sparring.worker.policy_pool import ParamStore, PolicyPool
    env = ConnectFourEnv({}, 1)
    pool = PolicyPool(ParamStore(str(tmp_path)), env.observation_space, env.action_space)
    assert pool.get('bot:connect_four_mcts?num_simulations=7').cfg['num_simulations'] == 7
    assert pool.get('bot:connect_four_mcts').cfg['num_simulations'] == 200
    with pytest.raises(ConfigError, match='num_simulations'):
        pool.get('bot:connect_four_mcts?num_simulations=0')


def test_policy_pool_keeps_the_last_bots_used_and_no_more(tmp_path):
    """Every distinct reference built a bot kept for good: a peer naming ever new options grew the cache without end."""
    from sparring.dizoo.board_games.board_game_env import ConnectFourEnv
    from sparring.worker.policy_pool import MAX_BOTS, ParamStore, PolicyPool
    env = ConnectFourEnv({}, 1)
    pool = PolicyPool(ParamStore(str(tmp_path)), env.observation_space, env.action_space)
    kept = pool.get('bot:connect_four_mcts?num_simulations=1')
    for n in range(2, 3 * MAX_BOTS):
        pool.get(f'bot:connect_four_mcts?num_simulations={n}')
        assert pool.get('bot:connect_four_mcts?num_simulations=1') is kept  # used all along: kept
    assert len(pool._bots) == MAX_BOTS
    assert 'bot:connect_four_mcts?num_simulations=2' not in pool._bots  # the least recently used went first
    assert f'bot:connect_four_mcts?num_simulations={3 * MAX_BOTS - 1}' in pool._bots


def test_a_board_game_bots_choice_names_the_legal_actions_it_was_not_given():
    from sparring.policy.bot import given_mask
    mask = np.ones((2, 3), bool)
    assert given_mask(mask, 'connect_four_heuristic') is mask
    with pytest.raises(ValueError, match="bot 'connect_four_heuristic': _choose needs the legal actions"):
        given_mask(None, 'connect_four_heuristic')
