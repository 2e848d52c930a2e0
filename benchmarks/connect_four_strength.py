"""Connect four: how strong the ready league's player gets against MCTS in a wall-time budget.

Trains ``dizoo/board_games/config/connect_four_league.py`` (or ``--config``) for ``--minutes`` in one
process, evaluating beside training every ``--eval-every`` rounds against the reference players and
the project's MCTS bot with 100 and 1000 simulations a move (200 games each, greedy network, seats
alternating); the curve of win rates against wall seconds and env steps is the run's history. At the
end, ``sparring eval``'s function plays the final player 200 games against each MCTS bot again on
fresh bot seeds. The targets after one hour: >= 90 % against MCTS-100 and >= 50 % against
MCTS-1000. Writes ``benchmarks/results/connect_four_strength.json`` (one entry per ``--label``) with
the load average at the start and the end.

    .venv/bin/python benchmarks/connect_four_strength.py [--minutes 60] [--label ready] [--keep DIR]
        [--env-steps N] [--mirror] [--learn-threads N] [--seed S]
"""
from __future__ import annotations

import argparse
import copy
import os
import platform
import tempfile
import time

import torch

from results_file import add_smoke, apply_smoke, merge_results, smoke_config

MCTS = 'bot:connect_four_mcts?num_simulations={}'
TARGETS = dict(mcts_100=0.90, mcts_1000=0.50)


CONNECT_FOUR_MIRROR = dict(obs_axis=-1, actions=[6, 5, 4, 3, 2, 1, 0])


SMOKE = False  # --smoke: a few rounds, two evaluation games and two final games per bot


def run(config: dict, minutes: float, eval_every: int, workdir: str, label: str, env_steps: int = 10 ** 10,
        mirror: bool = False, learn_threads: int = None, seed: int = 0) -> dict:
    from sparring.framework import serial_pipeline
    from sparring.framework.evaluate_player import evaluate_player
    config = smoke_config(config) if SMOKE else copy.deepcopy(config)
    config['exp_name'] = os.path.join(workdir, label)
    config['battle'] = dict(config.get('battle', {}), eval_opponents=[MCTS.format(100), MCTS.format(1000)])
    policy = config['policy']
    if mirror:
        policy['learn'] = dict(policy['learn'], mirror=CONNECT_FOUR_MIRROR)
    if learn_threads:
        policy['learn'] = dict(policy['learn'], threads=learn_threads)
    config['train'] = dict(config['train'], max_wall_seconds=60.0 * minutes, max_env_steps=env_steps,
                           eval_every_iters=eval_every, eval_in_background=True, checkpoint_every_iters=500,
                           progress_bar=False, tensorboard=False)
    load_start = os.getloadavg()
    summary = serial_pipeline(config, seed=seed)
    first = next(iter(summary['eval']))
    curve = [dict(seconds=h['seconds'], env_steps=h['env_steps'],
                  win={oid: round(s['win'], 3) for oid, s in h['eval'][first].items()}) for h in summary['history']]
    final = {}
    for name, ref in (('mcts_100', MCTS.format(100)), ('mcts_1000', MCTS.format(1000))):
        # Fresh bot seeds: not the ones the periodic evaluations used.
        final[name] = evaluate_player(config['exp_name'], [ref], games=2 if SMOKE else 200,
                                      seed=12345)['opponents'][ref]
    met = {name: final[name]['win'] >= target for name, target in TARGETS.items()}
    return dict(label=label, seed=seed, minutes=minutes,
                wall_seconds=round(summary['wall_seconds'], 1),
                env_steps=summary['env_steps'], env_steps_per_second=round(summary['env_steps'] / summary['wall_seconds']),
                final=final, targets=TARGETS, met=met, curve=curve, load_start=load_start, load_end=os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--minutes', type=float, default=60.0)
    parser.add_argument('--eval-every', type=int, default=300, help='rounds between evaluations (about 90 s)')
    parser.add_argument('--label', default='ready')
    parser.add_argument('--env-steps', type=int, default=10 ** 10,
                        help='an env-step budget as well as the time; it is also the horizon over which the '
                             'learning rate anneals to 0 (by default so far away that the rate stays constant)')
    parser.add_argument('--mirror', action='store_true', help='train with policy.learn.mirror (left-right)')
    parser.add_argument('--learn-threads', type=int, default=None, help='policy.learn.threads (torch threads of the update)')
    parser.add_argument('--config', default='sparring.dizoo.board_games.config.connect_four_league',
                        help='module holding the config dict to train')
    parser.add_argument('--keep', default=None, help='keep the run in this directory (default: a temporary one)')
    parser.add_argument('--seed', type=int, default=0,
                        help='the run\'s seed (the final evaluation\'s bot seeds stay fixed)')
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, minutes=1.0, env_steps=1024, eval_every=4)
    global SMOKE
    SMOKE = args.smoke
    import importlib
    config = importlib.import_module(args.config).config
    torch.set_num_threads(1)
    started = time.perf_counter()
    print(f'load average at start: {os.getloadavg()}')
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        result = run(config, args.minutes, args.eval_every, args.keep, args.label, args.env_steps, args.mirror,
                     args.learn_threads, args.seed)
    else:
        with tempfile.TemporaryDirectory() as workdir:
            result = run(config, args.minutes, args.eval_every, workdir, args.label, args.env_steps, args.mirror,
                         args.learn_threads, args.seed)
    result.update(seconds=round(time.perf_counter() - started, 1), cpus=os.cpu_count(), machine=platform.machine(),
                  torch=torch.__version__, config=args.config, mirror=args.mirror,
                  learn_threads=args.learn_threads)
    for point in result['curve']:
        print(f'{point["seconds"]:8.0f} s {point["env_steps"]:>11,} steps  ' +
              '  '.join(f'{oid}:{w:.2f}' for oid, w in point['win'].items()))
    for name, s in result['final'].items():
        print(f'final vs {name}: win {s["win"]:.1%} draw {s["draw"]:.1%} loss {s["loss"]:.1%} ({s["games"]} games)'
              f'  target {TARGETS[name]:.0%}: {"met" if result["met"][name] else "not met"}')
    merge_results('connect_four_strength', {args.label: result})


if __name__ == '__main__':
    main()
