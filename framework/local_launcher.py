"""Worker processes on this machine: forked from a server that has torch and sparring imported.

A worker (or a restarted one) starts in milliseconds instead of importing torch again on a busy
machine. Each runs in a session of its own with its output appended to ``workers/<id>/output.log``,
and exits when the launching process does.
"""
from __future__ import annotations

import io
import json
import os
import sys
import time
from multiprocessing.process import BaseProcess
from typing import Dict, List, Optional, Tuple, cast

from sparring.framework.workers import PROFILE_ENV
from sparring.worker.child_process import SINGLE_THREAD_ENV, main_script_hidden, worker_context
from sparring.worker.remote.wire import SECRET_ENV
from sparring.worker.run_files import run_file_fd, write_atomically

EXIT_TAIL_LINES = 20

def worker_process(argv: List[str], output_path: str, env: Dict[str, str]) -> None:
    """A local worker's process: its own session (a Ctrl-C at the terminal reaches only the launcher,
    which stops the workers in order), its output appended to its log file, then the worker's run."""
    os.setsid()
    fd = run_file_fd(output_path, 'a')
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            cast(io.TextIOWrapper, stream).reconfigure(line_buffering=True)
    os.environ.update(env)
    from sparring.framework.workers import build_parser, run_worker
    sys.exit(run_worker(build_parser().parse_args(argv)))


class LocalLauncher:
    """Worker processes on this machine: started, watched, restarted and stopped by worker id."""

    def __init__(self, exp_dir: str, commander: str, secret: Optional[str], curve_dir: Optional[str],
                 bind_host: str) -> None:
        self.exp_dir = exp_dir
        self.commander = commander
        self.curve_dir = curve_dir
        self.bind_host = bind_host
        self.env = dict(SINGLE_THREAD_ENV)
        if os.environ.get(PROFILE_ENV):  # the fork server may predate the variable: hand it on explicitly
            self.env[PROFILE_ENV] = os.environ[PROFILE_ENV]
        if secret is not None:
            self.env[SECRET_ENV] = secret
        self.context = worker_context()
        self.processes: Dict[str, BaseProcess] = {}
        self.roles: Dict[str, Tuple[str, Optional[str], int]] = {}  # worker id -> (role, player, replica)
        self.restarts: Dict[str, int] = {}
        self.all_pids: List[int] = []

    def output_path(self, worker_id: str) -> str:
        return os.path.join(self.exp_dir, 'workers', worker_id, 'output.log')

    def start(self, worker_id: str, role: str, player_id: Optional[str] = None, replica: int = 0) -> int:
        # The worker exits when this process does (its direct parent is the fork server).
        argv = ['--role', role, '--commander', self.commander, '--worker-id', worker_id, '--bind-host', self.bind_host,
                '--parent-pid', str(os.getpid())]
        if player_id is not None:
            argv += ['--player-id', player_id, '--replica', str(replica)]
        if self.curve_dir:
            argv += ['--curve-dir', self.curve_dir]
        path = self.output_path(worker_id)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        process = self.context.Process(target=worker_process, args=(argv, path, self.env), name=worker_id)
        with main_script_hidden():
            process.start()
        self.processes[worker_id] = process
        self.roles[worker_id] = (role, player_id, replica)
        self.all_pids.append(process.pid)
        self._write_pids()
        return process.pid

    def restart(self, worker_id: str, counted: bool = True) -> int:
        """Start a worker again; ``counted``: the restart counts toward ``parallel.max_restarts``."""
        self.restarts[worker_id] = self.restarts.get(worker_id, 0) + counted
        return self.start(worker_id, *self.roles[worker_id])

    def kill(self, worker_id: str) -> None:
        """SIGKILL a worker and reap it (a replica whose group broke)."""
        process = self.processes.pop(worker_id, None)
        if process is not None:
            process.kill()
            process.join()

    def poll(self) -> List[Tuple[str, int]]:
        """Workers that exited since the last call, with their exit codes (negative: killed by that signal)."""
        exited = [(wid, p.exitcode) for wid, p in self.processes.items() if p.exitcode is not None]
        for wid, _ in exited:
            self.processes.pop(wid).join()
        if exited:
            self._write_pids()
        return exited

    def tail(self, worker_id: str) -> str:
        return tail_of(self.output_path(worker_id))

    def stop(self, timeout: float) -> None:
        """SIGTERM what is still running, then SIGKILL what outlives ``timeout``; reap everything."""
        for process in self.processes.values():
            if process.exitcode is None:
                process.terminate()
        deadline = time.monotonic() + timeout
        for process in self.processes.values():
            process.join(max(0.0, deadline - time.monotonic()))
            if process.exitcode is None:
                process.kill()
                process.join()
        self.processes.clear()
        self._write_pids()

    def _write_pids(self) -> None:
        import multiprocessing.forkserver
        path = os.path.join(self.exp_dir, 'workers', 'pids.json')
        os.makedirs(os.path.dirname(path), exist_ok=True)
        server = getattr(getattr(multiprocessing.forkserver, '_forkserver', None), '_forkserver_pid', None)
        write_atomically(path, json.dumps(dict(running={wid: p.pid for wid, p in self.processes.items()},
                                               launcher=os.getpid(), fork_server=server, started=self.all_pids)))


def tail_of(path: str) -> str:
    """The last lines of a worker's output (shown when it keeps dying)."""
    try:
        with open(path, 'rb') as f:
            lines = f.read().decode('utf-8', 'replace').splitlines()
    except OSError:
        return ''
    return '\n'.join(lines[-EXIT_TAIL_LINES:])
