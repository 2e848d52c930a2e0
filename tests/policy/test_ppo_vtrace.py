"""PPO with ``learn.off_policy='vtrace'``: on its own fresh chunk it is GAE with lambda 1; on a stale chunk the
current network's values and importance weights change the targets; turn-based masks and config refusals."""
import numpy as np
import pytest

import sparring.dizoo  # noqa: F401  (registers the envs)
from sparring.config import compile_section
from sparring.config.registry import BOT_REGISTRY, POLICY_REGISTRY
from sparring.config.schema import ConfigError
from sparring.policy import functional as F
from sparring.worker.battle_collector import BattleCollector
from sparring.worker.collector import SampleCollector
from sparring.worker.env.battle import make_battle_env
from sparring.worker.env.manager import make_env_manager

pytestmark = pytest.mark.usefixtures('one_torch_thread')


def _ppo(env, **learn):
    cfg = compile_section('policy', dict(type='ppo', collect=dict(n_steps=32),
                                         learn=dict(dict(epochs=2, num_minibatches=2, gae_lambda=1.0,
                                                         off_policy='vtrace'), **learn)))
    return POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=0)


@pytest.mark.parametrize('env_type', ['cartpole', 'pendulum'])
def test_on_its_own_fresh_chunk_vtrace_is_gae_with_lambda_one(env_type):
    env = make_env_manager(dict(type=env_type), 4, 0)
    policy = _ppo(env)
    chunk = SampleCollector(env, policy, 32).collect().data
    log_ratio, value, next_value = policy._current_view(chunk)
    np.testing.assert_allclose(log_ratio, 0.0, atol=1e-5)
    np.testing.assert_allclose(value, chunk['value'], atol=1e-5)
    np.testing.assert_allclose(next_value, chunk['next_value'], atol=1e-5)
    vtrace_batch = policy._train_batch(chunk)
    adv, ret = F.gae(chunk['reward'], chunk['value'], chunk['next_value'], chunk['terminated'], chunk['truncated'],
                     gamma=0.99, lam=1.0)
    np.testing.assert_allclose(vtrace_batch.kept.adv.numpy(), adv.reshape(-1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(vtrace_batch.kept.ret.numpy(), ret.reshape(-1), rtol=1e-4, atol=1e-4)


def test_a_stale_chunk_is_reweighted_by_the_current_policy():
    env = make_env_manager(dict(type='cartpole'), 4, 0)
    policy = _ppo(env, lr=0.05, anneal_lr=False)
    collector = SampleCollector(env, policy, 32)
    stale = collector.collect().data
    for _ in range(3):  # the policy moves on: the stale chunk is three versions old
        policy.learn(collector.collect().data)
    log_ratio, value, next_value = policy._current_view(stale)
    assert np.abs(log_ratio).max() > 1e-3 and np.abs(value - stale['value']).max() > 1e-3
    batch = policy._train_batch(stale)
    _, gae_returns = F.gae(stale['reward'], stale['value'], stale['next_value'], stale['terminated'],
                           stale['truncated'], gamma=0.99, lam=1.0)
    assert np.abs(batch.kept.ret.numpy() - gae_returns.reshape(-1)).max() > 1e-3
    # The clipped surrogate's ratio against the recorded log-probabilities is the importance weight, so the
    # advantages are V-trace's without rho (weighted, the correction would count twice).
    learn = policy.cfg['learn']
    kwargs = dict(gamma=learn['gamma'], rho_bar=learn['vtrace_rho_bar'], c_bar=learn['vtrace_c_bar'],
                  lam=learn['gae_lambda'])
    args = (stale['reward'], value, next_value, stale['terminated'], stale['truncated'], log_ratio)
    unweighted, _ = F.vtrace(*args, weight_advantages=False, **kwargs)
    weighted, _ = F.vtrace(*args, **kwargs)
    np.testing.assert_allclose(batch.kept.adv.numpy(), unweighted.reshape(-1), rtol=1e-5, atol=1e-5)
    assert np.abs(batch.kept.adv.numpy() - weighted.reshape(-1)).max() > 1e-3
    assert np.isfinite(policy.learn(stale)['policy_loss'])


def test_turn_based_chunks_take_no_ratio_where_the_seat_could_not_move():
    env = make_battle_env(dict(type='tictactoe'), 4, 0)
    policy = _ppo(env)
    bot = BOT_REGISTRY.get('random')({}, env.observation_space, env.action_space, seed=1)
    chunk = BattleCollector(env, policy, 16, lambda slot: ('random', bot), player_id='me').collect().data
    assert not chunk['train_mask'].all()  # the waiting seat's steps are in the chunk
    log_ratio, _, _ = policy._current_view(chunk)
    assert np.isfinite(log_ratio).all()
    assert (log_ratio[~chunk['train_mask']] == 0).all()
    np.testing.assert_allclose(log_ratio, 0.0, atol=1e-5)  # its own fresh chunk
    assert np.isfinite(policy.learn(chunk)['policy_loss'])


@pytest.mark.parametrize('policy_cfg, message', [
    (dict(learn=dict(off_policy='retrace')), "expected one of None, 'vtrace'"),
    (dict(learn=dict(off_policy='vtrace', vtrace_rho_bar=0.0)), 'vtrace_rho_bar'),
    (dict(model=dict(type='lstm'), learn=dict(off_policy='vtrace')), 'needs a feed-forward model'),
    (dict(learn=dict(off_policy='vtrace', objective='search')), "the 'search' objective learns from visit counts"),
])
def test_vtrace_config_refusals(policy_cfg, message):
    with pytest.raises(ConfigError, match=message):
        compile_section('policy', dict(type='ppo', **policy_cfg))
