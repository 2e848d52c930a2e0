"""What reaches a learner is checked against the player's chunk spec, and a non-finite update is never applied."""
import time
import uuid
from collections import deque

import gymnasium as gym
import numpy as np
import torch

from sparring.config import compile_section
from sparring.policy.ppo import PPOPolicy
from sparring.worker.learner import Learner
from sparring.worker.remote.learner import LearnerWorker
from sparring.worker.remote.wire import Message

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT = gym.spaces.Discrete(2)


def _data(T=8, B=2, obs_shape=(4,), obs_dtype=np.float32, reward=0.0):
    rng = np.random.default_rng(0)
    return dict(obs=rng.uniform(-1, 1, (T, B, *obs_shape)).astype(obs_dtype),
                action=rng.integers(0, 2, (T, B)), log_prob=np.full((T, B), -0.69, np.float32),
                value=np.zeros((T, B), np.float32), reward=np.full((T, B), reward, np.float32),
                terminated=np.zeros((T, B), bool), truncated=np.zeros((T, B), bool),
                next_value=np.zeros((T, B), np.float32))


class FakePuller:
    def __init__(self, messages):
        self.messages = deque(messages)

    def recv(self, timeout):
        return self.messages.popleft() if self.messages else None


def _learner_receiving(messages):
    worker = LearnerWorker.__new__(LearnerWorker)
    worker.par = type('P', (), dict(learner_queue=16))()
    worker.worker_id, worker.player_id = 'learner-test', 'p0'
    cfg = compile_section('policy', dict(type='ppo', model=dict(hidden_sizes=[8])))
    worker.policy = PPOPolicy(cfg, OBS, ACT, seed=0)
    worker.policy.set_params(worker.policy.get_params(), 3)
    worker.learner = Learner(worker.policy, 1000)
    worker.puller = FakePuller(messages)
    worker.queue, worker.seen, worker.seen_set, worker.receipts = deque(), deque(maxlen=100), set(), deque()
    worker.counts = dict(chunks_received=0, dropped_invalid=0, dropped_duplicate=0)
    worker.arrived = 0
    return worker


def _message(data, chunk_id=None):
    body = dict(chunk_id=chunk_id or uuid.uuid4().hex, player_id='p0', version=1, env_steps=16)
    return Message('chunk', body, data, uuid.uuid4().hex, 'collector-0', time.time())


def test_chunks_that_do_not_fit_the_players_spec_are_dropped_and_counted():
    good = _message(_data(), 'good')
    bad = [_message(_data(obs_shape=(5,))), _message(_data(obs_dtype=np.float64)), _message(_data(reward=1e30)),
           _message(dict(_data(), action=np.full((8, 2), 7))), _message(dict(_data(), value=np.zeros((8, 2, 2))))]
    worker = _learner_receiving(bad + [good])
    assert worker._receive(timeout=0.0)
    assert [c.chunk_id for c in worker.queue] == ['good'] and worker.counts['dropped_invalid'] == 5
    assert len(worker.receipts) == 6  # every arrival is acknowledged: none of them is lost in flight


def test_an_update_whose_loss_is_not_finite_is_skipped_and_counted():
    cfg = compile_section('policy', dict(type='ppo', model=dict(hidden_sizes=[8]),
                                         learn=dict(epochs=1, num_minibatches=1)))
    policy = PPOPolicy(cfg, OBS, ACT, seed=0)
    before = policy.get_params()
    stats = policy.learn(_data(reward=3e38) | dict(value=np.full((8, 2), 3e38, np.float32)))
    assert stats['skipped_updates'] >= 1
    after = policy.get_params()
    assert all(torch.isfinite(v).all() and torch.equal(v, before[k]) for k, v in after.items())


def test_a_restarted_learner_never_reuses_a_published_version_number():
    from sparring.worker.remote.learner import restarted_version
    assert restarted_version(own=0, published=0) == 0  # a new run
    assert restarted_version(own=5, published=9) == 10  # an older checkpoint: collectors hold version 9's params
    assert restarted_version(own=9, published=9) == 10
    assert restarted_version(own=0, published=4) == 5  # no checkpoint at all


def test_the_chunk_socket_s_bound_is_a_few_chunks_of_the_policy_s_spec():
    from easydict import EasyDict

    from sparring.worker.remote.learner import chunk_bytes_limit
    from tests.chunk_cases import spec_of
    cfg = EasyDict(parallel=dict(chunk_len=None), policy=dict(collect=dict(n_steps=16)), env=dict(collector_env_num=8))
    ppo, dqn = spec_of('ppo_clip'), spec_of('dqn')
    columns = 8 * 2  # a battle env's two seats per env
    assert chunk_bytes_limit(cfg, ppo) == 4 * 16 * columns * ppo.column_step_bytes() + (1 << 20)
    # DQN's chunks add next_obs (4 float32 per column step): the bound follows the spec, not a guess
    assert chunk_bytes_limit(cfg, dqn) - chunk_bytes_limit(cfg, ppo) == 4 * 16 * columns * 16
