"""Replay buffers: the ring, the sum-tree, prioritised sampling proportions and importance weights, persistence."""
import numpy as np
import pytest

from sparring.policy.replay_buffer import PrioritizedReplayBuffer, ReplayBuffer, SumTree, make_replay_buffer


def _batch(values, width=2):
    values = np.asarray(values, dtype=np.float32)
    return dict(obs=np.repeat(values[:, None], width, axis=1), ret=values)


def test_ring_overwrites_the_oldest_transitions():
    buf = ReplayBuffer(capacity=4, seed=0)
    assert buf.storage is None  # nothing allocated before the first push
    buf.push(_batch([0, 1, 2]))
    slots = buf.push(_batch([3, 4]))
    np.testing.assert_array_equal(slots, [3, 0])
    assert len(buf) == 4 and buf.pushed == 5
    np.testing.assert_array_equal(buf.storage['ret'], [4, 1, 2, 3])
    assert buf.storage['obs'].shape == (4, 2)


def test_a_batch_longer_than_the_capacity_keeps_its_newest_part():
    buf = ReplayBuffer(capacity=3)
    buf.push(_batch(range(7)))
    assert sorted(buf.storage['ret'].tolist()) == [4, 5, 6] and buf.pushed == 7


def test_uniform_sampling_covers_the_filled_slots_only_with_unit_weights():
    buf = ReplayBuffer(capacity=100, seed=1)
    buf.push(_batch([10, 11, 12]))
    sample = buf.sample(3000)
    assert set(sample.data['ret'].tolist()) == {10, 11, 12}
    counts = np.bincount(sample.indices, minlength=3)
    assert counts.min() > 900  # about 1000 each
    assert np.all(sample.weights == 1.0)
    np.testing.assert_array_equal(sample.data['obs'][:, 0], sample.data['ret'])


def test_push_rejects_mismatched_batches_with_a_clear_message():
    buf = ReplayBuffer(capacity=8)
    with pytest.raises(ValueError, match='different lengths'):
        buf.push(dict(obs=np.zeros((3, 2)), ret=np.zeros(2)))
    buf.push(_batch([1, 2]))
    with pytest.raises(ValueError, match="'obs' has item shape"):
        buf.push(_batch([1, 2], width=3))
    with pytest.raises(ValueError, match='differ from the stored keys'):
        buf.push(dict(obs=np.zeros((2, 2), np.float32)))
    with pytest.raises(ValueError, match='capacity'):
        ReplayBuffer(capacity=0)
    with pytest.raises(ValueError, match='empty'):
        ReplayBuffer(capacity=2).sample(1)


def test_sum_tree_total_search_and_repeated_updates():
    tree = SumTree(5)
    tree.update(np.array([0, 1, 2, 3, 4]), np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    assert tree.total == 15.0
    # prefix sums 1, 3, 6, 10, 15: a mass falls in the leaf whose interval holds it
    np.testing.assert_array_equal(tree.find(np.array([0.0, 0.99, 1.0, 2.5, 3.0, 9.99, 10.0, 14.9])),
                                  [0, 0, 1, 1, 2, 3, 4, 4])
    tree.update(np.array([2, 2]), np.array([7.0, 0.5]))  # a leaf named twice: one value wins, sums stay exact
    assert tree.total == pytest.approx(12.0 + tree.values(np.array([2]))[0])
    assert SumTree(1).leaves == 2  # the root is never a leaf


def test_prioritised_sampling_follows_the_priorities():
    buf = PrioritizedReplayBuffer(capacity=8, alpha=1.0, priority_eps=1e-9, seed=2)
    slots = buf.push(_batch([0, 1, 2, 3]))
    buf.update_priorities(slots, np.array([1.0, -2.0, 3.0, 4.0]))  # |td error|
    np.testing.assert_allclose(buf.probabilities(), [0.1, 0.2, 0.3, 0.4], rtol=1e-6)
    counts = np.zeros(4)
    for _ in range(200):
        counts += np.bincount(buf.sample(100).indices, minlength=4)
    np.testing.assert_allclose(counts / counts.sum(), [0.1, 0.2, 0.3, 0.4], atol=0.01)


def test_alpha_flattens_the_priorities():
    buf = PrioritizedReplayBuffer(capacity=4, alpha=0.5, priority_eps=1e-9)
    slots = buf.push(_batch([0, 1]))
    buf.update_priorities(slots, np.array([1.0, 4.0]))
    np.testing.assert_allclose(buf.probabilities(), [1 / 3, 2 / 3], rtol=1e-6)  # sqrt: 1 and 2


def test_importance_weights_are_normalised_by_the_rarest_transition():
    buf = PrioritizedReplayBuffer(capacity=4, alpha=1.0, priority_eps=1e-9, seed=3)
    slots = buf.push(_batch([0, 1, 2, 3]))
    buf.update_priorities(slots, np.array([1.0, 2.0, 3.0, 4.0]))
    sample = buf.sample(64, beta=0.5)
    # w_i = (N P_i)^-beta / max_j (N P_j)^-beta = (p_i / p_min)^-beta
    expected = (np.array([1.0, 2.0, 3.0, 4.0]) / 1.0) ** -0.5
    np.testing.assert_allclose(sample.weights, expected[sample.indices], rtol=1e-5)
    assert np.all(buf.sample(16, beta=0.0).weights == 1.0)


def test_new_transitions_get_the_largest_priority_seen():
    buf = PrioritizedReplayBuffer(capacity=8, alpha=1.0, priority_eps=1e-9)
    slots = buf.push(_batch([0, 1]))
    buf.update_priorities(slots, np.array([0.5, 6.0]))
    buf.push(_batch([2]))
    np.testing.assert_allclose(buf.probabilities(), np.array([0.5, 6.0, 6.0]) / 12.5, rtol=1e-6)
    with pytest.raises(ValueError, match='non-finite'):
        buf.update_priorities(slots, np.array([np.nan, 1.0]))


@pytest.mark.parametrize('prioritized', [False, True])
def test_state_dict_round_trip_reproduces_the_samples(prioritized):
    cfg = dict(capacity=16, prioritized=prioritized, alpha=0.7, priority_eps=1e-6)
    a = make_replay_buffer(cfg, seed=5)
    assert isinstance(a, PrioritizedReplayBuffer) == prioritized
    slots = a.push(_batch(range(10)))
    a.update_priorities(slots, np.linspace(0.1, 2.0, 10))
    b = make_replay_buffer(cfg, seed=99)
    b.load_state_dict(a.state_dict())
    sa, sb = a.sample(32, beta=0.4), b.sample(32, beta=0.4)
    np.testing.assert_array_equal(sa.indices, sb.indices)
    np.testing.assert_array_equal(sa.weights, sb.weights)
    np.testing.assert_array_equal(sa.data['obs'], sb.data['obs'])
    a.push(_batch([42]))
    b.push(_batch([42]))
    assert a.position == b.position and len(a) == len(b) == 11
    with pytest.raises(ValueError, match='capacity'):
        make_replay_buffer(dict(cfg, capacity=8)).load_state_dict(a.state_dict())
