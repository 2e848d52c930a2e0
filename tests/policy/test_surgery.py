"""Surgery on PPO players: each operation keeps the function where it can, and reports what it changes."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from sparring.config import compile_section
from sparring.config.schema import ConfigError
from sparring.policy.feature_map import AdaptedPolicy, FeatureMap, SpaceAdapter, SurgeryError
from sparring.policy.ppo import PPOPolicy
from sparring.policy.surgery import compare, new_space_observations, transplant
from sparring.worker.env.battle import make_battle_env

EXACT = 1e-6
pytestmark = pytest.mark.usefixtures('one_torch_thread')


def make_policy(obs_dim=7, actions=3, hidden=(16, 16), seed=0, continuous=False, **cfg):
    model = cfg.pop('model', {})
    if model.get('type', 'mlp') == 'mlp':
        model = dict(dict(hidden_sizes=list(hidden)), **model)
    section = compile_section('policy', dict(type='ppo', model=model,
                                             collect=dict(n_steps=8), learn=dict(epochs=2, num_minibatches=2), **cfg))
    obs_space = gym.spaces.Box(-1.0, 1.0, (obs_dim,), np.float32)
    act_space = gym.spaces.Box(-1.0, 1.0, (actions,), np.float32) if continuous else gym.spaces.Discrete(actions)
    return PPOPolicy(section, obs_space, act_space, seed=seed)


def trained(policy, seed=0):
    """Parameters far from their initialisation (so probabilities are not near uniform), and
    optimiser (and normaliser) state from two real updates."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for param in policy.net.parameters():
            param.add_(torch.as_tensor(rng.normal(0, 0.5, param.shape), dtype=param.dtype))
    obs_shape = policy.observation_space.shape
    T, B = 8, 8
    action = (rng.normal(size=(T, B, *policy.action_space.shape)).astype(np.float32) if policy.continuous
              else rng.integers(0, policy.action_space.n, (T, B)))
    chunk = dict(obs=rng.uniform(-1, 1, (T, B, *obs_shape)).astype(np.float32), action=action,
                 log_prob=np.full((T, B), -1.0, np.float32), value=np.zeros((T, B), np.float32),
                 reward=rng.normal(size=(T, B)).astype(np.float32), terminated=np.zeros((T, B), bool),
                 truncated=np.zeros((T, B), bool), next_value=np.zeros((T, B), np.float32))
    if getattr(policy, 'recurrent', False):
        chunk['window_state_0'] = np.zeros((T // policy.bptt_len, B, policy.model.hidden_size), np.float32)
        chunk['window_state_1'] = chunk['window_state_0'].copy()
    for _ in range(2):
        policy.learn(chunk)
    return policy


def random_obs(n, dim, seed=1):
    return np.random.default_rng(seed).uniform(-1, 1, (n, dim)).astype(np.float32)


@pytest.fixture(scope='module')
def recorded_pong():
    """Observations of real Pong duel games (random play), from both variants of the env: the
    same games, the extended one with one more feature at the end."""
    rng = np.random.default_rng(0)
    plain = make_battle_env(dict(type='pong_duel'), 16, 3)
    extended = make_battle_env(dict(type='pong_duel', extra_features=True), 16, 3)
    a, b = plain.reset(), extended.reset()
    old, new = [], []
    for _ in range(40):
        old.append(a.obs.reshape(-1, 7))
        new.append(b.obs.reshape(-1, 8))
        actions = rng.integers(0, 3, (16, 2))
        a, b = plain.step(actions), extended.step(actions)
    return np.concatenate(old), np.concatenate(new)


def assert_same_function(old, new, old_obs, new_obs, act_map, **masks):
    report = compare(old, new, old_obs, new_obs, act_map, **masks)
    assert report['max_value_change'] <= EXACT
    key = 'max_mean_action_change' if old.continuous else 'max_prob_change'
    assert report[key] <= EXACT, report
    return report


@pytest.mark.parametrize('shared_trunk', [False, True])
@pytest.mark.parametrize('widen', ['zero', 'split'])
def test_widening_hidden_layers_keeps_the_function(recorded_pong, widen, shared_trunk):
    old = trained(make_policy(hidden=(16, 12), model=dict(shared_trunk=shared_trunk)))
    new = make_policy(hidden=(40, 20), seed=5, model=dict(shared_trunk=shared_trunk))
    result = transplant(old, new, options=dict(widen=widen, split_jitter=0.3))
    identity = FeatureMap.identity(3)
    assert_same_function(old, new, random_obs(500, 7), random_obs(500, 7), identity)
    assert_same_function(old, new, recorded_pong[0], recorded_pong[0], identity)
    assert any(line.startswith('actor.0: 16 -> 40') for line in result.changes)
    assert new.version == old.version


def test_split_copies_units_and_shares_their_outgoing_weights():
    old = trained(make_policy(hidden=(4, 4)))
    new = make_policy(hidden=(10, 4), seed=3)
    result = transplant(old, new, options=dict(widen='split', split_jitter=0.5, seed=7))
    params, before = new.get_params(), old.get_params()
    rows = FeatureMap.widened(4, 10, 'split', np.random.default_rng([7, 0]), 0.5)
    incoming, outgoing = params['model.actor_trunk.0.weight'], params['model.actor_trunk.2.weight']
    for unit in range(10):  # every unit, kept or copied, has its source's incoming weights
        torch.testing.assert_close(incoming[unit], before['model.actor_trunk.0.weight'][rows.source[unit]])
    for source in range(4):  # the copies' outgoing fractions add up to the old weight
        copies = np.flatnonzero(rows.source == source)
        torch.testing.assert_close(outgoing[:, copies].sum(1), before['model.actor_trunk.2.weight'][:, source])
        assert len(copies) >= 2  # 6 new units over 4 old ones: each is split before any twice
    assert 'actor.0: 4 -> 10: 6 split' in result.changes


def test_adding_an_observation_feature_keeps_the_function_and_extends_the_normaliser(recorded_pong):
    old_obs, new_obs = recorded_pong
    old = make_policy(obs_norm=True)
    old.net.normalizer.update(old_obs)
    trained(old)
    new = make_policy(obs_dim=8, obs_norm=True, hidden=(24, 16), seed=2)
    result = transplant(old, new, names=dict(obs=[f'f{i}' for i in range(8)]))
    assert_same_function(old, new, old_obs, new_obs, FeatureMap.identity(3))
    carried = new_space_observations(random_obs(300, 7), result.obs_map, (8,), fill=5.0)  # any value: weight 0
    assert_same_function(old, new, random_obs(300, 7), carried, FeatureMap.identity(3))
    # the old features keep their statistics; the new one starts neutral (mean 0, variance 1)
    torch.testing.assert_close(new.net.normalizer.mean[:7], old.net.normalizer.mean)
    torch.testing.assert_close(new.net.normalizer.var[:7], old.net.normalizer.var)
    assert new.net.normalizer.mean[7] == 0.0 and new.net.normalizer.var[7] == 1.0
    assert new.net.normalizer.count == old.net.normalizer.count
    assert torch.all(new.get_params()['model.actor_trunk.0.weight'][:16, 7] == 0)  # old units ignore it
    assert 'obs: 7 -> 8: +1 at [7] (f7)' in result.changes


def test_new_observation_statistics_can_come_from_new_env_observations(recorded_pong):
    old_obs, new_obs = recorded_pong
    old = trained(make_policy(obs_norm=True))
    new = make_policy(obs_dim=8, obs_norm=True, seed=2)
    transplant(old, new, new_observations=new_obs)
    assert float(new.net.normalizer.mean[7]) == pytest.approx(float(new_obs[:, 7].mean()), abs=1e-6)
    assert float(new.net.normalizer.var[7]) == pytest.approx(float(new_obs[:, 7].var()), rel=1e-5)
    assert_same_function(old, new, old_obs, new_obs, FeatureMap.identity(3))


def test_new_actions_start_with_a_negligible_probability():
    old = trained(make_policy(actions=3))
    new = make_policy(actions=5, seed=1)
    result = transplant(old, new, options=dict(new_action_offset=-30.0))
    obs = random_obs(400, 7)
    report = assert_same_function(old, new, obs, obs, result.action_map)
    assert report['max_new_action_prob'] <= 2 * np.exp(-30.0)  # at most e^offset each, by construction
    mask = np.ones((400, 5), bool)
    mask[:, 0] = False  # masks still apply to the old actions
    probs = new.action_probabilities(obs, mask)
    assert np.all(probs[:, 0] == 0) and np.allclose(probs.sum(1), 1.0)


def test_a_new_action_prior_is_calibrated_and_its_deviation_reported():
    old = trained(make_policy(actions=3))
    new = make_policy(actions=4, seed=1)
    obs = random_obs(400, 7)
    transplant(old, new, options=dict(new_action_prior=0.1), observations=obs)
    probs = new.action_probabilities(obs)
    assert probs[:, 3].mean() == pytest.approx(0.1, abs=1e-3)
    report = compare(old, new, obs, obs, FeatureMap.appended(3, 4))
    # the old actions share what the new one takes: p_new(a) = p_old(a) * (1 - p_new(3)) exactly
    expected = np.abs(old.action_probabilities(obs) * probs[:, 3:4]).max()
    assert report['max_prob_change'] == pytest.approx(expected, rel=1e-4)
    assert report['max_new_action_prob'] == pytest.approx(probs[:, 3].max(), rel=1e-5)


def test_removing_an_observation_feature_clamps_it_to_its_mean_and_reports_the_deviation(recorded_pong):
    old_obs = recorded_pong[0]
    old = trained(make_policy(obs_norm=True))
    old.net.normalizer.update(old_obs)
    new = make_policy(obs_dim=6, obs_norm=True, seed=4)
    keep = [0, 1, 2, 3, 4, 6]  # drop feature 5 (the opponent's paddle)
    fmap = FeatureMap(keep, 7)
    result = transplant(old, new, obs_map=fmap, observations=old_obs)
    report = compare(old, new, old_obs, old_obs[:, keep], FeatureMap.identity(3))
    assert report['max_prob_change'] > 1e-4  # the feature mattered: approximate, and measured
    # exactly: the new policy is the old one with the feature held at its mean
    clamped = old_obs.copy()
    clamped[:, 5] = old_obs[:, 5].mean()
    assert_same_function(old, new, clamped, old_obs[:, keep], FeatureMap.identity(3))
    assert result.obs_fill[5] == pytest.approx(old_obs[:, 5].mean(), abs=1e-6)
    assert any('removed observation features [5]' in line for line in result.changes)


def test_removing_an_action_renormalises_the_others():
    old = trained(make_policy(actions=4))
    new = make_policy(actions=3, seed=2)
    fmap = FeatureMap([0, 2, 3], 4)  # action 1 goes
    transplant(old, new, act_map=fmap)
    obs = random_obs(300, 7)
    p_old, p_new = old.action_probabilities(obs), new.action_probabilities(obs)
    expected = p_old[:, [0, 2, 3]] / p_old[:, [0, 2, 3]].sum(1, keepdims=True)
    np.testing.assert_allclose(p_new, expected, atol=EXACT)
    report = compare(old, new, obs, obs, fmap)
    assert report['max_prob_change'] == pytest.approx(np.abs(expected - p_old[:, [0, 2, 3]]).max(), rel=1e-4)
    assert report['max_total_variation'] == pytest.approx(p_old[:, 1].max(), rel=1e-4)
    assert report['max_value_change'] <= EXACT


def test_optimizer_state_moves_with_the_parameters():
    old = trained(make_policy(hidden=(8, 8)))
    new = make_policy(obs_dim=9, hidden=(12, 8), seed=3)
    transplant(old, new)
    names = [name for name, _ in old.net.named_parameters()]
    old_state = old.optimizer.state_dict()['state']
    new_state = new.optimizer.state_dict()['state']
    assert len(new_state) == len(old_state) == len(names)
    for i in range(len(names)):
        before, after = old_state[i], new_state[i]
        assert int(after['step']) == int(before['step'])
        slices = tuple(slice(0, n) for n in before['exp_avg'].shape)  # the old entries come first here
        torch.testing.assert_close(after['exp_avg'][slices], before['exp_avg'])
        torch.testing.assert_close(after['exp_avg_sq'][slices], before['exp_avg_sq'])
        new_part = torch.ones_like(after['exp_avg'], dtype=torch.bool)
        new_part[slices] = False
        if new_part.any():
            assert torch.all(after['exp_avg'][new_part] == 0)
            assert torch.allclose(after['exp_avg_sq'][new_part], before['exp_avg_sq'].mean())
    assert new.optimizer.param_groups[0]['eps'] == new.cfg['learn']['adam_eps']
    trained(new)  # and it trains on


def test_continuous_actions_keep_their_mean_and_log_std():
    old = trained(make_policy(actions=2, continuous=True))
    new = make_policy(actions=2, continuous=True, hidden=(32, 16), seed=1)
    transplant(old, new, options=dict(widen='split'))
    assert_same_function(old, new, random_obs(200, 7), random_obs(200, 7), FeatureMap.identity(2))
    torch.testing.assert_close(new.model.log_std, old.model.log_std)


@pytest.mark.parametrize('widen', ['zero', 'split'])
def test_widening_the_lstm_keeps_the_function_over_whole_sequences(widen):
    lstm = dict(type='lstm', encoder_sizes=[12], hidden_size=8, bptt_len=4)
    old = trained(make_policy(model=lstm))
    new = make_policy(obs_dim=8, model=dict(lstm, encoder_sizes=[20], hidden_size=14), seed=2)
    result = transplant(old, new, options=dict(widen=widen, split_jitter=0.2))
    sequences = np.random.default_rng(3).uniform(-1, 1, (30, 6, 7)).astype(np.float32)  # [T, B, obs]
    carried = new_space_observations(sequences, result.obs_map, (8,), fill=0.7, batch_dims=2)
    report = assert_same_function(old, new, sequences, carried, FeatureMap.identity(3))
    assert report['observations'] == 180
    assert 'core: 8 -> 14' in ' '.join(result.changes)


def test_an_adapted_old_policy_plays_the_new_spaces_as_before():
    old = trained(make_policy(obs_dim=7, actions=3))
    obs_map, act_map = FeatureMap([0, 1, 2, -1, 3, 4, 6], 7), FeatureMap([0, 1, -1, 2], 3)  # obs 5 gone, new ones
    adapter = SpaceAdapter.from_maps(old.observation_space, old.action_space, obs_map, act_map,
                                     obs_fill=np.full(7, 0.25, np.float32))
    adapted = AdaptedPolicy(old, adapter, gym.spaces.Box(-1, 1, (7,)), gym.spaces.Discrete(4))
    new_obs = random_obs(200, 7, seed=5)
    seen = new_obs[:, [0, 1, 2, 4, 5, 5, 6]].copy()
    seen[:, 5] = 0.25  # the removed feature at its stand-in value
    np.testing.assert_allclose(adapted.value(new_obs), old.value(seen), atol=EXACT)
    probs = adapted.action_probabilities(new_obs)
    np.testing.assert_allclose(probs[:, [0, 1, 3]], old.action_probabilities(seen), atol=EXACT)
    assert np.all(probs[:, 2] == 0)  # the new action does not exist for it
    actions = adapted.act(new_obs).action
    assert set(np.unique(actions)) <= {0, 1, 3}
    # a legal set without any of its own actions: it takes the first legal new one
    only_new = np.zeros((200, 4), bool)
    only_new[:, 2] = True
    assert np.all(adapted.act(new_obs, action_mask=only_new).action == 2)


def test_adapters_compose_over_successive_surgeries():
    space, actions = gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2)
    first = SpaceAdapter.from_maps(space, actions, FeatureMap([0, 1, 2, 3, -1], 4), FeatureMap.identity(2),
                                   np.zeros(4, np.float32))
    # the second surgery drops feature 1 (mean 0.5) and moves the added one first
    second_obs = FeatureMap([4, 0, 2, 3], 5)
    both = first.then(second_obs, FeatureMap([0, 1, -1], 2), obs_fill=np.array([0, 0.5, 0, 0, 0], np.float32))
    obs = np.arange(8, dtype=np.float32).reshape(2, 4)  # the newest env's observations
    np.testing.assert_array_equal(both.observations(obs), [[1, 0.5, 2, 3], [5, 0.5, 6, 7]])
    np.testing.assert_array_equal(both.action_index, [0, 1])


def test_surgery_refuses_what_it_cannot_do_and_names_it():
    old = make_policy(hidden=(16, 16))
    with pytest.raises(SurgeryError, match=r'actor.0.*16 -> 8 units; narrowing'):
        transplant(old, make_policy(hidden=(8, 16)))
    with pytest.raises(SurgeryError, match='number'):
        transplant(old, make_policy(hidden=(16, 16, 16)))
    with pytest.raises(SurgeryError, match='activation'):
        transplant(old, make_policy(model=dict(activation='relu')))
    with pytest.raises(SurgeryError, match='obs_norm'):
        transplant(old, make_policy(obs_norm=True))
    with pytest.raises(SurgeryError, match='removing entries needs names'):
        transplant(old, make_policy(obs_dim=6))
    with pytest.raises(ConfigError, match='surgery.widen'):
        transplant(old, make_policy(), options=dict(widen='double'))
    with pytest.raises(ConfigError, match="unknown key 'widn'"):
        transplant(old, make_policy(), options=dict(widn='zero'))
    with pytest.raises(SurgeryError, match='does not fit'):
        transplant(old, make_policy(obs_dim=8), obs_map=FeatureMap.identity(7))
