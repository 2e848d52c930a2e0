"""KL-penalty PPO and OpenAI Five's gradient clip: losses and rules against hand computations, and the policy."""
import math

import numpy as np
import pytest
import torch

import sparring.dizoo  # noqa: F401  (registers the envs)
from sparring.config import compile_section
from sparring.config.schema import ConfigError
from sparring.config.registry import POLICY_REGISTRY
from sparring.policy import distributions as D
from sparring.policy import functional as F
from sparring.policy.grad_clip import SecondMomentClipper, clip_to_second_moment
from sparring.worker.collector import SampleCollector
from sparring.worker.env.manager import make_env_manager

pytestmark = pytest.mark.usefixtures('one_torch_thread')


# -- the pure pieces ----------------------------------------------------------------------------

def test_kl_penalty_loss_hand_case_with_hinge():
    log_prob = torch.log(torch.tensor([1.5, 0.5]))  # ratios 1.5 and 0.5 against old log-probs of 0
    adv = torch.tensor([1.0, -1.0])
    kl = torch.tensor([0.02, 0.04])
    loss, kl_mean = F.kl_penalty_loss(log_prob, torch.zeros(2), adv, kl, beta=2.0, eta=50.0, kl_target=0.01)
    # surrogate mean(1.5, -0.5) = 0.5; KL 0.03; beta KL = 0.06; hinge 50 * (0.03 - 0.02)^2 = 0.005
    assert kl_mean.item() == pytest.approx(0.03)
    assert loss.item() == pytest.approx(-0.5 + 0.06 + 0.005, abs=1e-7)


def test_kl_penalty_hinge_is_off_below_twice_the_target_and_its_gradient_is_the_hand_one():
    kl = torch.tensor([0.01, 0.02], requires_grad=True)
    loss, _ = F.kl_penalty_loss(torch.zeros(2), torch.zeros(2), torch.ones(2), kl, beta=3.0, eta=50.0,
                                kl_target=0.01)
    assert loss.item() == pytest.approx(-1.0 + 3.0 * 0.015)  # KL 0.015 < 0.02: no hinge
    loss.backward()
    np.testing.assert_allclose(kl.grad.numpy(), [1.5, 1.5])  # d(beta * mean)/d kl_i = beta / 2
    kl = torch.tensor([0.05, 0.05], requires_grad=True)
    loss, _ = F.kl_penalty_loss(torch.zeros(2), torch.zeros(2), torch.ones(2), kl, beta=3.0, eta=50.0,
                                kl_target=0.01)
    loss.backward()
    # beta / 2 + eta * 2 * (0.05 - 0.02) / 2 = 1.5 + 1.5
    np.testing.assert_allclose(kl.grad.numpy(), [3.0, 3.0], rtol=1e-6)


@pytest.mark.parametrize('kl, beta, lr_mult, expected', [
    (0.05, 1.0, 1.0, (1.5, 1.0)),  # above 2 * target: beta x 1.5
    (0.004, 1.0, 1.0, (1.0 / 1.5, 1.0)),  # below target / 2: beta / 1.5
    (0.015, 1.0, 1.0, (1.0, 1.0)),  # in [target / 2, 2 target]: unchanged
    (0.02, 1.0, 1.0, (1.0, 1.0)),  # exactly 2 target is still inside
    (0.05, 25.0, 1.0, (35.0, 1.0 / 1.5)),  # beta clamped to 35 and past 30: the lr shrinks
    (0.05, 18.0, 1.0, (27.0, 1.0)),  # 27 is inside [1/30, 30]: the lr stays
    (0.001, 1.0 / 25.0, 1.0, (1.0 / 35.0, 1.5)),  # beta clamped to 1/35, below 1/30: the lr grows
    (0.05, 35.0, 0.1, (35.0, 0.1)),  # the lr multiplier stops at its bounds
    (0.001, 1.0 / 35.0, 10.0, (1.0 / 35.0, 10.0)),
])
def test_adaptive_beta_rule(kl, beta, lr_mult, expected):
    state = F.adapt_kl_penalty(kl, 0.01, beta, lr_mult, factor=1.5)
    assert state.beta == pytest.approx(expected[0])
    assert state.lr_multiplier == pytest.approx(expected[1])


def test_categorical_kl_hand_case_and_masked_actions_count_nothing():
    old = torch.log(torch.tensor([[0.5, 0.5, 0.0]]).clamp_min(1e-45))
    new = torch.log(torch.tensor([[0.25, 0.75, 0.0]]).clamp_min(1e-45))
    expected = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert D.categorical_kl(old, new).item() == pytest.approx(expected, rel=1e-6)
    logits_old, logits_new = torch.tensor([[0.0, 0.0, 5.0]]), torch.tensor([[0.0, math.log(3.0), -5.0]])
    mask = torch.tensor([[True, True, False]])
    kl = D.categorical_kl(D.categorical_log_probs(logits_old, mask), D.categorical_log_probs(logits_new, mask))
    assert kl.item() == pytest.approx(expected, rel=1e-6)


def test_gaussian_kl_matches_torch_distributions():
    mean_old, mean_new = torch.tensor([[0.3, -1.0]]), torch.tensor([[0.1, -0.5]])
    log_std_old, log_std_new = torch.tensor([0.2, -0.3]), torch.tensor([0.0, 0.1])
    ours = D.gaussian_kl(mean_old, log_std_old, mean_new, log_std_new)
    normal = torch.distributions.Normal
    ref = torch.distributions.kl_divergence(normal(mean_old, log_std_old.exp()),
                                            normal(mean_new, log_std_new.exp())).sum(-1)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-6)


def test_five_clip_hand_case():
    grad = torch.tensor([3.0, -3.0, 0.5, -0.5])
    v = torch.tensor([0.04, 0.04, 0.04, 0.0])
    # bounds 5 * sqrt(v) = 1, 1, 1, 0
    np.testing.assert_allclose(clip_to_second_moment(grad, v, 5.0).numpy(), [1.0, -1.0, 0.5, 0.0])


def test_five_clipper_tracks_the_unclipped_second_moment_and_clips_against_it():
    param = torch.nn.Parameter(torch.zeros(2))
    clipper = SecondMomentClipper([param], scale=1.0, beta2=0.9)
    param.grad = torch.tensor([1.0, 1.0])
    assert clipper.clip_() == 0.0  # step 1: v_hat = g^2, bound = |g|: nothing is clipped
    np.testing.assert_allclose(param.grad.numpy(), [1.0, 1.0])
    param.grad = torch.tensor([10.0, 1.0])
    fraction = clipper.clip_()
    # v = 0.9 * 0.1 + 0.1 * g^2 = [10.09, 0.19]; bias correction 1 - 0.81 = 0.19, so v_hat = [53.1, 1]
    v_hat = np.array([10.09, 0.19]) / 0.19
    np.testing.assert_allclose(param.grad.numpy(), [math.sqrt(v_hat[0]), 1.0], rtol=1e-5)
    assert fraction == 0.5
    # the moment holds the *unclipped* gradient's square
    np.testing.assert_allclose(clipper.second_moments[0].numpy(), [10.09, 0.19], rtol=1e-5)
    saved = clipper.state_dict()
    clipper.reset()
    assert clipper.steps == 0 and not clipper.second_moments[0].any()
    clipper.load_state_dict(saved)
    assert clipper.steps == 2
    np.testing.assert_allclose(clipper.second_moments[0].numpy(), [10.09, 0.19], rtol=1e-5)


# -- the policy ---------------------------------------------------------------------------------

def _policy_and_chunk(env_type='pendulum', seed=0, **learn):
    cfg = compile_section('policy', dict(type='ppo', collect=dict(n_steps=32),
                                         learn=dict(dict(objective='kl_penalty', epochs=4, num_minibatches=2),
                                                    **learn)))
    env = make_env_manager(dict(type=env_type), 4, seed)
    policy = POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=seed)
    collector = SampleCollector(env, policy, 32)
    return policy, collector


def test_kl_penalty_stops_the_epochs_early_and_raises_beta_and_then_lowers_the_lr():
    policy, collector = _policy_and_chunk(lr=0.05, kl_target=1e-6, anneal_lr=False)
    policy.objective.kl_beta = 25.0
    stats = policy.learn(collector.collect().data)
    assert stats['early_stop'] == 1.0
    assert stats['gradient_steps'] == 2  # one epoch of 2 minibatches, then the KL was far past 4 * target
    assert stats['kl'] > 4e-6 and stats['kl_beta'] == 25.0
    assert policy.objective.kl_beta == 35.0 and policy.objective.lr_multiplier == pytest.approx(1 / 1.5)
    stats = policy.learn(collector.collect().data)
    assert stats['lr'] == pytest.approx(0.05 / 1.5)
    state = policy.state_dict()
    other, _ = _policy_and_chunk(lr=0.05, kl_target=1e-6, anneal_lr=False)
    other.load_state_dict(state)
    assert (other.objective.kl_beta, other.objective.lr_multiplier) == (policy.objective.kl_beta, policy.objective.lr_multiplier)


def test_kl_penalty_lowers_beta_when_the_update_barely_moves_the_policy():
    policy, collector = _policy_and_chunk(lr=1e-7, kl_target=0.01, env_type='cartpole')
    stats = policy.learn(collector.collect().data)
    assert stats['early_stop'] == 0.0 and stats['gradient_steps'] == 8
    assert stats['kl'] < 0.005
    assert policy.objective.kl_beta == pytest.approx(1 / 1.5)
    policy.reset_optimizer()  # a league reset starts the adaptation over
    assert (policy.objective.kl_beta, policy.objective.lr_multiplier, policy.value_replay_batch) == (1.0, 1.0, None)


def test_kl_penalty_fits_the_value_on_the_previous_chunk_too(monkeypatch):
    policy, collector = _policy_and_chunk(env_type='cartpole')
    sizes = []
    real = F.value_loss
    monkeypatch.setattr(F, 'value_loss', lambda value, *a: sizes.append(value.shape[0]) or real(value, *a))
    policy.learn(collector.collect().data)
    assert sizes == [64] * 8  # 128 steps in 2 minibatches, 4 epochs; nothing to replay yet
    assert policy.value_replay_batch.num_steps == 128
    sizes.clear()
    policy.learn(collector.collect().data)
    assert sizes == [128] * 8  # each minibatch's 64 steps plus 64 of the previous chunk's
    # the clip objective does not replay unless asked to
    clip_policy, clip_collector = _policy_and_chunk(env_type='cartpole', objective='clip')
    clip_policy.learn(clip_collector.collect().data)
    assert clip_policy.value_replay_batch is None


def test_kl_penalty_config_errors():
    with pytest.raises(ConfigError, match='target_kl'):
        compile_section('policy', dict(type='ppo', learn=dict(objective='kl_penalty', target_kl=0.02)))
    with pytest.raises(ConfigError, match="policy.learn.objective.*'clip', 'kl_penalty'"):
        compile_section('policy', dict(type='ppo', learn=dict(objective='kl')))
    with pytest.raises(ConfigError, match='policy.learn.kl_target'):
        compile_section('policy', dict(type='ppo', learn=dict(kl_target=0.0)))
    with pytest.raises(ConfigError, match='policy.learn.grad_clip'):
        compile_section('policy', dict(type='ppo', learn=dict(grad_clip='global')))
    with pytest.raises(ConfigError, match='policy.learn.value_replay'):
        compile_section('policy', dict(type='ppo', learn=dict(value_replay='yes')))


def test_five_clip_in_the_policy_clips_before_adam_and_is_checkpointed():
    policy, collector = _policy_and_chunk(objective='clip', grad_clip='five', grad_clip_sigmas=0.5,
                                          max_grad_norm=None)
    seen = []
    real_step = policy.optimizer.step

    def spy_step(*args, **kwargs):
        # Adam receives gradients within the bound of the clipper's (unclipped) moments.
        for param, moment in zip(policy.grad_clipper.params, policy.grad_clipper.second_moments):
            bound = 0.5 * (moment / (1 - 0.999 ** policy.grad_clipper.steps)).sqrt()
            seen.append(bool((param.grad.abs() <= bound * (1 + 1e-5) + 1e-12).all()))
        return real_step(*args, **kwargs)

    policy.optimizer.step = spy_step
    stats = policy.learn(collector.collect().data)
    assert seen and all(seen)
    assert 0.0 < stats['grad_clip_fraction'] < 1.0  # a bound of half an RMS clips some elements, not all
    assert policy.state_dict()['grad_clipper']['steps'] == 8
