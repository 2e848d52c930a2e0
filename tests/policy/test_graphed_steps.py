"""PPO's minibatch steps replayed as a captured graph (policy/graphed_steps.py), walked on the CPU.

The CPU has no CUDA graphs: the tests let the policy take the graph path on the CPU with the stand-in backend,
which "replays" by taking the captured step again. What they check is everything around the capture: the
static batch and index, the learning rate and clip range as device tensors, the deferred finite guard, the
refusals counted once per update, the new captures a new layout or a reset optimiser needs, and the steps a
graph cannot hold going one by one as before.
"""
import gymnasium as gym
import numpy as np
import pytest
import torch

from sparring.config.compile import compile_section
from sparring.policy import graphed_steps
from sparring.policy.graphed_steps import EagerBackend
from sparring.policy.ppo import PPOPolicy

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACTIONS = gym.spaces.Discrete(3)


@pytest.fixture(autouse=True)
def one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def backend(monkeypatch):
    """The graph path on the CPU, through the stand-in backend (one per test, counting its captures)."""
    made = EagerBackend()
    monkeypatch.setattr(graphed_steps, 'capturable', lambda device: True)
    monkeypatch.setattr(graphed_steps, 'default_backend', lambda device: made)
    return made


def _policy(seed=0, **learn):
    learn = dict(dict(epochs=2, num_minibatches=4, lr=1e-2, anneal_lr=True), **learn)
    cfg = compile_section('policy', dict(type='ppo', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8),
                                         learn=learn))
    return PPOPolicy(cfg, OBS, ACTIONS, seed=seed)


def _chunk(policy, T=8, B=4, seed=0, reward_nan=False, train_mask=None):
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-1, 1, (T, B, 4)).astype(np.float32)
    mask = rng.random((T, B, 3)) < 0.7
    mask[..., 0] = True
    out = policy.act(obs.reshape(T * B, 4), action_mask=mask.reshape(T * B, 3))
    value = out.value.reshape(T, B)
    reward = rng.standard_normal((T, B)).astype(np.float32)
    if reward_nan:
        reward[:] = np.nan
    chunk = dict(obs=obs, action=out.action.reshape(T, B), log_prob=out.log_prob.reshape(T, B), value=value,
                 next_value=np.concatenate([value[1:], value[-1:]]), reward=reward,
                 terminated=rng.random((T, B)) < 0.1, truncated=np.zeros((T, B), bool), action_mask=mask)
    if train_mask is not None:
        chunk.update(train_mask)
    return chunk


def _learn_twice(policy, chunks):
    return [policy.learn(chunk, progress=i / 4) for i, chunk in enumerate(chunks)]


def test_graphed_updates_learn_what_steps_taken_one_by_one_learn(backend):
    eager, graphed = _policy(cuda_graph=False), _policy()
    chunks = [_chunk(eager, seed=s) for s in (0, 1, 2)]
    _chunk(graphed, seed=0), _chunk(graphed, seed=1), _chunk(graphed, seed=2)  # the same generator draws
    eager_stats, graphed_stats = _learn_twice(eager, chunks), _learn_twice(graphed, chunks)
    assert backend.captures == 1  # one layout: captured once, replayed for every later step
    for name, value in eager.get_params().items():
        torch.testing.assert_close(graphed.get_params()[name], value, rtol=1e-4, atol=1e-5)
    for ours, theirs in zip(graphed_stats, eager_stats):
        for key in ('policy_loss', 'value_loss', 'entropy', 'approx_kl', 'lr', 'gradient_steps', 'samples_consumed'):
            assert ours[key] == pytest.approx(theirs[key], rel=1e-3, abs=1e-5), key
    # The fused Adam's state is torch's Adam state: a checkpoint loads into a policy that steps one by one.
    fresh = _policy(cuda_graph=False)
    fresh.load_state_dict(graphed.state_dict())
    fresh.learn(chunks[0], progress=0.5)


def test_a_step_whose_loss_is_not_finite_is_refused_and_counted_once_per_update(backend):
    policy = _policy()
    policy.learn(_chunk(policy, seed=0), progress=0.0)  # captured on good data
    before = {k: v.clone() for k, v in policy.get_params().items()}
    stats = policy.learn(_chunk(policy, seed=1, reward_nan=True), progress=0.0)
    assert stats['skipped_updates'] == 8 and policy.skipped_updates == 8  # 2 epochs x 4 minibatches
    for name, value in policy.get_params().items():
        assert torch.equal(value, before[name]), name
    assert stats['policy_loss'] == 0.0  # a refused step's figures are zeros, as one by one
    policy.learn(_chunk(policy, seed=2), progress=0.0)
    assert policy.skipped_updates == 8 and all(torch.isfinite(v).all() for v in policy.get_params().values())


def test_a_new_layout_or_a_reset_optimiser_is_captured_anew(backend):
    policy = _policy()
    policy.learn(_chunk(policy, B=4), progress=0.0)
    policy.learn(_chunk(policy, B=4, seed=1), progress=0.0)
    assert backend.captures == 1
    policy.learn(_chunk(policy, B=6, seed=2), progress=0.0)  # a larger batch: other minibatch shapes
    assert backend.captures == 2
    policy.reset_optimizer()  # the graph held the old moments' storage
    policy.learn(_chunk(policy, B=6, seed=3), progress=0.0)
    assert backend.captures == 3


def _turns(T=8, B=4):
    """A turn-based chunk's masks: the seat moves at every other row, and fits its value at every row."""
    acts = np.zeros((T, B), bool)
    acts[::2] = True
    return dict(train_mask=acts, value_mask=np.ones((T, B), bool))


def test_steps_that_only_fit_the_value_stay_in_the_graph_and_learn_as_one_by_one(backend):
    eager, graphed = _policy(cuda_graph=False), _policy()
    chunks = [_chunk(eager, seed=s, train_mask=_turns()) for s in (0, 1, 2)]
    _chunk(graphed, seed=0), _chunk(graphed, seed=1), _chunk(graphed, seed=2)
    eager_stats, graphed_stats = _learn_twice(eager, chunks), _learn_twice(graphed, chunks)
    assert backend.captures == 1
    for name, value in eager.get_params().items():
        torch.testing.assert_close(graphed.get_params()[name], value, rtol=1e-4, atol=1e-5)
    for ours, theirs in zip(graphed_stats, eager_stats):
        for key in ('policy_loss', 'value_loss', 'entropy', 'approx_kl', 'clip_fraction'):
            assert ours[key] == pytest.approx(theirs[key], rel=1e-3, abs=1e-5), key


def test_a_minibatch_of_value_only_steps_has_no_policy_terms(backend):
    from sparring.policy.graphed_steps import acting_by_advantage
    none = torch.zeros(6, dtype=torch.bool)
    log_prob = torch.tensor([-float('inf')] * 6)  # an illegal dummy action where the seat did not move
    terms = acting_by_advantage(none, log_prob, torch.ones(6), torch.randn(6), torch.zeros(6), normalize=True)
    assert torch.equal(terms.adv, torch.zeros(6)) and terms.entropy_mean == 0.0
    assert torch.isfinite(terms.log_prob).all()
    one = torch.tensor([True, False, False, False, False, False])  # a single acting step is not normalised
    adv = torch.tensor([2.0, 5.0, 5.0, 5.0, 5.0, 5.0])
    terms = acting_by_advantage(one, torch.zeros(6), torch.ones(6), adv, torch.zeros(6), normalize=True)
    assert terms.adv.tolist() == [12.0, 0.0, 0.0, 0.0, 0.0, 0.0] and terms.scale == 6.0


def test_steps_a_graph_cannot_hold_go_one_by_one(backend):
    cases = dict(
        acting_steps_kl_penalty=(dict(objective='kl_penalty'), _turns()),  # an objective that needs the rows selected
        obs_norm=(dict(), None),
        five_clip=(dict(grad_clip='five'), None),
        kl_penalty=(dict(objective='kl_penalty'), None),
        switched_off=(dict(cuda_graph=False), None))
    for name, (learn, masks) in cases.items():
        policy = _policy(**learn) if name != 'obs_norm' else PPOPolicy(compile_section('policy', dict(
            type='ppo', model=dict(hidden_sizes=[16]), obs_norm=True, learn=dict(epochs=2, num_minibatches=4))),
            OBS, ACTIONS, seed=0)
        policy.learn(_chunk(policy, train_mask=masks), progress=0.0)
        assert backend.captures == 0, name
    hooked = _policy()
    for p in hooked.net.parameters():
        p.register_hook(lambda grad: grad)  # as learner replicas average gradients
    hooked.learn(_chunk(hooked), progress=0.0)
    assert backend.captures == 0


def test_a_capture_that_fails_leaves_the_policy_stepping_one_by_one(backend, monkeypatch):
    def fails(fn):
        raise RuntimeError('operation not permitted when stream is capturing')
    monkeypatch.setattr(backend, 'capture', fails)
    policy, eager = _policy(), _policy(cuda_graph=False)
    chunks = [_chunk(eager, seed=s) for s in (0, 1)]
    _chunk(policy, seed=0), _chunk(policy, seed=1)
    with pytest.warns(UserWarning, match='could not be captured as a CUDA graph'):
        _learn_twice(policy, chunks)
    _learn_twice(eager, chunks)
    assert policy._graph_runner.failed.startswith('RuntimeError: operation not permitted')
    for name, value in eager.get_params().items():
        torch.testing.assert_close(policy.get_params()[name], value, rtol=1e-4, atol=1e-5)
