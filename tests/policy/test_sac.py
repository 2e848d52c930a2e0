"""SAC: the tanh log-probability correction, the temperature's gradient sign, Polyak targets, masked discrete
SAC, exact resumption from a checkpoint (replay included), config errors, and the pipelines it runs in."""
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from sparring.config.compile import compile_section
from sparring.config.schema import ConfigError
from sparring.framework import serial_pipeline
from sparring.policy import sac_loss as L
from sparring.policy.sac import SACPolicy


@pytest.fixture(autouse=True, scope='module')
def one_torch_thread():
    """Small networks on a loaded machine run far faster with one intra-op thread (see DESIGN)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


BOX = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)


def _policy(action_space=BOX, obs_dim=3, seed=0, **sections):
    policy_cfg = dict(type='sac', model=dict(hidden_sizes=[16]))
    for name, values in sections.items():
        policy_cfg[name] = dict(policy_cfg.get(name, {}), **values) if isinstance(values, dict) else values
    cfg = compile_section('policy', policy_cfg)
    return SACPolicy(cfg, gym.spaces.Box(-1.0, 1.0, (obs_dim,), np.float32), action_space, seed=seed)


def _chunk(policy, T=16, B=2, seed=0, mask=None):
    rng = np.random.default_rng(seed)
    obs = rng.standard_normal((T, B, 3)).astype(np.float32)
    act = policy.act(obs.reshape(T * B, 3), action_mask=None if mask is None else mask.reshape(T * B, -1))
    chunk = dict(obs=obs, next_obs=rng.standard_normal((T, B, 3)).astype(np.float32),
                 action=act.action.reshape(T, B, *act.action.shape[1:]), reward=rng.standard_normal((T, B)),
                 terminated=rng.random((T, B)) < 0.1, truncated=np.zeros((T, B), bool),
                 log_prob=np.zeros((T, B), np.float32), value=np.zeros((T, B), np.float32),
                 next_value=np.zeros((T, B), np.float32))
    if mask is not None:
        chunk['action_mask'] = mask
    return chunk


# -- the maths ---------------------------------------------------------------------------------

def test_tanh_log_prob_matches_the_numerical_density_of_the_squashed_action():
    mean, log_std = torch.tensor([[0.3]], dtype=torch.float64), torch.tensor([[-0.2]], dtype=torch.float64)
    a = torch.linspace(-0.99, 0.99, 199, dtype=torch.float64).unsqueeze(-1)

    def cdf(x):  # P(tanh(u) <= x) for u ~ N(mean, std)
        z = (torch.atanh(x) - mean) / log_std.exp()
        return 0.5 * (1 + torch.erf(z / math.sqrt(2)))

    h = 1e-5
    numerical = (cdf(a + h) - cdf(a - h)) / (2 * h)  # the density by finite differences of the CDF
    analytic = L.squashed_log_prob(mean, log_std, torch.atanh(a)).exp().unsqueeze(-1)
    torch.testing.assert_close(analytic, numerical, rtol=1e-5, atol=1e-7)
    # Far into the saturation the stable form stays finite where log(1 - tanh^2) would not.
    assert torch.isfinite(L.tanh_log_det(torch.tensor([[30.0, -30.0]]))).all()


def test_temperature_gradient_raises_alpha_below_the_target_entropy_and_lowers_it_above():
    for entropy, target, sign in ((0.5, 1.0, -1.0), (2.0, 1.0, 1.0)):
        log_alpha = torch.zeros((), requires_grad=True)
        L.temperature_loss(log_alpha, torch.full((8,), entropy), target).backward()
        # Gradient descent moves log alpha against the gradient: up when the entropy is too low.
        assert math.copysign(1.0, float(log_alpha.grad)) == sign
        assert float(log_alpha.grad) == pytest.approx(entropy - target)


def test_polyak_update_moves_targets_by_tau():
    source = [torch.full((3,), 1.0), torch.full((2, 2), 4.0)]
    target = [torch.zeros(3), torch.zeros(2, 2)]
    L.polyak_update(target, source, 0.25)
    torch.testing.assert_close(target[0], torch.full((3,), 0.25))
    torch.testing.assert_close(target[1], torch.full((2, 2), 1.0))
    policy = _policy(learn=dict(learning_starts=1, updates_per_chunk=1, tau=0.1))
    before = [p.clone() for p in policy.target_critics.parameters()]
    policy.learn(_chunk(policy))
    for old, new, online in zip(before, policy.target_critics.parameters(), policy.model.critics.parameters()):
        torch.testing.assert_close(new, old + 0.1 * (online - old))


def test_masked_discrete_sac_never_puts_mass_on_an_illegal_action():
    policy = _policy(gym.spaces.Discrete(5), learn=dict(learning_starts=1, updates_per_chunk=4, batch_size=8))
    rng = np.random.default_rng(1)
    mask = rng.random((16, 2, 5)) < 0.5
    mask[..., 0] |= ~mask.any(-1)  # at least one legal action everywhere
    for seed in range(3):
        stats = policy.learn(_chunk(policy, seed=seed, mask=mask))
        assert np.isfinite(stats['actor_loss']) and np.isfinite(stats['critic_loss'])
    flat = mask.reshape(32, 5)
    obs = rng.standard_normal((32, 3)).astype(np.float32)
    probs = policy.action_probabilities(obs, action_mask=flat)
    assert (probs[~flat] == 0).all() and np.allclose(probs.sum(-1), 1.0)
    for _ in range(20):
        assert flat[np.arange(32), policy.act(obs, action_mask=flat).action].all()
    # The target entropy is a fraction of each state's largest: log(legal count).
    target = L.discrete_target_entropy(torch.as_tensor(flat), 5, 0.5)
    torch.testing.assert_close(target, 0.5 * torch.as_tensor(flat.sum(-1)).float().log())


def test_box_actions_stay_inside_the_bounds_and_round_trip_to_the_squashed_space():
    policy = _policy()
    obs = np.random.default_rng(0).standard_normal((64, 3)).astype(np.float32) * 5
    action = policy.act(obs).action
    assert action.shape == (64, 1) and (np.abs(action) <= 2.0).all()
    back = policy.from_env_action(torch.as_tensor(action))
    torch.testing.assert_close(policy.to_env_action(back), torch.as_tensor(action))


# -- the policy --------------------------------------------------------------------------------

def test_no_gradient_step_before_learning_starts_and_a_step_per_transition_after():
    policy = _policy(learn=dict(learning_starts=40, batch_size=8))
    params = policy.get_params()
    stats = policy.learn(_chunk(policy))  # 32 transitions < 40
    assert stats['gradient_steps'] == 0 and stats['replay_size'] == 32 and policy.version == 1
    assert all(torch.equal(params[k], v) for k, v in policy.get_params().items())
    stats = policy.learn(_chunk(policy, seed=1))
    assert stats['gradient_steps'] == 32 and stats['samples_consumed'] == 32 * 8  # the replay ratio: 1 step each


def test_get_params_is_the_actor_only_and_set_params_keeps_the_critics():
    a, b = _policy(seed=0), _policy(seed=1)
    params = a.get_params()
    assert params and not any(k.startswith('model.critics') for k in params)
    critics = [p.clone() for p in b.model.critics.parameters()]
    b.set_params(params, 7)
    assert b.version == 7 and all(torch.equal(x, y) for x, y in zip(critics, b.model.critics.parameters()))
    obs = np.ones((4, 3), np.float32)
    np.testing.assert_array_equal(a.act(obs, deterministic=True).action, b.act(obs, deterministic=True).action)
    with pytest.raises(ValueError, match='do not fit this actor'):
        b.set_params({'model.actor.0.weight': torch.zeros(16, 3)}, 0)


@pytest.mark.parametrize('prioritized', [False, True])
@pytest.mark.parametrize('discrete', [False, True])
def test_a_checkpoint_resumes_exactly_replay_included(prioritized, discrete, tmp_path):
    space = gym.spaces.Discrete(3) if discrete else BOX
    mask = np.ones((16, 2, 3), bool) if discrete else None
    kwargs = dict(learn=dict(learning_starts=1, updates_per_chunk=3, batch_size=8), replay=dict(prioritized=prioritized),
                  obs_norm=True)
    a = _policy(space, **kwargs)
    a.learn(_chunk(a, mask=mask))
    b = _policy(space, seed=5, **kwargs)
    from sparring.worker.state_file import load_state_file, save_state_file
    path = save_state_file(a.state_dict(), str(tmp_path / 'sac.pt'))  # as a checkpoint does: nothing shared
    b.load_state_dict(load_state_file(path))
    assert len(b.replay) == len(a.replay) == 32
    chunk = _chunk(_policy(space, seed=9), seed=1, mask=mask)  # acting would draw from a's generator only
    sa, sb = a.learn(chunk), b.learn(chunk)
    assert sa['critic_loss'] == sb['critic_loss'] and sa['alpha'] == sb['alpha']
    assert all(torch.equal(v, b.net.state_dict()[k]) for k, v in a.net.state_dict().items())
    assert all(torch.equal(x, y) for x, y in zip(a.target_critics.parameters(), b.target_critics.parameters()))
    obs = np.random.default_rng(0).random((16, 3)).astype(np.float32)
    np.testing.assert_array_equal(a.act(obs).action, b.act(obs).action)


def test_a_non_finite_loss_skips_the_step_without_touching_the_parameters():
    policy = _policy(learn=dict(learning_starts=1, updates_per_chunk=2, batch_size=8))
    chunk = _chunk(policy)
    chunk['reward'][:] = np.inf
    before = {k: v.clone() for k, v in policy.net.state_dict().items()}
    stats = policy.learn(chunk)
    assert stats['skipped_updates'] == 2
    assert all(torch.equal(v, policy.net.state_dict()[k]) for k, v in before.items())


@pytest.mark.parametrize('policy_cfg, message', [
    (dict(model=dict(type='mlp')), 'sac_mlp'),
    (dict(learn=dict(batch_size=512), replay=dict(capacity=100)), 'exceeds'),
    (dict(learn=dict(tau=0.0)), 'policy.learn.tau'),
])
def test_config_errors_name_the_key(policy_cfg, message):
    with pytest.raises(ConfigError, match=message):
        compile_section('policy', dict(type='sac', **policy_cfg))


def test_unbounded_box_actions_are_refused():
    with pytest.raises(TypeError, match='unbounded'):
        _policy(gym.spaces.Box(-np.inf, np.inf, (2,)))


# -- pipelines ---------------------------------------------------------------------------------

def _pendulum_config(path):
    return dict(exp_name=str(path), env=dict(type='pendulum', collector_env_num=2, evaluator_env_num=2,
                                             n_evaluator_episodes=2),
                policy=dict(type='sac', model=dict(hidden_sizes=[32]), collect=dict(n_steps=16),
                            learn=dict(learning_starts=64, updates_per_chunk=2, batch_size=32)),
                train=dict(max_env_steps=256, eval_every_iters=4, checkpoint_every_iters=4, progress_bar=False,
                           tensorboard=False))


def test_serial_pipeline_trains_and_resumes_sac(tmp_path):
    summary = serial_pipeline(_pendulum_config(tmp_path / 'run'), seed=1)
    assert summary['env_steps'] == 256 and summary['train_iter'] == 8
    resumed = serial_pipeline(_pendulum_config(tmp_path / 'run'), seed=1, resume=True, max_env_steps=384)
    assert resumed['env_steps'] == 384 and resumed['train_iter'] == 12


@pytest.mark.slow
def test_league_pipeline_runs_a_discrete_sac_league(tmp_path):
    config = dict(
        exp_name=str(tmp_path / 'league'),
        env=dict(type='tictactoe', collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=8),
        policy=dict(type='sac', model=dict(hidden_sizes=[32]), collect=dict(n_steps=8),
                    learn=dict(learning_starts=16, updates_per_chunk=2, batch_size=16), replay=dict(capacity=1000)),
        league=dict(type='one_vs_one', active_players=dict(naive_sp=1), players=dict(naive_sp=dict(one_phase_step=3))),
        battle=dict(eval_deterministic=True),
        train=dict(max_env_steps=320, eval_every_iters=5, checkpoint_every_iters=5, progress_bar=False,
                   tensorboard=False),
    )
    summary = serial_pipeline(config, seed=0)
    assert summary['rounds'] == 10
    assert len(summary['eval']) == 1 and 'random' in next(iter(summary['eval'].values()))
    assert summary['league_table'].count('naive_sp') > 1  # snapshots of the SAC player joined the league


@pytest.mark.slow
def test_league_pipeline_runs_a_sac_league_on_continuous_pong_duel(tmp_path):
    config = dict(
        exp_name=str(tmp_path / 'pong'),
        env=dict(type='pong_duel', continuous=True, points_to_win=1, max_steps=100, collector_env_num=4,
                 evaluator_env_num=4, n_evaluator_episodes=4, stop_value=None),
        policy=dict(type='sac', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8),
                    learn=dict(learning_starts=32, updates_per_chunk=2, batch_size=16), replay=dict(capacity=1000)),
        league=dict(type='one_vs_one', active_players=dict(naive_sp=1), players=dict(naive_sp=dict(one_phase_step=3))),
        train=dict(max_env_steps=512, eval_every_iters=8, checkpoint_every_iters=8, progress_bar=False,
                   tensorboard=False),
    )
    summary = serial_pipeline(config, seed=0)
    assert summary['env_steps'] == 512
    assert summary['league_table'].count('naive_sp') > 1  # snapshots (actors only) joined the league
    rates = next(iter(summary['eval'].values()))
    assert 'random' in rates and sum(rates['random'][k] for k in ('win', 'draw', 'loss')) == pytest.approx(1.0)


@pytest.mark.parametrize('discrete', [False, True])
def test_a_move_reaches_the_networks_targets_temperature_and_optimiser_state(discrete):
    """``meta`` tensors carry no data: a move that reaches them all would reach a GPU too."""
    space = gym.spaces.Discrete(3) if discrete else BOX
    policy = _policy(space, learn=dict(learning_starts=1, updates_per_chunk=2, batch_size=8))
    policy.learn(_chunk(policy, mask=np.ones((16, 2, 3), bool) if discrete else None))
    assert policy.optimizer.state
    meta = torch.device('meta')
    policy.to_device(meta)
    for module in (policy.net, policy.target_critics):
        assert all(t.device == meta for t in module.state_dict().values())
    assert policy.log_alpha.device == meta
    params = {id(p) for p in policy.optimizer.param_groups[0]['params']}
    assert params == {id(p) for p in policy.net.parameters()} | {id(policy.log_alpha)}  # still the moved ones
    for state in policy.optimizer.state.values():
        # The step count's place is torch's choice (beside the parameter for the fused Adam, else the CPU).
        assert all(t.device == meta for k, t in state.items() if k != 'step')
