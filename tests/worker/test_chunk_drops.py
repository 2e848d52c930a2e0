"""No chunk ends a learner: one that does not fit the policy's spec, or whose update raises, is dropped and counted,
and the learner goes on learning from honest chunks (serial and parallel alike), for every policy and objective."""
import time
import uuid
from collections import deque

import numpy as np
import pytest

from sparring.worker.chunk import Chunk
from sparring.worker.learner import Learner
from sparring.worker.remote.learner import LearnerWorker
from sparring.worker.remote.wire import Message
from tests.chunk_cases import (CASES, B, T, every_spoilt_field, honest_chunk, learn_fails_once, make_policy,
                               spoilt_chunk)


def _learner(case: str) -> Learner:
    return Learner(make_policy(case), 100_000, battle=CASES[case][2])


def _keeps_learning(learner: Learner, honest_trained: int = 0) -> None:
    """Two honest chunks after the dropped ones: both trained."""
    for seed in (1, 2):
        stats = learner.train(Chunk(honest_chunk(learner.spec, seed), version=learner.policy.version))
        assert stats is not None
    assert learner.train_iter == honest_trained + 2


@pytest.mark.parametrize('case,name,how', every_spoilt_field())
def test_a_spoilt_field_is_dropped_and_counted_and_the_learner_keeps_learning(case, name, how):
    learner = _learner(case)
    version = learner.policy.version
    assert learner.train(Chunk(spoilt_chunk(case, name, how, learner.spec), version=version)) is None
    assert learner.dropped == dict(invalid=1, failed=0) and learner.train_iter == 0
    assert learner.policy.version == version  # nothing of it was learnt
    _keeps_learning(learner)


@pytest.mark.parametrize('case', CASES)
def test_an_update_that_raises_drops_its_chunk_not_the_learner(case, monkeypatch):
    learner = _learner(case)
    learn_fails_once(monkeypatch, learner.policy, RuntimeError('a broadcast error deep in the update'))
    assert learner.train(Chunk(honest_chunk(learner.spec), version=0)) is None
    assert learner.dropped == dict(invalid=0, failed=1)
    _keeps_learning(learner)


@pytest.mark.parametrize('case', CASES)
def test_a_chunk_with_a_field_the_spec_does_not_name_or_without_a_required_one_is_dropped(case):
    learner = _learner(case)
    honest = honest_chunk(learner.spec)
    assert learner.train(Chunk(dict(honest, smuggled=honest['reward']), version=0)) is None
    assert learner.train(Chunk({k: v for k, v in honest.items() if k != 'value'}, version=0)) is None
    assert learner.dropped['invalid'] == 2
    _keeps_learning(learner)


def test_a_chunk_from_parameters_the_learner_never_had_is_dropped():
    learner = _learner('ppo_clip')
    assert learner.train(Chunk(honest_chunk(learner.spec), version=learner.policy.version + 1)) is None
    assert learner.dropped['invalid'] == 1
    _keeps_learning(learner)


# -- the parallel learner: checked before it is queued, and an update that raises is counted -------------------

class FakePuller:
    def __init__(self, messages):
        self.messages = deque(messages)

    def recv(self, timeout):
        return self.messages.popleft() if self.messages else None


def _worker(case: str, messages=()) -> LearnerWorker:
    worker = LearnerWorker.__new__(LearnerWorker)
    worker.par = type('P', (), dict(learner_queue=64, max_staleness=None, target_sample_reuse=None,
                                    publish_every=10 ** 6))()
    worker.cfg = type('C', (), dict(train=type('T', (), dict(checkpoint_every_iters=0))()))()
    worker.worker_id, worker.player_id = 'learner-test', 'p0'
    worker.learner = _learner(case)
    worker.policy = worker.learner.policy
    worker.puller = FakePuller(messages)
    worker.queue, worker.seen, worker.seen_set, worker.receipts = deque(), deque(maxlen=100), set(), deque()
    worker.replay, worker.staleness_window = deque(maxlen=4), []
    worker.counts = dict(chunks_received=0, dropped_invalid=0, dropped_duplicate=0, dropped_failed=0, replayed=0)
    worker.arrived, worker.wait_seconds, worker.group = 0, 0.0, None
    worker.logger = type('L', (), dict(scalars=lambda *a, **k: None, histogram=lambda *a, **k: None))()
    return worker


def _message(data, chunk_id=None):
    body = dict(chunk_id=chunk_id or uuid.uuid4().hex, player_id='p0', version=0, env_steps=T * B)
    return Message('chunk', body, data, uuid.uuid4().hex, 'collector-0', time.time())


@pytest.mark.parametrize('case,name,spoil', [('ppo_clip', 'value', (T, B, 2)), ('ppo_vtrace', 'log_prob', (T, B, 9))])
def test_the_issue_s_signed_chunks_are_dropped_before_the_queue_and_the_learner_trains_on(case, name, spoil):
    spec = _learner(case).spec
    bad = _message(dict(honest_chunk(spec), **{name: np.zeros(spoil, np.float32)}))
    worker = _worker(case, [bad, _message(honest_chunk(spec, 1), 'honest')])
    assert worker._receive(timeout=0.0)
    assert [c.chunk_id for c in worker.queue] == ['honest'] and worker.counts['dropped_invalid'] == 1
    worker._train(*worker._next_chunk())
    assert worker.learner.train_iter == 1 and worker.counts['dropped_failed'] == 0


def test_a_parallel_update_that_raises_is_counted_as_failed_and_the_worker_goes_on(monkeypatch):
    worker = _worker('ppo_clip', [_message(honest_chunk(_learner('ppo_clip').spec, seed), str(seed))
                                  for seed in (1, 2)])
    learn_fails_once(monkeypatch, worker.policy, ValueError('operands could not be broadcast together'))
    assert worker._receive(timeout=0.0) and len(worker.queue) == 2
    worker._train(*worker._next_chunk())
    assert worker.counts['dropped_failed'] == 1 and not worker.replay  # a failed chunk is not replayed either
    worker._train(*worker._next_chunk())
    assert worker.learner.train_iter == 1 and [c.chunk_id for c in worker.replay] == ['2']
