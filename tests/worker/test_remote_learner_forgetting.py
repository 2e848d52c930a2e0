"""A parallel learner forgets stale opponents' transitions by the league's opponent ages in the commander's
reply to its ``publish``, as the serial run does after a snapshot (``replay.max_opponent_age``)."""
import time
from collections import deque

import gymnasium as gym
import numpy as np

from sparring.config.compile import compile_section
from sparring.policy.sac import SACPolicy
from sparring.worker.learner import Learner
from sparring.worker.remote.learner import LearnerWorker
from sparring.worker.remote.wire import Message
from tests.chunks import battle_chunk


class FakeCommander:
    """Answers each publish with the next reply body, and keeps what was asked."""

    def __init__(self, replies):
        self.replies, self.published = deque(replies), []

    def __call__(self, kind, body, arrays=None):
        self.published.append((kind, body))
        return Message('ack', dict(state='run', **self.replies.popleft()), {}, 'id', 'commander', time.time())


def _learner_worker(replies, max_age=1):
    cfg = compile_section('policy', dict(type='sac', model=dict(hidden_sizes=[8]), learn=dict(learning_starts=10_000),
                                         replay=dict(max_opponent_age=max_age)))
    policy = SACPolicy(cfg, gym.spaces.Box(-1.0, 1.0, (3,), np.float32), gym.spaces.Discrete(3))
    policy.learn(battle_chunk(['main_h1', 'main_h2']))  # two transitions against each
    worker = LearnerWorker.__new__(LearnerWorker)
    worker.player_id, worker.endpoint, worker.policy = 'main', 'tcp://127.0.0.1:1', policy
    worker.learner = Learner(policy, 1000)
    worker.group, worker.arrived, worker.queue, worker.wait_seconds = None, 0, deque(), 0.0
    worker.counts = dict(chunks_received=0, replay_transitions_forgotten=0)
    worker.roster = None
    worker.request = FakeCommander(replies)
    return worker


def test_the_publish_reply_s_opponent_ages_make_the_replay_forget_once_per_change():
    worker = _learner_worker([dict(reset_param_ref=None, opponent_ages={'main': 0, 'main_h2': 1}),
                              dict(reset_param_ref=None, opponent_ages={'main': 0, 'main_h2': 1}),
                              dict(reset_param_ref=None, opponent_ages={'main': 0, 'main_h3': 1})])
    worker.publish(final=False)  # main_h1 aged out (absent from the trimmed roster): its two transitions go
    assert len(worker.policy.replay) == 2 and worker.counts['replay_transitions_forgotten'] == 2
    assert worker.policy.opponent_mix() == {'main_h2': 1.0}  # named by the roster
    worker.policy.learn(battle_chunk(['main_h1', 'main_h2']))  # a chunk in flight, played before the snapshot
    worker.publish(final=False)  # the same roster: no new pass over the buffer
    assert len(worker.policy.replay) == 6 and worker.counts['replay_transitions_forgotten'] == 2
    worker.publish(final=False)  # a new snapshot: main_h2 aged out too, and the late main_h1 transitions go
    assert len(worker.policy.replay) == 0 and worker.counts['replay_transitions_forgotten'] == 8
    assert len(worker.request.published) == 3
    assert worker.request.published[0][1]['stats']['replay_transitions_forgotten'] == 0.0  # reported as counted


def test_a_reply_without_opponent_ages_forgets_nothing():
    worker = _learner_worker([dict(reset_param_ref=None)], max_age=None)
    worker.publish(final=False)
    assert len(worker.policy.replay) == 4 and worker.counts['replay_transitions_forgotten'] == 0
