"""Bit-for-bit proof that a refactor changes no number: record the seeded runs at one commit, compare at another.

    python benchmarks/golden.py record --out /tmp/golden_before    # at the commit before the change
    python benchmarks/golden.py compare /tmp/golden_before         # at the commit after, on the same machine

The runs are those of ``tests/framework/golden_runs.py``: the three with committed recordings (a
tic-tac-toe league, rock-paper-scissors with exact analysis, CartPole) and the refactor cases (Kuhn poker
by MMD with the average policy and exact analysis, a moving magnet, Pendulum by the KL penalty with and
without the value fitted apart, a recurrent PPO, tic-tac-toe by expert iteration, DQN). ``compare`` reruns every case found in the directory and demands exact
equality of every recorded value, floats included; it prints each differing value with its largest
absolute and scale-relative difference and exits 1 if any differ. Exact equality holds only on one
machine and one software stack: floats differ between CPUs (the test suite's comparison with the
committed recordings allows for that, this tool does not).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import sys
import tempfile

GOLDEN_RUNS = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, 'tests', 'framework',
                           'golden_runs.py')


def load_golden_runs():
    """``tests/framework/golden_runs.py`` as a module (tests/ is not a package)."""
    spec = importlib.util.spec_from_file_location('golden_runs', GOLDEN_RUNS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def quiet(verbose: bool):
    """The runs' own log lines hidden unless asked for, so the differences stand out."""
    return contextlib.nullcontext() if verbose else contextlib.redirect_stdout(io.StringIO())


def record(golden_runs, out_dir: str, names, verbose: bool = False) -> int:
    """Run the cases (all when ``names`` is empty) and write each record to ``out_dir/<case>.npz``."""
    for name in names or golden_runs.ALL_CASES:
        with tempfile.TemporaryDirectory(prefix='golden_run_') as workdir, quiet(verbose):
            arrays = golden_runs.run_case(name, workdir)
        os.makedirs(out_dir, exist_ok=True)
        golden_runs.save(golden_runs.golden_path(name, out_dir), arrays)
        print(f'{name}: {golden_runs.count_values(arrays)} values -> {golden_runs.golden_path(name, out_dir)}')
    return 0


def compare(golden_runs, directory: str, names, verbose: bool = False) -> int:
    """Rerun the cases recorded in ``directory``; print every value that is not bit-for-bit the same.
    0 when none differs, else 1."""
    if not os.path.isdir(directory):
        sys.exit(f'golden compare: {directory} is not a directory; expected one written by '
                 f'`python benchmarks/golden.py record --out {directory}`')
    names = names or [name for name in golden_runs.ALL_CASES if os.path.exists(golden_runs.golden_path(name, directory))]
    if not names:
        sys.exit(f'golden compare: {directory} holds no recording (expected one of '
                 f'{", ".join(f"{name}.npz" for name in golden_runs.ALL_CASES)})')
    failed = []
    for name in names:
        path = golden_runs.golden_path(name, directory)
        if not os.path.exists(path):
            sys.exit(f'golden compare: no recording {path}; record it first with --case {name}')
        then = golden_runs.load(path)
        with tempfile.TemporaryDirectory(prefix='golden_run_') as workdir, quiet(verbose):
            now = golden_runs.run_case(name, workdir)
        found = golden_runs.differences(now, then)
        for difference in found:
            print(f'  {name} {difference.describe()}')
        if found:
            failed.append(name)
            values = [d for d in found if d.reason == 'values']
            worst = (f' (worst abs {max(d.max_abs for d in values):.3g}, worst diff / scale '
                     f'{max(d.max_rel for d in values):.3g})' if values else '')
            print(f'{name}: {len(found)} of {golden_runs.count_values(then)} recorded values differ{worst}')
        else:
            print(f'{name}: all {golden_runs.count_values(then)} recorded values identical')
    print('DIFFERENT: ' + ', '.join(failed) if failed else 'IDENTICAL')
    return 1 if failed else 0


def main(argv=None) -> int:
    golden_runs = load_golden_runs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--smoke', action='store_true',
                        help='a run of seconds that checks the tool works: one small case recorded and compared')
    commands = parser.add_subparsers(dest='command')
    rec = commands.add_parser('record', help='run the seeded cases and write DIR/<case>.npz')
    rec.add_argument('--out', required=True, metavar='DIR')
    cmp = commands.add_parser('compare', help='rerun the cases recorded in DIR; exit 1 unless every value is identical')
    cmp.add_argument('directory', metavar='DIR')
    for sub in (rec, cmp):
        sub.add_argument('--case', action='append', choices=sorted(golden_runs.ALL_CASES),
                         help='only this case (repeatable; default: all)')
        sub.add_argument('--verbose', action='store_true', help="show the runs' own log lines")
    args = parser.parse_args(argv)
    if args.smoke:
        with tempfile.TemporaryDirectory() as directory:
            record(golden_runs, directory, ['rps_exact'], False)
            return compare(golden_runs, directory, ['rps_exact'], False)
    if args.command is None:
        parser.error('expected a command: record or compare')
    if args.command == 'record':
        return record(golden_runs, args.out, args.case, args.verbose)
    return compare(golden_runs, args.directory, args.case, args.verbose)


if __name__ == '__main__':
    sys.exit(main())
