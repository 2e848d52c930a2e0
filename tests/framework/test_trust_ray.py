"""Defect 16 of issue #28: after a ``kill -9`` of a commander that started its own Ray instance, that instance's
processes (Ray's DashboardAgent and RuntimeEnvAgent among them) are ended by the launcher's watchdog, rather than
lingering for about 90 s. Ray started fresh on 127.0.0.1. Skipped without the ray extra."""
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip('ray')
pytestmark = [pytest.mark.slow, pytest.mark.alone]  # a Ray instance started and killed

COMMANDER = '''
import os, sys, time
os.environ.setdefault('RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER', '0')
from easydict import EasyDict
from sparring.framework.ray_launcher import RayLauncher
par = EasyDict(ray_address=None, ray_resources={}, max_restarts=0)
launcher = RayLauncher(sys.argv[1], 'tcp://127.0.0.1:9', None, None, '127.0.0.1', par)
import ray
print(ray.get_runtime_context().gcs_address, flush=True)
print(ray._private.worker._global_node.get_session_dir_path(), flush=True)
time.sleep(600)
'''


def _of_session(session: str):
    """The live processes of a Ray session: its directory in their command line, or a file of theirs open in it
    (Ray's agents rename themselves, ``ray::DashboardAgent``, but keep their logs open)."""
    from sparring.framework import ray_launcher
    namespace = {}
    exec(ray_launcher.RAY_WATCHDOG.split('while alive(commander)')[0].replace(
        'commander, session = int(sys.argv[1]), sys.argv[2]', f'session = {session!r}'), namespace)
    return namespace['of_session']()


def _agent(pid: int) -> bool:
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            return b'Agent' in f.read()
    except OSError:
        return False


def test_defect16_the_ray_instance_of_a_killed_commander_is_ended(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != 'RAY_ADDRESS'}
    commander = subprocess.Popen([sys.executable, '-c', COMMANDER, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                                 env=env)
    try:
        address = commander.stdout.readline().strip()
        session = commander.stdout.readline().strip()
        assert address.startswith('127.0.0.1:') and session, (address, session)
        deadline = time.monotonic() + 60.0
        while not any(_agent(pid) for pid in _of_session(session)) and time.monotonic() < deadline:
            time.sleep(0.5)  # Ray's raylet starts its agents a few seconds after it starts
        started = _of_session(session)
        assert any(_agent(pid) for pid in started), 'no agent of the Ray instance found by its session directory'
    finally:
        commander.send_signal(signal.SIGKILL)
        commander.wait()
    deadline = time.monotonic() + 60.0  # SIGTERM, then SIGKILL 5 s later; well under Ray's own 90 s
    while _of_session(session) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = _of_session(session)
    for pid in left:  # whatever the watchdog missed goes now, so the test leaves nothing behind
        os.kill(pid, signal.SIGKILL)
    assert not left, f'{len(left)} of the {len(started)} processes of the Ray instance outlived its commander'
