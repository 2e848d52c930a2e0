"""The command-line arguments of a worker process (``sparring worker`` and ``python -m sparring.framework.workers``).

Apart from the worker classes they start (:mod:`sparring.framework.workers`), so that building the
``sparring`` command line, for ``--help`` or ``--version``, imports neither torch nor the worker roles.
"""
from __future__ import annotations

import argparse

#: the roles a worker can take; :data:`sparring.framework.workers.ROLES` maps each to its class
ROLE_NAMES = ('collector', 'evaluator', 'inference', 'learner')


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--role', required=True, choices=ROLE_NAMES, help='what this worker does')
    parser.add_argument('--commander', required=True, help='the commander\'s address, tcp://HOST:PORT')
    parser.add_argument('--worker-id', default=None, help='a name for this worker (default: the commander picks)')
    parser.add_argument('--player-id', default=None, help='learner: the active player to train (default: any free)')
    parser.add_argument('--replica', type=int, default=None,
                        help='learner: its place among the player\'s parallel.learner_replicas (default: any free)')
    parser.add_argument('--key-file', default=None, help='file with the shared secret ($SPARRING_SECRET wins)')
    parser.add_argument('--curve-dir', default=None, help='CURVE keys directory (when the run uses auth="curve")')
    parser.add_argument('--bind-host', default=None, help='learner: the interface to receive chunks on '
                                                          '(default 127.0.0.1; another machine needs its address)')
    parser.add_argument('--workdir', default=None, help='where this worker writes logs and checkpoints '
                                                        '(default: <exp_name>/workers/<worker id>)')
    parser.add_argument('--timeout', type=float, default=30.0, help='seconds to wait for the commander to answer')
    parser.add_argument('--reconnect-seconds', type=float, default=0.0,
                        help='keep trying to rejoin a lost or restarted commander this long (0: exit at once)')
    parser.add_argument('--parent-pid', type=int, default=None, help=argparse.SUPPRESS)
