"""policy.learn.threads: the update runs with that many torch threads, and the process's setting comes back."""
import pytest
import torch

from sparring.config import compile_section
from sparring.config.registry import POLICY_REGISTRY
from sparring.policy.threads import torch_threads
from sparring.worker.collector import SampleCollector
from sparring.worker.env.manager import make_env_manager


def test_torch_threads_sets_and_restores():
    before = torch.get_num_threads()
    with torch_threads(before + 1):
        assert torch.get_num_threads() == before + 1
    assert torch.get_num_threads() == before
    with torch_threads(None):
        assert torch.get_num_threads() == before


def test_torch_threads_sets_the_count_even_when_torch_reports_it_already(monkeypatch):
    """In a fresh thread torch reports the main thread's count while OpenMP's team is its default: always set."""
    calls = []
    monkeypatch.setattr(torch, 'set_num_threads', calls.append)
    now = torch.get_num_threads()
    with torch_threads(now):
        assert calls == [now]
    assert calls == [now, now]


@pytest.mark.slow
def test_ppo_learns_with_its_own_thread_count(monkeypatch):
    cfg = compile_section('policy', dict(type='ppo', collect=dict(n_steps=16), learn=dict(threads=2)))
    env = make_env_manager(dict(type='cartpole'), 2, 0)
    policy = POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=0)
    chunk = SampleCollector(env, policy, 16).collect().data
    seen = []
    real = policy._learn
    monkeypatch.setattr(policy, '_learn', lambda *a: seen.append(torch.get_num_threads()) or real(*a))
    before = torch.get_num_threads()
    policy.learn(chunk)
    assert seen == [2] and torch.get_num_threads() == before
