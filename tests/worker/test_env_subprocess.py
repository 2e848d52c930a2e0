"""The subprocess env manager: worker errors, dead and hung workers, clean shutdown."""
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from sparring.config.schema import ConfigError
from sparring.worker.env import EnvError, EnvWorkerDiedError, SubprocessEnvManager, make_env_manager
from sparring.worker.env.subprocess_manager import _build_group

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)  # spawned workers inherit sys.path, so they can import the fakes by name
import test_env_fakes  # noqa: E402,F401  registers 'fake_counter'

FAKES = ['test_env_fakes']


def subprocess_cfg(env: dict, **manager) -> dict:
    return dict(env, manager=dict(type='subprocess', **manager))


def counter(**cfg) -> dict:
    return dict(type='fake_counter', **cfg)


def assert_all_gone(processes) -> None:
    for process in processes:
        assert not process.is_alive() and process.exitcode is not None
        with pytest.raises(ProcessLookupError):  # reaped, not a zombie
            os.kill(process.pid, 0)
    assert not set(processes) & set(mp.active_children())


def test_killed_worker_raises_env_worker_died_error_promptly():
    # 'fork' is the harder case: forked siblings inherit the dead worker's pipe, so no EOF arrives
    # and only its process sentinel tells (it is also quicker to start than 'spawn').
    manager = make_env_manager(subprocess_cfg(dict(type='cartpole'), num_workers=2, context='fork'), 4, seed=0)
    manager.reset()
    manager.step(np.zeros(4, np.int64))
    victim = manager._workers[1]
    processes = [w.process for w in manager._workers]
    os.kill(victim.process.pid, signal.SIGKILL)
    started = time.monotonic()
    with pytest.raises(EnvWorkerDiedError) as err:
        manager.step(np.zeros(4, np.int64))
    assert time.monotonic() - started < 5
    message = str(err.value)
    assert f'env worker 1 (pid {victim.process.pid}, hosting envs [2, 3])' in message
    assert 'SIGKILL' in message and 'exit code -9' in message
    assert manager.closed
    assert_all_gone(processes)
    with pytest.raises(EnvError, match='closed'):
        manager.step(np.zeros(4, np.int64))


@pytest.mark.slow
def test_exception_in_a_spawned_worker_comes_back_with_its_traceback():
    # 'spawn' workers know the fake env only through import_names.
    cfg = subprocess_cfg(counter(fault='raise', fault_at=2), num_workers=1)
    with make_env_manager(cfg, 2, seed=0, import_names=FAKES) as manager:
        manager.reset()
        manager.step(np.ones(2, np.int64))
        with pytest.raises(EnvError) as err:
            manager.step(np.ones(2, np.int64))
        message = str(err.value)
        assert "env 0 (type 'fake_counter') raised ValueError in step(1): boom from the counter env" in message
        assert 'Traceback (most recent call last)' in message and 'test_env_fakes.py' in message
        assert 'env worker 0' in message
        manager.reset()  # the manager is still usable after a reset
        manager.step(np.ones(2, np.int64))


def test_malformed_output_in_a_worker_names_the_global_env_index_and_field():
    cfg = subprocess_cfg(counter(fault='int_terminated', fault_at=1), num_workers=2, context='fork')
    with make_env_manager(cfg, 3, seed=0) as manager:
        manager.reset()
        with pytest.raises(EnvError, match=r"env 0 \(type 'fake_counter'\): step\(\) returned terminated 1"):
            manager.step(np.zeros(3, np.int64))


def test_workers_step_their_slices_and_final_obs_is_per_env():
    cfg = subprocess_cfg(counter(terminate_at=2), num_workers=2, context='fork')
    with make_env_manager(cfg, 3, seed=0) as manager:
        assert [(w.lo, w.hi) for w in manager._workers] in ([(0, 2), (2, 3)], [(0, 1), (1, 3)])
        manager.reset()
        first = manager.step(np.array([0, 1, 2]))
        np.testing.assert_array_equal(first.final_obs, first.obs)
        second = manager.step(np.array([0, 1, 2]))
        assert second.terminated.all() and not second.truncated.any()
        np.testing.assert_array_equal(second.final_obs, [[2, 1]] * 3)
        np.testing.assert_array_equal(second.obs, [[0, 2]] * 3)
        np.testing.assert_array_equal(second.episode_return, [0.0, 2.0, 4.0])
        assert [info['t'] for info in second.infos] == [2, 2, 2]


def test_hung_worker_hits_the_step_timeout():
    cfg = subprocess_cfg(counter(fault='sleep', fault_at=1), num_workers=2, context='fork', step_timeout=0.5)
    manager = make_env_manager(cfg, 2, seed=0)
    processes = [w.process for w in manager._workers]
    manager.reset()
    started = time.monotonic()
    with pytest.raises(EnvError, match=r'did not answer step\(\) within 0.5 s \(env.manager.step_timeout\)'):
        manager.step(np.zeros(2, np.int64))
    assert time.monotonic() - started < 5
    assert_all_gone(processes)


def test_close_leaves_no_worker_alive():
    manager = make_env_manager(subprocess_cfg(counter(), num_workers=2, context='fork'), 4, seed=0)
    processes = [w.process for w in manager._workers]
    assert all(p.is_alive() for p in processes)
    manager.reset()
    manager.close()
    manager.close()
    assert_all_gone(processes)


def test_failing_env_construction_in_a_worker_is_reported_at_start_up():
    cfg = subprocess_cfg(counter(fault='no such fault'), num_workers=2, context='fork')
    before = set(mp.active_children())
    with pytest.raises(EnvError, match='in start-up of env worker 0') as err:
        make_env_manager(cfg, 2, seed=0)
    assert 'AssertionError' in str(err.value)
    assert set(mp.active_children()) <= before


def test_unregistered_env_type_in_a_worker_asks_for_import_names():
    with pytest.raises(EnvError, match="add that module to import_names") as err:
        _build_group(dict(type='not_registered_anywhere'), [0], [], 'my_package.envs')
    assert "'my_package.envs'" in str(err.value)


def test_unknown_env_type_fails_in_the_parent_before_any_worker_starts():
    with pytest.raises(ConfigError, match="Did you mean 'fake_counter'"):
        SubprocessEnvManager(dict(type='fake_countr'), 2, seed=0)


@pytest.mark.slow
def test_workers_exit_when_their_parent_is_killed():
    script = textwrap.dedent(f'''
        import sys, time
        sys.path.insert(0, {HERE!r})
        import numpy as np
        import test_env_fakes
        from sparring.worker.env import make_env_manager
        cfg = dict(type='fake_counter', manager=dict(type='subprocess', num_workers=2, context='fork'))
        manager = make_env_manager(cfg, 2, seed=0)
        manager.reset()
        print(' '.join(str(w.process.pid) for w in manager._workers), flush=True)
        time.sleep(60)
    ''')
    with subprocess.Popen([sys.executable, '-c', script], stdout=subprocess.PIPE, text=True) as parent:
        try:
            pids = [int(pid) for pid in parent.stdout.readline().split()]
            assert len(pids) == 2
        finally:
            parent.kill()
    deadline = time.monotonic() + 10
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [pid for pid in alive if _exists(pid)]
    assert not alive, f'orphaned env workers {alive}'


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # An exited orphan is reaped by init; until then it is a zombie, which counts as gone.
    with open(f'/proc/{pid}/stat') as f:
        return f.read().split(')')[-1].split()[0] != 'Z'
