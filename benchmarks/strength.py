"""Playing strength of the ready league configs, against wall time on this machine.

Sections (``--only`` picks some; each merges its entry into ``benchmarks/results/strength.json``):

* ``kuhn``: ``kuhn_poker_mmd.py`` for 5 minutes. Target: the league's answer (the exact Nash
  meta-strategy over the snapshots and the live player) at exploitability <= 0.01 and the single
  network (the live player, MMD's last iterate) at <= 0.03.
* ``leduc``: ``leduc_poker_mmd.py`` for 15 minutes. Target: the better of the two <= 0.3.

For each: the curve of both exploitabilities (exact, OpenSpiel's NashConv / 2) against wall
seconds and env steps, the load average when it started and ended, whether and when each target
was first met and whether the final evaluation meets it. The machine is shared: run it under
``flock /tmp/sparring-bench.lock`` so heavy benchmarks do not overlap.

    flock /tmp/sparring-bench.lock .venv/bin/python benchmarks/strength.py [--only kuhn leduc] [--minutes-scale 1.0] \
        [--override '{"policy": {"collect": {"n_steps": 64}}}']

``--override`` (JSON) is merged into each section's ready config, to measure a variant, and ``--label`` files
its result under ``<section>_<label>`` instead of ``<section>``; every result records the policy and league
sections it ran with.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import tempfile
import time
from typing import Callable, Dict, Optional

import torch

from results_file import add_smoke, apply_smoke, merge_results, print_exploitability_curve

QUIET = dict(progress_bar=False, tensorboard=False)


def _load_average() -> list:
    return [round(x, 2) for x in os.getloadavg()]


def _merged(base: dict, override: dict) -> dict:
    """``base`` with ``override`` merged in, nested dicts key by key."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _run_league(config: dict, workdir: str, name: str, seconds: float) -> dict:
    """``config`` trained for ``seconds`` in ``workdir/name``; the serial pipeline's summary."""
    from sparring.framework import serial_pipeline
    config = copy.deepcopy(config)
    config['exp_name'] = os.path.join(workdir, name)
    config['train'] = dict(config.get('train', {}), max_wall_seconds=seconds, **QUIET)
    return serial_pipeline(config)


# ------------------------------------------------------------------------------------ poker
def _exact_point(seconds: float, env_steps: int, exact: dict) -> dict:
    return dict(seconds=round(seconds, 1), env_steps=env_steps, meta_exploitability=round(exact['meta_exploitability'], 5),
                player_exploitability=round(min(exact['exploitability'].values()), 5))


def _first(curve: list, met: Callable[[dict], bool]) -> Optional[dict]:
    return next((point for point in curve if met(point)), None)


def poker(game: str, config: dict, minutes: float, meta_target: float, player_target: Optional[float],
          workdir: str, scale: float, override: dict) -> dict:
    """One poker league run, scored against its targets (``player_target`` None: the better of the two answers
    against ``meta_target``)."""
    load_start = _load_average()
    config = _merged(config, override)
    summary = _run_league(config, workdir, game, 60.0 * minutes * scale)
    curve = [_exact_point(h['seconds'], h['env_steps'], h['exact']) for h in summary['history']]
    final = _exact_point(summary['wall_seconds'], summary['env_steps'], summary['exact'])
    if not curve or curve[-1]['env_steps'] != final['env_steps']:
        curve.append(final)
    if player_target is None:
        def met(p):
            return min(p['meta_exploitability'], p['player_exploitability']) <= meta_target
    else:
        def met(p):
            return p['meta_exploitability'] <= meta_target and p['player_exploitability'] <= player_target
    first = _first(curve, met)
    out = dict(minutes=minutes * scale, wall_seconds=round(summary['wall_seconds'], 1), env_steps=summary['env_steps'],
               load_average_start=load_start, load_average_end=_load_average(),
               targets=dict(meta_exploitability=meta_target, player_exploitability=player_target),
               final=final, final_meets_target=met(final), first_met=first,
               best_meta_exploitability=min(p['meta_exploitability'] for p in curve),
               best_player_exploitability=min(p['player_exploitability'] for p in curve),
               config=dict(policy=config['policy'], league=config['league']), curve=curve)
    print(f'{game}: final meta {final["meta_exploitability"]:.4f} player {final["player_exploitability"]:.4f} after '
          f'{final["seconds"]:.0f} s / {final["env_steps"]:,} env steps; target {"met" if out["final_meets_target"] else "missed"} '
          f'at the end, first met at {first["seconds"] if first else "never"} s; load {load_start} -> {out["load_average_end"]}')
    print_exploitability_curve(curve, 15)
    return out


def kuhn(workdir: str, scale: float, override: dict) -> dict:
    from sparring.dizoo.openspiel.config.kuhn_poker_mmd import config
    return poker('kuhn_poker', config, 5.0, 0.01, 0.03, workdir, scale, override)


def leduc(workdir: str, scale: float, override: dict) -> dict:
    from sparring.dizoo.openspiel.config.leduc_poker_mmd import config
    return poker('leduc_poker', config, 15.0, 0.3, None, workdir, scale, override)


SECTIONS: Dict[str, Callable[[str, float, dict], dict]] = dict(kuhn=kuhn, leduc=leduc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--only', nargs='+', choices=list(SECTIONS), default=list(SECTIONS))
    parser.add_argument('--minutes-scale', type=float, default=1.0,
                        help='scale every time budget (e.g. 0.1 for a quick check)')
    parser.add_argument('--override', type=json.loads, default={},
                        help='JSON merged into each section\'s ready config (a variant to measure)')
    parser.add_argument('--label', default='', help='file the results under <section>_<label> (a variant)')
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, minutes_scale=0.01)
    torch.set_num_threads(1)
    machine = dict(cpus=os.cpu_count(), machine=platform.machine(), python=platform.python_version(),
                   torch=torch.__version__)
    with tempfile.TemporaryDirectory() as workdir:
        for section in args.only:
            started = time.perf_counter()
            print(f'== {section}', flush=True)
            result = SECTIONS[section](workdir, args.minutes_scale, args.override)
            key = f'{section}_{args.label}' if args.label else section
            merge_results('strength', {key: dict(result=result, seconds=round(time.perf_counter() - started, 1),
                                                     minutes_scale=args.minutes_scale, **machine)})


if __name__ == '__main__':
    main()
