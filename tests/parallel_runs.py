"""A parallel league run inside a test: started from a config, driven to its end, closed whatever happens (a failed
test aborts it, so no worker process outlives the test), and the waits the parallel-mode tests share.

Tests import it (``from tests.parallel_runs import parallel_run, to_the_end, wait_for``)::

    with parallel_run(config) as run:
        wait_for(lambda: run.commander.coordinator.counters['chunks'] >= 4, 'the first chunks', run.step)
        os.kill(run.launcher.processes['collector-0'].pid, signal.SIGKILL)
        summary = to_the_end(run)
"""
from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Callable, Dict, Iterator, Optional

from sparring.config import compile_config, save_config
from sparring.framework.parallel import ParallelRun
from sparring.framework.run_setup import complete_league_config

PATIENCE = 120.0  # seconds a test waits for what a run should reach (generous: the machine may be loaded)


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie has exited)."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().split(')')[-1].split()[0] != 'Z'
    except FileNotFoundError:
        return False


def wait_for(condition: Callable[[], bool], what: str, step: Optional[Callable[[], Any]] = None,
             timeout: float = PATIENCE) -> None:
    """Call ``step`` (the run's, or a short sleep) until ``condition()`` holds; an AssertionError naming ``what``
    after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f'timed out waiting for {what}')
        step() if step else time.sleep(0.1)


@contextlib.contextmanager
def parallel_run(config: Dict[str, Any], save_to: Optional[os.PathLike] = None) -> Iterator[ParallelRun]:
    """The started run of ``config`` (compiled, its league completed, saved to ``save_to`` if given, as
    ``parallel_pipeline`` saves it); aborted on the way out unless the test closed it (:func:`to_the_end`)."""
    cfg = compile_config(config, save=False)
    complete_league_config(cfg)
    if save_to is not None:
        save_config(cfg, str(save_to))
    run = ParallelRun(cfg)
    try:
        run.start()
        yield run
    finally:
        if not run.closed:
            run.close(abort='test failed')


def to_the_end(run: ParallelRun) -> dict:
    """Step ``run`` until it has finished, then close it; its summary."""
    while not run.finished:
        run.step()
    return run.close()


def run_to_the_end(config: Dict[str, Any]) -> dict:
    """The summary of ``config``'s parallel run, driven to its end."""
    with parallel_run(config) as run:
        return to_the_end(run)
