"""What the recurrent-collection tests share: the learner's replay of a chunk's windows, and a spy on the states a
policy is given."""
import numpy as np
import torch

from sparring.policy import functional as F
from sparring.policy.train_batch import window_batch


def recomputed(policy, data):
    """Log-probs and values [T, B] recomputed from the chunk's window states, as the learner does."""
    adv, ret = F.gae(data['reward'], data['value'], data['next_value'], data['terminated'], data['truncated'],
                     0.99, 0.95)
    batch = window_batch({k: v for k, v in data.items() if k not in ('train_mask', 'value_mask')}, adv, ret,
                         policy.bptt_len)
    with torch.no_grad():
        head, value = policy._forward(batch)
        mask = batch.kept.mask
        log_prob, _ = policy._policy_terms(batch.flatten_kept(head), batch.kept.action, mask)
    T, B = data['reward'].shape
    L = policy.bptt_len

    def back(x):  # [L, W * B] -> [T, B]
        return x.reshape(L, T // L, B).transpose(0, 1).reshape(T, B).numpy()

    return back(log_prob), back(value.reshape(-1))


class StateSpy:
    """Wraps a policy's act to record the states it is given."""

    def __init__(self, policy):
        self.states, self.returned = [], []
        self._act = policy.act
        policy.act = self

    def __call__(self, obs, state=None, *args, **kwargs):
        self.states.append(None if state is None else tuple(np.array(s, copy=True) for s in state))
        out = self._act(obs, state, *args, **kwargs)
        self.returned.append(tuple(np.array(s, copy=True) for s in out.state))
        return out
