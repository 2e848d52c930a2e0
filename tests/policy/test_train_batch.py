"""PPO's batch is read by attribute: each field in the batch's layout, or over its kept steps; a field the batch
does not hold is None, and one an objective needs but lacks is named."""
import numpy as np
import pytest
import torch

from sparring.policy.train_batch import present, step_batch, window_batch

T, B = 4, 2


def _chunk(masks: bool):
    rng = np.random.default_rng(0)
    chunk = dict(obs=rng.normal(size=(T, B, 3)).astype(np.float32), action=rng.integers(0, 2, (T, B)),
                 log_prob=np.full((T, B), -0.7, np.float32), value=np.zeros((T, B), np.float32),
                 reward=np.ones((T, B), np.float32), terminated=np.zeros((T, B), bool),
                 truncated=np.zeros((T, B), bool), window_state_0=np.zeros((2, B, 5), np.float32))
    if masks:
        chunk.update(action_mask=np.ones((T, B, 2), bool), train_mask=np.arange(T * B).reshape(T, B) % 2 == 0,
                     value_mask=np.ones((T, B), bool))
    return chunk


@pytest.mark.parametrize('masks', [False, True])
def test_a_step_batch_is_read_by_attribute_and_a_field_it_lacks_is_none(masks):
    chunk = _chunk(masks)
    adv, ret = np.arange(T * B, dtype=np.float32).reshape(T, B), np.ones((T, B), np.float32)
    batch = step_batch(chunk, adv, ret)
    np.testing.assert_array_equal(batch.adv.numpy(), adv.reshape(-1))
    assert batch.obs.shape == (T * B, 3) and batch.search_policy is None and batch.old_head is None
    assert (batch.mask is not None) == masks and (batch.acts is not None) == masks
    assert torch.equal(batch.kept.ret, batch.ret)  # steps: every unit is a kept step


def test_a_window_batchs_kept_steps_are_the_steps_that_count():
    chunk = _chunk(masks=True)
    chunk['value_mask'][0, 0] = False  # a step that does not count in the losses
    batch = window_batch(chunk, np.zeros((T, B), np.float32), np.ones((T, B), np.float32), bptt_len=2)
    assert batch.adv.shape == (2, 2 * B) and batch.kept.adv.shape == (T * B - 1,)
    assert batch.kept.mask is not None and batch.kept.mask.shape == (T * B - 1, 2)


def test_an_objectives_field_is_set_and_dropped_by_attribute_and_named_when_missing():
    batch = step_batch(_chunk(masks=False), np.zeros((T, B), np.float32), np.zeros((T, B), np.float32))
    with pytest.raises(ValueError, match="the batch holds no 'old_head'"):
        present(batch.kept.old_head, 'old_head')
    batch.old_head = torch.zeros(T * B, 2)
    assert present(batch.kept.old_head, 'old_head').shape == (T * B, 2) and 'old_head' in batch.fields
    batch.old_head = None
    assert batch.old_head is None and 'old_head' not in batch.fields  # not kept with a replayed batch
