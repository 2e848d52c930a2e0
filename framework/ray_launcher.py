"""Workers as Ray actors (``parallel.launcher='ray'``): placement, resources and restarts come from Ray.

The commander stays in the process that runs :func:`~sparring.framework.parallel.parallel_pipeline`
(on a cluster, the driver: e.g. ``ray job submit`` runs it on the head node); each collector, learner
and evaluator is an actor that runs the worker's usual process loop and learns the commander's address
(and the run's secret) through Ray, as its constructor's arguments. ZeroMQ stays the data plane.

* **Where**: ``parallel.ray_address``, else ``$RAY_ADDRESS``, else a Ray instance started for the run on
  this machine (on 127.0.0.1) and shut down with it.
* **Resources per role**: ``parallel.ray_resources`` (``num_cpus``, ``num_gpus``, custom ``resources``
  such as a node label); collectors are spread over the nodes.
* **Restarts**: an actor whose process dies is restarted by Ray (``max_restarts``) and its loop run
  again; the new worker registers under the same id once the old session's lease has expired (it waits for
  that: a live worker's id is never taken), so the commander drops the old session and abandons its
  unfinished games: the journal stays the source of truth and nothing is lost or doubled.
* **Processes**: an actor runs its worker as a plain child process (no Ray threads in its interpreter,
  which cost a sixth of a connect-four league's throughput when the worker ran inside the actor); the
  child exits with its actor.
* **Logs**: each worker appends to ``<exp>/workers/<id>/output.log`` as a local worker does (on a
  cluster, the experiment directory must be a shared file system for them to gather in one place).
* **A commander killed** (``kill -9``) cannot shut down the Ray instance it started; a watchdog process
  (:data:`RAY_WATCHDOG`, no Ray in it) waits for the commander to go and then ends the processes of that
  instance, and only those (found by its session directory), so Ray's agents do not linger.
"""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

from sparring.config.optional import require
from sparring.framework.local_launcher import SINGLE_THREAD_ENV, tail_of
from sparring.worker.remote.security import is_loopback
from sparring.worker.remote.wire import SECRET_ENV
from sparring.worker.run_files import open_run_file

# Ray otherwise swaps 127.0.0.1 for the machine's network address; a run on one machine keeps to loopback.
RAY_LOOPBACK_ENV = 'RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER'
LOCAL_CPU_SLOTS = 256
EXIT_ACTOR_LOST = -9  # what a worker whose actor died for good reports, like a SIGKILLed local one
# Waits for the commander (pid argv[1]) to exit, then ends every process of the Ray session directory argv[2]: the
# instance the commander started. Ray's agents rename themselves (``ray::DashboardAgent``), so a process is the
# session's if its command line names the directory or it holds a file open there (its logs). SIGTERM first (the
# agents ignore it), SIGKILL after 5 s.
RAY_WATCHDOG = '''
import os, signal, sys, time
commander, session = int(sys.argv[1]), sys.argv[2]
def alive(pid):
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[-1].split()[0] != 'Z'
    except OSError:
        return False
def holds(pid):
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            if session.encode() in f.read():
                return True
        for fd in os.listdir(f'/proc/{pid}/fd'):
            if os.readlink(f'/proc/{pid}/fd/{fd}').startswith(session + '/'):
                return True
    except OSError:
        pass
    return False
def of_session():
    return [int(n) for n in os.listdir('/proc') if n.isdigit() and int(n) != os.getpid() and alive(n) and holds(n)]
while alive(commander):
    time.sleep(1.0)
for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 0.0)):
    pids = of_session()
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    deadline = time.monotonic() + wait
    while pids and time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.2)
'''


class WorkerActor:
    """One worker of the run, placed and restarted by Ray: the worker itself is a plain child process of the
    actor (its output appended to its log file), so its hot loop shares no interpreter with Ray's own
    threads; it dies with the actor."""

    def __init__(self, argv: List[str], output_path: str, env: Dict[str, str]) -> None:
        self.argv, self.output_path, self.env = argv, output_path, env

    def run(self) -> int:
        """The worker's exit code (Ray runs this again in a restarted actor)."""
        os.makedirs(os.path.dirname(self.output_path), exist_ok=True)
        command = [sys.executable, '-m', 'sparring.framework.workers', *self.argv, '--parent-pid', str(os.getpid())]
        with open_run_file(self.output_path, 'ab') as output:
            child = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env={**os.environ, **self.env})
        try:
            return child.wait()
        finally:
            if child.poll() is None:  # the actor is being stopped: so is its worker
                child.kill()
                child.wait()

    def where(self) -> Tuple[int, str]:
        """``(pid, node id)`` of the actor's process."""
        import ray
        return os.getpid(), ray.get_runtime_context().get_node_id()


class RayWorker:
    """A launched actor, seen as a process: ``exitcode`` is None while its loop runs."""

    def __init__(self, actor, ref) -> None:
        self.actor, self.ref, self.exitcode = actor, ref, None

    @property
    def pid(self) -> int:
        import ray
        return ray.get(self.actor.where.remote())[0]


class RayLauncher:
    """The :class:`~sparring.framework.local_launcher.LocalLauncher` interface over Ray actors."""

    def __init__(self, exp_dir: str, commander: str, secret: Optional[str], curve_dir: Optional[str],
                 bind_host: str, par) -> None:
        address = par.ray_address or os.environ.get('RAY_ADDRESS')
        if address is None and is_loopback(bind_host):
            os.environ.setdefault(RAY_LOOPBACK_ENV, '0')
        self.ray = require('ray', 'parallel.launcher="ray"', 'ray')
        self.owns_ray = not self.ray.is_initialized()
        if self.owns_ray:
            # A Ray instance of our own counts CPUs as slots, not cores: as many workers as the run asks for
            # share this machine's cores, as local worker processes do.
            context = self.ray.init(address=address or 'local', include_dashboard=False, log_to_driver=False,
                                    ignore_reinit_error=True, **({} if address else dict(num_cpus=LOCAL_CPU_SLOTS)))
            if address is None:
                self._watch(context.address_info['session_dir'])
        self.exp_dir, self.commander, self.curve_dir, self.bind_host, self.par = \
            exp_dir, commander, curve_dir, bind_host, par
        self.env = dict(SINGLE_THREAD_ENV)
        if secret is not None:
            self.env[SECRET_ENV] = secret
        self.actor_class = self.ray.remote(WorkerActor)
        self.processes: Dict[str, RayWorker] = {}
        self.roles: Dict[str, Tuple[str, Optional[str], int]] = {}
        self.restarts: Dict[str, int] = {}
        self.all_pids: List[int] = []

    @staticmethod
    def _watch(session_dir: str) -> None:
        """Start the watchdog of the Ray instance this run started (see :data:`RAY_WATCHDOG`): in a session of its
        own, so that it outlives this process's group being killed."""
        if not os.path.isdir('/proc') or not session_dir:
            return  # it reads processes from /proc (Linux); elsewhere `ray stop` is the operator's
        subprocess.Popen([sys.executable, '-c', RAY_WATCHDOG, str(os.getpid()), session_dir], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def output_path(self, worker_id: str) -> str:
        return os.path.join(self.exp_dir, 'workers', worker_id, 'output.log')

    def options(self, role: str) -> dict:
        """Ray's placement options for a worker of ``role``, from ``parallel.ray_resources``."""
        wanted = dict(self.par.ray_resources.get(role) or {})
        options = dict(num_cpus=wanted.pop('num_cpus', 1), num_gpus=wanted.pop('num_gpus', 0),
                       resources=wanted.pop('resources', None) or None,
                       max_restarts=self.par.max_restarts, max_task_retries=self.par.max_restarts)
        if wanted:
            raise ValueError(f'parallel.ray_resources.{role}: unknown keys {sorted(wanted)}; expected num_cpus, '
                             f'num_gpus, resources')
        if role == 'collector':
            options['scheduling_strategy'] = 'SPREAD'  # collectors over every node that can take them
        return {k: v for k, v in options.items() if v is not None}

    def start(self, worker_id: str, role: str, player_id: Optional[str] = None, replica: int = 0) -> int:
        argv = ['--role', role, '--commander', self.commander, '--worker-id', worker_id, '--bind-host', self.bind_host]
        if player_id is not None:
            argv += ['--player-id', player_id, '--replica', str(replica)]
        if self.curve_dir:
            argv += ['--curve-dir', self.curve_dir]
        actor = self.actor_class.options(**self.options(role)).remote(argv, self.output_path(worker_id), self.env)
        self.processes[worker_id] = RayWorker(actor, actor.run.remote())
        self.roles[worker_id] = (role, player_id, replica)
        return 0

    def restart(self, worker_id: str, counted: bool = True) -> int:
        """Start a worker again; ``counted``: the restart counts toward ``parallel.max_restarts``."""
        self.restarts[worker_id] = self.restarts.get(worker_id, 0) + counted
        return self.start(worker_id, *self.roles[worker_id])

    def poll(self) -> List[Tuple[str, int]]:
        """Workers whose loop ended since the last call, with their exit codes."""
        if not self.processes:
            return []
        by_ref = {worker.ref: wid for wid, worker in self.processes.items()}
        done, _ = self.ray.wait(list(by_ref), num_returns=len(by_ref), timeout=0)
        exited = []
        for ref in done:
            wid = by_ref[ref]
            try:
                code = int(self.ray.get(ref))
            except self.ray.exceptions.RayError:  # the actor died and Ray gave up restarting it
                code = EXIT_ACTOR_LOST
            self.processes.pop(wid)
            exited.append((wid, code))
        return exited

    def kill(self, worker_id: str) -> None:
        worker = self.processes.pop(worker_id, None)
        if worker is not None:
            self.ray.kill(worker.actor, no_restart=True)

    def tail(self, worker_id: str) -> str:
        return tail_of(self.output_path(worker_id))

    def stop(self, timeout: float) -> None:
        """End every actor still running; a Ray instance started for the run goes with them."""
        for worker_id in list(self.processes):
            self.kill(worker_id)
        if self.owns_ray:
            self.ray.shutdown()
