"""SAC's and DQN's batch: n-step transitions as typed fields, stored and drawn back as a replay buffer's columns."""
import numpy as np
import pytest
import torch

from sparring.policy.replay_buffer import ReplayBuffer, chunk_transitions
from sparring.policy.transitions import Transitions


def _chunk(masks: bool):
    T, B = 3, 2
    chunk = dict(obs=np.arange(T * B * 2, dtype=np.float32).reshape(T, B, 2), action=np.ones((T, B), np.int64),
                 reward=np.ones((T, B), np.float32), terminated=np.zeros((T, B), bool),
                 truncated=np.zeros((T, B), bool), next_obs=np.zeros((T, B, 2), np.float32))
    if masks:
        chunk['action_mask'] = np.ones((T, B, 3), bool)
    return chunk


@pytest.mark.parametrize('masks', [False, True])
def test_a_chunks_transitions_read_by_field_and_a_field_the_chunk_lacks_is_none(masks):
    data = chunk_transitions(_chunk(masks), gamma=0.5, n_step=1, who='test')
    assert isinstance(data, Transitions) and data.obs.shape == (6, 2) and data.ret.shape == (6,)
    assert (data.mask is not None) == masks and (data.next_mask is not None) == masks and data.opponent is None
    names = ['obs', 'action', 'ret', 'discount', 'next_obs'] + (['mask', 'next_mask'] if masks else [])
    assert list(data.columns()) == names  # a replay buffer's columns, in the fields' order


def test_transitions_go_through_a_replay_buffer_and_to_tensors_unchanged():
    data = chunk_transitions(_chunk(masks=True), gamma=0.5, n_step=1, who='test')
    buffer = ReplayBuffer(capacity=16, seed=0)
    buffer.push(data.columns())
    drawn = Transitions.of(buffer.sample(4).data)
    batch = drawn.map(torch.as_tensor)
    assert isinstance(batch.next_mask, torch.Tensor) and batch.obs.shape == (4, 2)
    assert all(np.array_equal(getattr(batch, k).numpy(), v)
               for k, v in drawn.columns().items())
    rows = batch.map(lambda t: t[1:3])
    assert rows.ret.shape == (2,) and rows.mask is not None and rows.mask.shape == (2, 3)


def test_a_column_of_no_field_is_refused_by_name():
    with pytest.raises(ValueError, match=r"unknown column\(s\) \['value'\]"):
        Transitions.of(dict(obs=np.zeros(1), action=np.zeros(1), ret=np.zeros(1), discount=np.zeros(1),
                            next_obs=np.zeros(1), value=np.zeros(1)))
