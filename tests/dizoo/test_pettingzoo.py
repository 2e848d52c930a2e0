"""The PettingZoo battle env: AEC and parallel envs under random play (checked against PettingZoo's own
observations and rewards), config one-liners, kwargs, and the errors."""
import numpy as np
import pytest
from gymnasium import spaces

from sparring.config.compile import compile_config
from sparring.config.schema import ConfigError
from sparring.worker.env.battle import DictBattleVecEnv, is_battle_env, make_battle_env

pytest.importorskip('pettingzoo')
pytest.importorskip('pettingzoo.classic.connect_four.connect_four')


def pettingzoo_env(name, num_envs, seed=0, **options):
    return make_battle_env(dict(type='pettingzoo', env=name, **options), num_envs, seed)


@pytest.mark.parametrize('name', ['classic.connect_four_v3', 'classic.tictactoe_v3'])
def test_turn_based_random_games_match_pettingzoo(name, random_actions):
    B, target_games = 6, 40
    env = pettingzoo_env(name, B, seed=2)
    assert isinstance(env, DictBattleVecEnv) and env.turn_based
    rng = np.random.default_rng(0)
    step = env.reset()
    episode_reward = np.zeros((B, 2))
    results = []
    while len(results) < target_games:
        assert np.array_equal(step.to_move.sum(axis=1), np.ones(B)), 'exactly one seat moves in every game'
        assert np.array_equal(step.action_mask.any(axis=2), step.to_move)
        for j, game in enumerate(env.envs):  # what PettingZoo itself shows the agents
            zoo = game.env
            for seat, agent in enumerate(game.possible_agents):
                raw = zoo.observe(agent)
                np.testing.assert_array_equal(step.obs[j, seat], raw['observation'].ravel().astype(np.float32))
                if agent == zoo.agent_selection:
                    np.testing.assert_array_equal(step.action_mask[j, seat], raw['action_mask'].astype(bool))
        step = env.step(random_actions(step, rng))
        episode_reward += step.reward
        for j in np.flatnonzero(step.terminated):
            total = episode_reward[j]
            assert step.result[j].tolist() == [int(np.sign(total[0] - total[1])), -int(np.sign(total[0] - total[1]))]
            assert total[0] == -total[1]  # zero-sum classic games
            results.append(int(step.result[j, 0]))
            episode_reward[j] = 0.0
        assert not step.truncated.any()
    assert {-1, 1} <= set(results)


@pytest.mark.parametrize('api, turn_based', [('auto', True), ('aec', True), ('parallel', False)])
def test_rock_paper_scissors_as_aec_or_parallel(api, turn_based, random_actions):
    env = pettingzoo_env('classic.rps_v2', 4, seed=0, api=api, kwargs=dict(max_cycles=3))
    assert env.turn_based == turn_based
    assert env.observation_space == spaces.Box(0.0, 1.0, (4,), np.float32)  # the Discrete(4) observation, one-hot
    step, rng, ended = env.reset(), np.random.default_rng(0), 0
    for _ in range(40):
        if not turn_based:
            assert step.to_move.all() and step.action_mask.all()
        assert np.allclose(step.obs.sum(axis=2), 1.0)
        step = env.step(random_actions(step, rng))
        over = step.terminated | step.truncated
        assert (step.result[over, 0] == -step.result[over, 1]).all() and not step.result[~over].any()
        ended += int(over.sum())
    assert ended >= 8


def test_config_one_liner_compiles_and_kwargs_reach_the_env():
    cfg = compile_config(dict(env=dict(type='pettingzoo', env='classic.connect_four_v3')), save=False)
    assert cfg.env.env == 'classic.connect_four_v3' and cfg.env.kwargs == {} and cfg.env.api == 'auto'
    assert is_battle_env('pettingzoo')
    lizard_spock = pettingzoo_env('classic/rps_v2', 1, kwargs=dict(num_actions=5))
    assert lizard_spock.action_space == spaces.Discrete(5)
    direct = pettingzoo_env('pettingzoo.classic.connect_four.connect_four:env', 1)
    assert direct.observation_space.shape == (84,)


@pytest.mark.parametrize('options, message', [
    (dict(env='classic.conect_four_v3'), ("unknown PettingZoo env 'classic.conect_four_v3'. Close names: "
                                          "classic.connect_four_v3")),
    (dict(env='classic.connect_four_v1'), 'Close names: classic.connect_four_v3'),
    (dict(env='classic.connect_four_v3', api='parallel'), 'unknown PettingZoo env'),
    (dict(env='classic.connect_four_v3', kwargs=dict(board_size=9)), 'env.kwargs'),
    (dict(env='classic.texas_holdem_v4', kwargs=dict(num_players=3)), 'expected 2 \\(one per seat\\)'),
    (dict(env='no_such_package.envs:env'), "cannot import module 'no_such_package.envs'"),
    (dict(env='pettingzoo.classic.connect_four.connect_four:no_factory'), "no callable 'no_factory'"),
])
def test_unusable_envs_are_rejected_when_built(options, message):
    with pytest.raises(ConfigError, match=message):
        make_battle_env(dict(type='pettingzoo', **options), 1)


@pytest.mark.parametrize('env_cfg, message', [
    (dict(), 'PettingZoo env such as'),
    (dict(env='classic.connect_four_v3', api='turns'), "one of 'auto', 'aec', 'parallel'"),
])
def test_config_errors_at_compile_time(env_cfg, message):
    with pytest.raises(ConfigError, match=message):
        compile_config(dict(env=dict(type='pettingzoo', **env_cfg)), save=False)
