"""Child processes of a run, started from a fork server that has torch and sparring imported.

A child (a parallel worker, or the serial loop's background evaluation) starts in milliseconds
instead of importing torch again on a busy machine, and never runs the user's main script again.
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Dict

# What a worker imports before it can work: loaded once by the fork server, so a worker (or a
# restarted one) starts in milliseconds instead of importing torch again on a busy machine.
WORKER_PRELOAD = ['torch', 'torch._dynamo',  # a torch optimizer's first construction imports _dynamo (about 1 s)
                  'sparring.framework.workers', 'sparring.policy', 'sparring.league', 'sparring.dizoo',
                  'sparring.worker.battle_collector', 'sparring.worker.collector', 'sparring.worker.learner',
                  'sparring.worker.battle_evaluator', 'sparring.worker.checkpoint']
# Thread pools started at import (OpenBLAS) would not survive a fork; the fork server starts with one thread each.
SINGLE_THREAD_ENV = dict(OMP_NUM_THREADS='1', MKL_NUM_THREADS='1', OPENBLAS_NUM_THREADS='1')


@contextlib.contextmanager
def main_script_hidden():
    """Hide the main script from multiprocessing while a worker starts. A worker gets everything from
    the commander, so it must not run the user's script again (which it would, by default, before its
    target, and which an unguarded ``parallel_pipeline(config)`` at a script's top level cannot take)."""
    main = sys.modules['__main__']
    saved: Dict[str, Any] = {key: main.__dict__[key] for key in ('__file__', '__spec__') if key in main.__dict__}
    main.__dict__.pop('__file__', None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.pop('__spec__', None)
        main.__dict__.update(saved)


def worker_context():
    """The multiprocessing context that starts local workers: a fork server with the workers' imports
    preloaded where the platform has one, else spawn."""
    import multiprocessing as mp
    if 'forkserver' not in mp.get_all_start_methods():
        return mp.get_context('spawn')
    import multiprocessing.forkserver
    context = mp.get_context('forkserver')
    context.set_forkserver_preload(WORKER_PRELOAD)
    saved = {key: os.environ.get(key) for key in SINGLE_THREAD_ENV}
    os.environ.update(SINGLE_THREAD_ENV)
    try:
        with main_script_hidden():
            multiprocessing.forkserver.ensure_running()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return context
