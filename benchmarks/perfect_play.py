"""Connect four judged by perfect play: make a labelled position set, and score a player's errors on it.

``generate`` plays uniformly random games from ``--seed``, labels positions with the solver
(:mod:`sparring.dizoo.board_games.solver`, numba) and keeps up to ``--per-group`` of each of the six groups
(stones played 0-14 / 15-28 / 29-42 x plies until decided < 14 / 14-27 / 28+), with the labelling speed per
group in the file's ``meta``. ``score`` plays a run's player (the network alone, then with each ``--search``
N: its guided search) or a bot (``bot:<name>[?options]``) on every position and reports the share of moves
whose outcome is worse than the best move's, per group, into ``benchmarks/results/perfect_play.json`` (or
``--results perfect_levers``: the training levers' probes of docs/guides/perfect-play.md).

Seed 1's set is for tuning; the reported figures come from seed 2's (:data:`REPORT_SET`), which no tuning saw.

    .venv/bin/python benchmarks/perfect_play.py generate --seed 2 --out benchmarks/data/connect_four_positions_2.npz
    .venv/bin/python benchmarks/perfect_play.py score RUN [--player ID] [--search 100] --positions FILE
    .venv/bin/python benchmarks/perfect_play.py score "bot:connect_four_mcts?num_simulations=100" --positions FILE
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from results_file import cpu_model, merge_results

BOT_PREFIX = 'bot:'


def generate(args) -> None:
    from sparring.dizoo.board_games.solver.testset import generate as generate_set
    load = os.getloadavg()
    positions = generate_set(args.seed, args.per_group, max_nodes=args.max_nodes, max_seconds=args.max_seconds,
                             max_attempts=args.max_attempts, begin_from=args.begin_from,
                             log=lambda line: print(line, flush=True))
    positions.meta.update(cpu=cpu_model(), load_start=load, load_end=os.getloadavg())
    positions.save(args.out)
    meta = positions.meta
    print(f'wrote {args.out}: {len(positions)} positions in {meta["seconds"]} s (load {load[0]:.2f})')
    for name, count in meta['labelled'].items():
        solved, cpu = meta['solved'][name], meta['label_cpu_seconds'][name]
        speed = f'{solved / cpu:8.1f} positions/s CPU' if cpu > 0 else 'none labelled'
        print(f'  {name:14s} {count:5d} kept, {solved:5d} labelled: {speed}')
    print(f'  skipped over {args.max_nodes:,} nodes, by stones played: {meta["skipped_over_budget"]}')


def players(args):
    """(label, player) pairs to score: a bot, or a run's network alone and with each search size."""
    if args.player_ref.startswith(BOT_PREFIX):
        from gymnasium import spaces

        import sparring.dizoo  # noqa: F401  (registers the bots)
        from sparring.config.registry import BOT_REGISTRY
        from sparring.policy.bot import parse_bot_ref
        name, options = parse_bot_ref(args.player_ref[len(BOT_PREFIX):])
        bot = BOT_REGISTRY.get(name)(options, spaces.Box(0.0, 1.0, (3, 6, 7), np.float32), spaces.Discrete(7),
                                     seed=args.seed)
        yield 'alone', bot
        return
    from sparring.dizoo.board_games.guided_search import guided_search_player
    from sparring.framework.player_loader import TrainedRun
    run = TrainedRun(args.player_ref)
    policy = run.policy(args.player, seed=args.seed)
    yield 'network', policy
    for n in args.search:
        yield f'search_{n}', guided_search_player(run.cfg.env, policy, n, seed=args.seed)


def score(args) -> None:
    from sparring.dizoo.board_games.solver.testset import load, score_policy
    torch.set_num_threads(1)
    positions = load(args.positions)
    repository = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = dict(player=args.player_ref, player_id=args.player,
                  positions_file=os.path.relpath(os.path.abspath(args.positions), repository),
                  positions_seed=positions.meta.get('seed'), positions=len(positions), cpu=cpu_model(),
                  load_start=os.getloadavg())
    for label, player in players(args):
        started = time.perf_counter()
        groups = score_policy(player, positions, batch=args.batch)
        result[label] = dict(groups=groups, seconds=round(time.perf_counter() - started, 1))
        print(f'{args.player_ref} {label}: ' + ', '.join(f'{name} {g["error_rate"]:.1%} ({g["positions"]})'
                                                         for name, g in groups.items()), flush=True)
        print('  of its errors, missed wins in one / missed blocks: '
              + ', '.join(f'{name} {g["missed_wins"]}/{g["missed_blocks"]}' for name, g in groups.items()), flush=True)
    result['load_end'] = os.getloadavg()
    merge_results(args.results, {args.label or args.player_ref: result})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest='command', required=True)
    gen = commands.add_parser('generate', help='random-play positions labelled by the solver')
    gen.add_argument('--seed', type=int, required=True)
    gen.add_argument('--out', required=True)
    gen.add_argument('--per-group', type=int, default=500)
    gen.add_argument('--max-nodes', type=int, default=1_000_000, help='skip a position whose labels take more')
    gen.add_argument('--begin-from', type=int, default=9, help='the fewest stones of a begin position')
    gen.add_argument('--max-seconds', type=float, default=240.0)
    gen.add_argument('--max-attempts', type=int, default=None,
                     help='positions labelled or skipped per stone group at most (the set then depends only on the seed)')
    sc = commands.add_parser('score', help='a player\'s error rate per group')
    sc.add_argument('player_ref', metavar='RUN', help='a connect-four run directory, or bot:<name>[?options]')
    sc.add_argument('--player', default=None, help='the run\'s player id (default: its first active player)')
    sc.add_argument('--search', type=int, nargs='*', default=[], help='also score the guided search of N simulations')
    sc.add_argument('--positions', required=True)
    sc.add_argument('--seed', type=int, default=0, help='the player\'s seed (tie-breaks, search)')
    sc.add_argument('--batch', type=int, default=512, help='positions per act call')
    sc.add_argument('--label', default=None, help='the entry\'s name in the results (default: RUN)')
    sc.add_argument('--results', default='perfect_play',
                    help='the results file under benchmarks/results/, without .json (the levers\' probes: perfect_levers)')
    args = parser.parse_args()
    generate(args) if args.command == 'generate' else score(args)


if __name__ == '__main__':
    main()
