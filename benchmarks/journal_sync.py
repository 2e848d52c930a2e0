"""What durable journal commits cost: commits per second of the commander's journal, flushed only (as the journal
once was), synced after every commit, and synced once per batch of commits (as the commander answers a batch of
waiting requests). Prints one JSON line per mode, and writes them to ``benchmarks/results/journal_sync.json`` (entry
``--entry``, default ``commits``) with the folder the journal was in.

    python benchmarks/journal_sync.py [--seconds 5] [--dir /tmp]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

from sparring.framework.journal import Journal

from results_file import add_smoke, apply_smoke, merge_results


def games_entry(i: int) -> dict:
    """A chunk report's entry as the commander journals it (four games against two opponents)."""
    return dict(op='games', chunk=f'{i:032x}', player='naive_sp_0', steps=32,
                games=[['naive_sp_0_h3', [4 * i, 4 * i + 1], ['win', 'loss']],
                       ['random', [4 * i + 2, 4 * i + 3], ['win', 'draw']]])


def measure(directory: str, seconds: float, batch: int) -> dict:
    """Commits per second; ``batch`` 0: never synced (flushed to the OS only), else one sync per ``batch``."""
    with tempfile.TemporaryDirectory(dir=directory) as where:
        journal = Journal(os.path.join(where, 'journal.jsonl'))
        journal.open(0)
        commits, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            journal.append(games_entry(commits))
            commits += 1
            if batch and commits % batch == 0:
                journal.sync()
        elapsed = time.perf_counter() - started
        journal.drop()  # not close(): that would sync the unsynced mode's lines, outside the timing
        return dict(mode='flush only' if not batch else f'sync every {batch}', commits=commits,
                    seconds=round(elapsed, 2), commits_per_second=round(commits / elapsed))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seconds', type=float, default=5.0, help='per mode')
    parser.add_argument('--dir', default=None, help='where the journal is written (default: the temp dir)')
    parser.add_argument('--entry', default='commits', help='the entry of benchmarks/results/journal_sync.json written')
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, seconds=0.2)
    modes = []
    for batch in (0, 1, 8, 64):
        modes.append(measure(args.dir, args.seconds, batch))
        print(json.dumps(modes[-1]), flush=True)
    merge_results('journal_sync', {args.entry: dict(seconds_per_mode=args.seconds, directory=args.dir or tempfile.gettempdir(),
                                                    modes=modes)})


if __name__ == '__main__':
    main()
