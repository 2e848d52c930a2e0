"""Learner replicas: two gloo processes on halves of a batch take the same step as one learner on all of it."""
import os
import socket

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from sparring.config import compile_config, compile_section
from sparring.config.schema import ConfigError
from sparring.worker.remote.replicas import check_replica_config

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT = gym.spaces.Discrete(3)
POLICY = dict(type='ppo', model=dict(hidden_sizes=[16]),
              learn=dict(epochs=1, num_minibatches=1, normalize_advantage=False, anneal_lr=False))


def _chunk(seed, T=16, B=4):
    rng = np.random.default_rng(seed)
    return dict(obs=rng.uniform(-1, 1, (T, B, 4)).astype(np.float32), action=rng.integers(0, 3, (T, B)),
                log_prob=np.full((T, B), np.log(1 / 3), np.float32), value=rng.normal(size=(T, B)).astype(np.float32),
                reward=rng.normal(size=(T, B)).astype(np.float32), terminated=rng.random((T, B)) < 0.1,
                truncated=np.zeros((T, B), bool), next_value=rng.normal(size=(T, B)).astype(np.float32))


def _policy():
    from sparring.policy.ppo import PPOPolicy
    return PPOPolicy(compile_section('policy', POLICY), OBS, ACT, seed=0)


def _replica(rank, address, halves, out):
    from sparring.worker.remote.replicas import ReplicaGroup
    torch.set_num_threads(1)
    group = ReplicaGroup(address, rank, 2, timeout_seconds=60)
    policy = _policy()
    group.share_lead_state(policy.net)
    group.average_gradients(policy.net)
    policy.learn(halves[rank])
    torch.save(policy.get_params(), os.path.join(out, f'replica{rank}.pt'))
    group.close()


@pytest.mark.slow
def test_two_replicas_take_the_step_one_learner_takes_on_the_whole_batch(tmp_path):
    torch.set_num_threads(1)
    whole = _chunk(1)
    halves = [{k: v[:, :2] for k, v in whole.items()}, {k: v[:, 2:] for k, v in whole.items()}]
    single = _policy()
    single.learn(whole)
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        address = f'tcp://127.0.0.1:{probe.getsockname()[1]}'
    mp.start_processes(_replica, args=(address, halves, str(tmp_path)), nprocs=2, start_method='spawn')
    expected = single.get_params()
    for rank in range(2):
        got = torch.load(tmp_path / f'replica{rank}.pt', weights_only=True)
        for name, tensor in expected.items():
            torch.testing.assert_close(got[name], tensor, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize('policy, parallel, match', [
    (dict(learn=dict(objective='kl_penalty')), {}, 'objective'),
    (dict(learn=dict(target_kl=0.02)), {}, 'target_kl'),
    ({}, dict(target_sample_reuse=2.0), 'target_sample_reuse'),
])
def test_replicas_refuse_settings_that_would_split_their_steps(policy, parallel, match):
    cfg = compile_config(dict(env=dict(type='tictactoe'), policy=dict(type='ppo', **policy),
                              parallel=dict(learner_replicas=2, **parallel)), save=False)
    with pytest.raises(ConfigError, match=match):
        check_replica_config(cfg)
