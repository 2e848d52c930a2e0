"""A worker joined by hand that cannot import a module of the run's import_names says so in one line, says
goodbye (the commander frees its place at once, not after the worker timeout) and exits with its own code."""
import logging
from types import SimpleNamespace

from sparring.framework import workers
from sparring.worker.remote import base
from sparring.worker.remote.base import EXIT_CANNOT_JOIN


class _Commander:
    """The client side of a commander that accepts the registration of a run importing a missing module."""

    def __init__(self):
        self.sender, self.requests = None, []

    def request(self, kind, body, arrays=None, timeout=None):
        self.requests.append(kind)
        if kind == 'register':
            config = dict(import_names=['a_module_this_machine_lacks'], parallel={}, seed=0, torch_threads=1,
                          exp_name='unused')
            return SimpleNamespace(kind='registered', body=dict(config=config, worker_id='collector-0', index=0,
                                                                player_ids=['p']))
        return SimpleNamespace(kind='ok', body={})

    def close(self):
        pass


def test_a_worker_without_the_runs_module_says_so_leaves_and_exits(monkeypatch, caplog):
    commander = _Commander()
    monkeypatch.setattr(base, 'RequestClient', lambda *args, **kwargs: commander)  # the worker's client to it
    args = workers.build_parser().parse_args(['--role', 'collector', '--commander', 'tcp://127.0.0.1:5999'])
    monkeypatch.setenv('SPARRING_SECRET', 'x' * 32)
    with caplog.at_level(logging.ERROR, logger='sparring.worker'):
        assert workers.run_worker(args) == EXIT_CANNOT_JOIN
    assert commander.requests == ['register', 'goodbye']
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    line = record.getMessage()
    assert '\n' not in line and "cannot import module 'a_module_this_machine_lacks'" in line
    assert 'importable where the worker runs' in line and 'left the run' in line
