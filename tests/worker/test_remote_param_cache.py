"""A remote worker's cache of snapshot parameters is bounded: a league's snapshots grow with the run, the cache
does not; an evicted snapshot is fetched again when it is drawn."""
from types import SimpleNamespace

import numpy as np

from sparring.worker.remote.base import RemoteParamStore


class _Worker:
    """What RemoteParamStore asks of a worker: the commander's reply to a fetch, counted."""

    def __init__(self):
        self.fetched = []

    def fetch_params(self, ref):
        self.fetched.append(ref)
        return SimpleNamespace(arrays={'w': np.full(3, len(self.fetched), dtype=np.float32)},
                               body=dict(policy_cfg={'model': {}}, version=7))


def test_the_cache_keeps_the_most_recently_used_snapshots_and_fetches_an_evicted_one_again():
    worker = _Worker()
    store = RemoteParamStore(worker, max_entries=2)
    first = store.get('p_h1')
    assert first['version'] == 7 and first['policy_cfg'].model == {} and first['params']['w'].tolist() == [1, 1, 1]
    store.get('p_h2')
    assert store.get('p_h1') is first  # a hit: no fetch, and p_h1 is now the most recent
    store.get('p_h3')  # evicts p_h2, the least recently used
    assert worker.fetched == ['p_h1', 'p_h2', 'p_h3']
    store.get('p_h2')
    assert worker.fetched[-1] == 'p_h2' and len(store._cache) == 2


def test_a_thousand_snapshots_hold_at_most_the_bound():
    worker = _Worker()
    store = RemoteParamStore(worker)
    for i in range(1000):
        store.get(f'p_h{i}')
    assert len(store._cache) == store.max_entries == 64
