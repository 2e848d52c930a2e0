"""The worker processes' entry point: ``python -m sparring.framework.workers --role R --commander tcp://HOST:PORT``.

The local launcher starts workers this way; on another machine ``sparring worker --role R --commander
tcp://HOST:PORT`` does the same. The roles themselves live with the worker classes they drive
(:mod:`sparring.worker.remote`); this module wires them to the commander's message catalogue and
handles the process: dying with the launcher, rejoining a restarted commander, the exit code.
"""
from __future__ import annotations

import argparse
import ctypes
import logging
import os
import re
import signal
import sys
import time
from typing import Dict, List, Optional, Type, Union

from sparring.config.schema import ConfigError
from sparring.framework.messaging import make_security
from sparring.framework.worker_arguments import add_worker_arguments
from sparring.worker.remote.base import (EXIT_CANNOT_JOIN, EXIT_COMMANDER_LOST, EXIT_DISK_FULL, EXIT_ID_HELD, EXIT_ORPHANED, CannotJoin,
                                         CommanderLost, IdHeld, SessionExpired, process_gone)
from sparring.worker.remote.collector import CollectorWorker
from sparring.worker.remote.evaluator import EvaluatorWorker
from sparring.worker.remote.inference import InferenceWorker
from sparring.worker.remote.learner import LearnerWorker
from sparring.worker.run_files import StorageFailure

log = logging.getLogger('sparring.worker')

ROLES: Dict[str, Type[Union[CollectorWorker, LearnerWorker, EvaluatorWorker, InferenceWorker]]] = {
    'collector': CollectorWorker, 'learner': LearnerWorker, 'evaluator': EvaluatorWorker,
    'inference': InferenceWorker}
# Set to a folder, every worker process writes a cProfile of its main thread there when it ends
# (<worker id>-<pid>.prof): where a parallel run's time goes, read with pstats or snakeviz.
PROFILE_ENV = 'SPARRING_PROFILE_DIR'
# What ZeroMQ can connect to: a host name, an IPv4 address or a bracketed IPv6 one, and a port.
_ADDRESS = re.compile(r'^tcp://([A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})$')


def check_commander_address(address: str) -> None:
    """ConfigError unless ``address`` is ``tcp://HOST:PORT`` (ZeroMQ's own error on a bad one is a bare 'Invalid
    argument' traceback)."""
    match = _ADDRESS.match(address)
    if match is None or not 0 < int(match.group(2)) < 65536:
        raise ConfigError(f'--commander {address!r}: expected tcp://HOST:PORT with a port in 1..65535, as the '
                          f'commander prints it and writes it to <exp_name>/commander/address')


def die_with_parent(launcher_pid: int) -> None:
    """Exit with the launcher: at once if it is gone already, by the heartbeat thread's check if it
    dies later, and by Linux's parent-death signal when the direct parent (the launcher's fork
    server, which lives exactly as long as the launcher and its workers) goes."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: the heartbeat thread's check still ends an orphan
    if process_gone(launcher_pid):
        sys.exit(EXIT_ORPHANED)


def build_parser(prog: str = 'sparring worker') -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description='Join a parallel sparring run as a worker.')
    add_worker_arguments(parser)
    return parser


def run_worker(args: argparse.Namespace) -> int:
    """Run one worker to the end; the exit code says why it ended."""
    logging.basicConfig(level=logging.INFO, format='%(asctime)s %(name)s %(levelname)s %(message)s')
    if args.parent_pid is not None:
        die_with_parent(args.parent_pid)
    security = make_security(key_file=args.key_file, curve_dir=args.curve_dir)
    give_up = time.monotonic() + args.reconnect_seconds
    while True:
        worker = None
        try:
            # A worker joins the run as it is built (and closes itself if that fails).
            worker = ROLES[args.role](args.commander, security, worker_id=args.worker_id, player_id=args.player_id,
                                      parent_pid=args.parent_pid, workdir=args.workdir, timeout=args.timeout,
                                      bind_host=args.bind_host, replica=args.replica)
            run_profiled(worker)
            return 0
        except IdHeld as err:  # not this worker's fault: its launcher starts it again without counting a failure
            log.error('%s', err)
            return EXIT_ID_HELD
        except CannotJoin as err:
            log.error('%s', err)
            return EXIT_CANNOT_JOIN
        except StorageFailure as err:  # starting it again would fail the same way: the commander stops the run
            log.error('%s', err)
            return EXIT_DISK_FULL
        except (CommanderLost, SessionExpired) as err:
            if time.monotonic() >= give_up:
                log.error('%s', err)
                return EXIT_COMMANDER_LOST
            log.warning('%s; joining again', err)
            time.sleep(1.0)
        finally:
            if worker is not None:
                worker.close()


def run_profiled(worker) -> None:
    """``worker.run()``, under cProfile when ``$SPARRING_PROFILE_DIR`` names a folder (see :data:`PROFILE_ENV`)."""
    directory = os.environ.get(PROFILE_ENV)
    if not directory:
        worker.run()
        return
    import cProfile
    profile = cProfile.Profile()
    try:
        profile.runcall(worker.run)
    finally:
        os.makedirs(directory, exist_ok=True)
        profile.dump_stats(os.path.join(directory, f'{worker.worker_id}-{os.getpid()}.prof'))


def main(argv: Optional[List[str]] = None) -> int:
    return run_worker(build_parser('python -m sparring.framework.workers').parse_args(argv))


if __name__ == '__main__':
    sys.exit(main())
