"""Expert iteration: moves chosen by the guided search while collecting, and PPO trained towards its visits."""
import copy

import numpy as np
import pytest
import torch

import sparring.dizoo  # noqa: F401  (registers the games and bots)
from sparring.config import compile_config, compile_section
from sparring.config.registry import POLICY_REGISTRY
from sparring.config.schema import ConfigError
from sparring.dizoo.board_games.board_game_env import ConnectFourEnv
from sparring.dizoo.board_games.search_acting import SearchActing
from sparring.policy import functional as F
from sparring.worker.battle_collector import BattleCollector
from sparring.worker.env.battle import make_battle_env
from sparring.worker.run_kind import run_kind
from tests.configs import fast_parallel, tiny_league_config
from tests.dizoo.connect_four_positions import C4, small_ppo

def _observations(*games):
    """Seat observations (own, opponent, to-move planes) of positions given as columns played from the empty board."""
    env = ConnectFourEnv(None, len(games), seed=0)
    step = env.reset()
    for ply in range(max(len(g) for g in games)):
        actions = np.zeros((len(games), 2), np.int64)
        for b, game in enumerate(games):
            if ply < len(game):
                actions[b, ply % 2] = game[ply]
        # A game shorter than the longest one waits: only step the envs that still have moves.
        moving = np.array([ply < len(g) for g in games])
        assert moving.all(), 'give games of equal length'
        step = env.step(actions)
    mover = len(games[0]) % 2
    return step.obs[:, mover], step.action_mask[:, mover], step.obs[:, 1 - mover], step.action_mask[:, 1 - mover]


def test_the_cross_entropy_towards_the_visits_by_hand():
    target = torch.tensor([[0.75, 0.25, 0.0]])
    log_probs = torch.log(torch.tensor([[0.5, 0.25, 0.25]]))
    loss, kl, clip = F.search_target_loss(log_probs, target, torch.zeros(1), torch.zeros(1))
    assert loss.item() == pytest.approx(0.75 * np.log(2) + 0.25 * np.log(4))
    assert kl.item() == 0.0 and clip.item() == 0.0
    # An illegal action has the lowest finite log-probability; never visited, it counts nothing.
    masked = torch.tensor([[np.log(0.5), np.log(0.5), torch.finfo(torch.float32).min]])
    loss, _, _ = F.search_target_loss(masked, target, torch.zeros(1), torch.zeros(1))
    assert loss.item() == pytest.approx(np.log(2))


def test_the_search_takes_the_win_the_network_does_not_see_and_records_its_visits():
    # The first player (to move) wins in column 3; the untrained network has no idea.
    own_obs, own_mask, idle_obs, idle_mask = _observations((0, 6, 1, 6, 2, 5))
    env = ConnectFourEnv(None, 1)
    policy = small_ppo(env)
    acting = SearchActing(dict(num_simulations=64, sample_moves=0), C4, seed=0)
    obs, mask = np.concatenate([own_obs, idle_obs]), np.concatenate([own_mask, idle_mask])
    out, target, value = acting.act(policy, obs, mask)
    assert out.action[0] == 3 and target[0].argmax() == 3
    assert value[0] > 0.5 and value[1] == 0  # the search sees the win; the seat not to move gets nothing
    assert target[0].sum() == pytest.approx(1.0) and (target[0][~mask[0]] == 0).all()
    # The seat not to move gets no search: action 0 and an empty distribution (the env ignores it).
    assert out.action[1] == 0 and (target[1] == 0).all()
    # Log-probability and value are the network's own.
    probs = policy.action_probabilities(obs, action_mask=mask)
    assert out.log_prob[0] == pytest.approx(np.log(probs[0, 3]), rel=1e-5)
    np.testing.assert_allclose(out.value, policy.value(obs), rtol=1e-6)


def test_early_moves_are_drawn_from_the_visits_later_ones_are_the_most_visited():
    acting = SearchActing(dict(num_simulations=8, sample_moves=2), C4, seed=0)
    visits = np.array([[6.0, 2.0, 0, 0, 0, 0, 0]] * 400)
    distribution = visits / 8.0
    legal = np.ones((400, 7), bool)
    early = acting._choose(visits, distribution, np.zeros(400), legal)
    assert set(early.tolist()) == {0, 1} and 0.15 < (early == 1).mean() < 0.35  # 1 drawn with probability 1/4
    assert (acting._choose(visits, distribution, np.full(400, 2), legal) == 0).all()


def test_random_moves_leave_the_visits_for_a_uniform_legal_move_in_the_opening_only():
    acting = SearchActing(dict(num_simulations=8, sample_moves=2, random_moves=0.5), C4, seed=0)
    n = 4000
    visits = np.tile([[8.0, 0, 0, 0, 0, 0, 0]], (n, 1))  # the search is sure of action 0
    legal = np.tile([True, False, True, True, False, True, True], (n, 1))  # five legal moves, 0 among them
    early = acting._choose(visits, visits / 8.0, np.zeros(n), legal)
    # by hand: P(0) = 1/2 (the visits) + 1/2 * 1/5 (uniform) = 0.6; each other legal move 1/2 * 1/5 = 0.1
    counts = np.bincount(early, minlength=7) / n
    assert counts[[1, 4]].sum() == 0  # never an illegal move
    np.testing.assert_allclose(counts[[0, 2, 3, 5, 6]], [0.6, 0.1, 0.1, 0.1, 0.1], atol=0.025)
    assert (acting._choose(visits, visits / 8.0, np.full(n, 2), legal) == 0).all()  # past the opening: the search's
    # Without the option no extra random numbers are drawn, so a seeded run's games are as before it
    # existed: exactly the tie-break keys [n, A] and the sampling draws [n, 1].
    plain = SearchActing(dict(sample_moves=2), C4, seed=3)
    spread = np.tile([[4.0, 4.0, 0, 0, 0, 0, 0]], (50, 1))
    plain._choose(spread, spread / 8.0, np.zeros(50), legal[:50])
    reference = np.random.default_rng(3)
    reference.random(spread.shape), reference.random((50, 1))
    assert plain.rng.random() == reference.random()
    with pytest.raises(ConfigError, match='random_moves'):
        SearchActing(dict(random_moves=1.5), C4)


def test_a_collector_with_the_search_records_the_visits_where_the_player_moved():
    env = make_battle_env(dict(type='connect_four'), 4, 0)
    policy = small_ppo(env, objective='search')
    acting = SearchActing(dict(num_simulations=4), C4, seed=0)
    collector = BattleCollector(env, policy, 6, lambda slot: ('me', policy), player_id='me', search=acting)
    chunk = collector.collect()
    chunk.validate(collector.spec)
    d = chunk.data
    assert d['search_policy'].shape == (6, 8, 7)
    moved = d['train_mask']
    np.testing.assert_allclose(d['search_policy'][moved].sum(-1), 1.0, rtol=1e-6)
    assert (d['search_policy'][~moved] == 0).all()
    # Every played move was one the search visited, and only legal actions were visited.
    t, c = np.nonzero(moved)
    assert (d['search_policy'][t, c, d['action'][t, c]] > 0).all()
    assert (d['search_policy'][~d['action_mask']] == 0).all()
    # the search's value of each position it ran from, for the player to move: a mean of game values
    assert d['search_value'].shape == (6, 8) and (d['search_value'][~moved] == 0).all()
    assert (np.abs(d['search_value'][moved]) <= 1.0).all() and (d['search_value'][moved] != 0).any()


def test_a_player_that_does_not_learn_from_the_search_gets_chunks_without_its_records():
    env = make_battle_env(dict(type='connect_four'), 4, 0)
    policy = small_ppo(env)  # the clip objective: its chunk spec names no search field
    acting = SearchActing(dict(num_simulations=4), C4, seed=0)
    collector = BattleCollector(env, policy, 2, lambda slot: ('me', policy), player_id='me', search=acting)
    chunk = collector.collect()
    chunk.validate(collector.spec)
    assert not {'search_policy', 'search_value'} & set(chunk.data)


@pytest.mark.slow
def test_ppo_search_objective_moves_the_policy_towards_the_visits():
    env = make_battle_env(dict(type='connect_four'), 4, 0)
    policy = small_ppo(env, objective='search', lr=1e-2, mirror=dict(obs_axis=-1, actions=[6, 5, 4, 3, 2, 1, 0]))
    acting = SearchActing(dict(num_simulations=4), C4, seed=0)
    chunk = BattleCollector(env, policy, 8, lambda slot: ('me', policy), search=acting).collect().data
    moved = chunk['train_mask']
    target = np.zeros_like(chunk['search_policy'])
    target[..., 3][moved] = 1.0  # every move: the centre column
    chunk = dict(chunk, search_policy=target)
    obs, mask = chunk['obs'][moved], chunk['action_mask'][moved]
    before = policy.action_probabilities(obs, action_mask=mask)[:, 3].mean()
    for _ in range(10):
        stats = policy.learn(chunk)
    after = policy.action_probabilities(obs, action_mask=mask)[:, 3].mean()
    assert after > max(0.8, before + 0.5) and stats['policy_loss'] < 0.5
    del chunk['search_policy']
    with pytest.raises(ValueError, match='search_policy'):
        policy.learn(chunk)


@pytest.mark.slow
def test_a_search_window_trains_on_the_last_chunks_together_and_resumes_exactly():
    env = make_battle_env(dict(type='connect_four'), 4, 0)
    policy = small_ppo(env, objective='search', search_window=2)
    acting = SearchActing(dict(num_simulations=4), C4, seed=0)
    collector = BattleCollector(env, policy, 8, lambda slot: ('me', policy), search=acting)
    chunks = [collector.collect().data for _ in range(4)]
    steps = [policy._train_batch(c).num_steps for c in chunks]
    # by hand: the second update is one update on both chunks side by side (env columns concatenated)
    alone = small_ppo(env, objective='search')
    together = {k: np.concatenate([chunks[0][k], chunks[1][k]], axis=1) for k in chunks[0]}
    assert policy.learn(chunks[0])['samples'] == alone.learn(chunks[0])['samples'] == steps[0]
    assert policy.learn(chunks[1])['samples'] == alone.learn(together)['samples'] == steps[0] + steps[1]
    for name, value in policy.get_params().items():
        torch.testing.assert_close(value, alone.get_params()[name], rtol=0, atol=1e-6)
    # the window slides (the oldest chunk leaves), and a checkpoint carries it: a resumed learner goes on exactly
    resumed = small_ppo(env, objective='search', search_window=2)
    resumed.load_state_dict(copy.deepcopy(policy.state_dict()))
    for chunk, before in zip(chunks[2:], steps[1:]):
        assert policy.learn(chunk)['samples'] == resumed.learn(chunk)['samples'] == before + policy._train_batch(
            chunk).num_steps
    for name, value in policy.get_params().items():
        assert torch.equal(value, resumed.get_params()[name]), name
    forgetful = small_ppo(env, objective='search', search_window=2)
    forgetful.load_state_dict({k: v for k, v in policy.state_dict().items() if k != 'recent_batches'})
    assert forgetful.learn(chunks[0])['samples'] == steps[0]  # nothing kept: the window starts anew
    with pytest.raises(ConfigError, match='search_window.*objective=.search'):
        small_ppo(env, search_window=2)


def test_mirror_augmentation_mirrors_the_visits():
    from sparring.policy.augment import with_mirror
    from sparring.policy.train_batch import TrainBatch
    fields = dict(obs=torch.zeros(1, 3, 6, 7), action=torch.tensor([0]),
                  search_policy=torch.tensor([[0.5, 0.3, 0.2, 0, 0, 0, 0]]))
    mirrored = with_mirror(TrainBatch(fields), dict(obs_axis=-1, actions=[6, 5, 4, 3, 2, 1, 0]))
    assert mirrored.search_policy[1].tolist() == pytest.approx([0, 0, 0, 0, 0.2, 0.3, 0.5])


def _league_config(**battle):
    from sparring.dizoo.board_games.config.connect_four_search import config
    cfg = copy.deepcopy(config)
    cfg['battle'].update(battle)
    return cfg


@pytest.mark.slow
def test_misconfigurations_are_named(tmp_path):
    def collector(cfg):
        cfg = compile_config(cfg, exp_name=str(tmp_path / 'run'), save=False)
        kind = run_kind(cfg)
        obs_space, act_space = kind.spaces()
        policy = POLICY_REGISTRY.get('ppo')(cfg.policy, obs_space, act_space)
        return kind.collector(policy, 4, 0, 'p', 0, lambda slot: (['p', 'p'], [policy]))
    with pytest.raises(ConfigError, match='battle.collect_search.*num_simulation'):
        collector(_league_config(collect_search=dict(num_simulation=10)))
    with pytest.raises(ConfigError, match='"policy.learn.objective".*battle.collect_search'):
        collector(_league_config(collect_search=None))
    cfg = _league_config()
    cfg['env'] = dict(type='rock_paper_scissors')
    cfg['policy']['model'] = dict(type='mlp')
    cfg['policy']['learn'].pop('mirror')
    with pytest.raises(ConfigError, match='offers no search'):
        collector(cfg)
    with pytest.raises(ConfigError, match='collect_search'):
        compile_config(_league_config(collect_search=50), save=False)
    with pytest.raises(ConfigError, match='num_simulations'):
        collector(_league_config(collect_search=dict(num_simulations=0)))
    single = dict(env=dict(type='gym', id='CartPole-v1'), policy=dict(type='ppo'),
                  battle=dict(collect_search=dict(num_simulations=10)))
    with pytest.raises(ConfigError, match='single-agent'):
        collector(single)
    env = ConnectFourEnv(None, 1)
    recurrent = compile_section('policy', dict(type='ppo', model=dict(type='lstm'), learn=dict(objective='search')))
    with pytest.raises(ConfigError, match='discrete actions and a feed-forward'):
        POLICY_REGISTRY.get('ppo')(recurrent, env.observation_space, env.action_space)


def test_probabilities_and_value_in_one_pass_equal_the_two_calls():
    obs, mask, _, _ = _observations((3, 3, 4, 2))
    env = ConnectFourEnv(None, 1)
    for policy in (small_ppo(env), POLICY_REGISTRY.get('ppo')(compile_section('policy', dict(
            type='ppo', model=dict(type='cnn', conv_layers=[[8, 4, 1]], hidden_size=16),
            average=dict(enabled=True, answer=True))), env.observation_space, env.action_space, seed=0)):
        probs, value = policy.probabilities_and_value(obs, action_mask=mask)
        np.testing.assert_array_equal(probs, policy.action_probabilities(obs, action_mask=mask))
        np.testing.assert_array_equal(value, policy.value(obs))


@pytest.mark.parametrize('mode', ['serial', 'parallel'])
@pytest.mark.slow
def test_a_league_learns_by_expert_iteration_in_both_modes(tmp_path, mode):
    from sparring.framework import parallel_pipeline, serial_pipeline
    config = tiny_league_config(
        tmp_path / mode, policy=dict(learn=dict(objective='search', gamma=1.0, gae_lambda=1.0)),
        league=dict(players=dict(naive_sp=dict(branch_probs=dict(sp=1.0)))),
        battle=dict(collect_search=dict(num_simulations=4), eval_opponents=['bot:random']),
        parallel=fast_parallel())
    summary = (serial_pipeline if mode == 'serial' else parallel_pipeline)(config, seed=0)
    assert summary['env_steps'] >= 256
    # Every update trained on chunks carrying the search's visits (PPO refuses a chunk without them).
    from sparring.framework.player_loader import load_player
    assert load_player(config['exp_name']).version >= 2


@pytest.mark.slow
def test_the_value_target_blends_the_result_with_the_search_value_where_the_player_moved():
    env = make_battle_env(dict(type='connect_four'), 4, 0)
    acting = SearchActing(dict(num_simulations=4), C4, seed=0)
    plain = small_ppo(env, objective='search', gamma=1.0, gae_lambda=1.0)
    chunk = BattleCollector(env, plain, 16, lambda slot: ('me', plain), search=acting).collect().data
    blended = small_ppo(env, objective='search', gamma=1.0, gae_lambda=1.0, search_value_weight=0.25)
    result = plain._train_batch(chunk).ret.numpy()  # gamma = lambda = 1: each game's result
    # by hand: 0.75 * result + 0.25 * search value where the seat moved; the result alone where it waited
    keep = chunk['value_mask'].reshape(-1)
    moved = chunk['train_mask'].reshape(-1)[keep]
    searched = chunk['search_value'].reshape(-1)[keep]
    expected = np.where(moved, 0.75 * result + 0.25 * searched, result)
    np.testing.assert_allclose(blended._train_batch(chunk).ret.numpy(), expected, rtol=1e-6)
    assert moved.any() and (~moved).any() and not np.allclose(expected, result)
    with pytest.raises(ValueError, match='search_value'):
        blended._train_batch({k: v for k, v in chunk.items() if k != 'search_value'})
    with pytest.raises(ConfigError, match='search_value_weight.*objective=.search'):
        small_ppo(env, search_value_weight=0.5)
