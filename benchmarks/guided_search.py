"""A trained connect-four player with search at play time against the MCTS bots, beside the network alone.

Plays the player of a run (e.g. one kept by ``connect_four_strength.py --keep DIR``) 200 games
against MCTS with 100 and 1000 simulations a move, seats alternating, on the fresh bot seeds of
``connect_four_strength.py``'s final evaluation: first the network alone (greedy), then choosing each
move by the PUCT search guided by its policy and value (``sparring eval --search N``) for each N of
``--simulations``. Issue #19's targets are for the network; these figures are reported apart. Writes
``benchmarks/results/guided_search.json`` (one entry per ``--label``) with the seconds each evaluation
took and the load average.

    .venv/bin/python benchmarks/guided_search.py RUN [--simulations 100 400] [--label NAME]
"""
from __future__ import annotations

import argparse
import os
import time

import torch

from results_file import add_smoke, apply_smoke, merge_results, smoke_run

OPPONENTS = {'mcts_100': 'bot:connect_four_mcts?num_simulations=100',
             'mcts_1000': 'bot:connect_four_mcts?num_simulations=1000'}


def measure(run_dir: str, search, games: int, seed: int) -> dict:
    from sparring.framework.evaluate_player import evaluate_player
    out = {}
    for name, ref in OPPONENTS.items():
        started, load = time.perf_counter(), os.getloadavg()[0]
        stats = evaluate_player(run_dir, [ref], games=games, seed=seed, search=search)['opponents'][ref]
        out[name] = dict(stats, seconds=round(time.perf_counter() - started, 1), load_average=round(load, 2))
        print(f'{"network alone" if search is None else f"search {search}":>14s} vs {name}: win {stats["win"]:.1%} '
              f'draw {stats["draw"]:.1%} loss {stats["loss"]:.1%} ({stats["games"]} games, '
              f'{out[name]["seconds"]} s, load {load:.2f})', flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('run', nargs='?', help='a connect-four league run directory')
    parser.add_argument('--simulations', type=int, nargs='+', default=[100, 400])
    parser.add_argument('--games', type=int, default=200)
    parser.add_argument('--seed', type=int, default=12345, help='the bots\' seeds (default: those of '
                                                                'connect_four_strength.py\'s final evaluation)')
    parser.add_argument('--label', default=None, help='default: the run directory\'s name')
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, simulations=[4], games=2)
    if args.smoke:
        from sparring.dizoo.board_games.config.connect_four_demo import config
        args.run = smoke_run(config)
    elif args.run is None:
        parser.error('expected a connect-four league run directory')
    torch.set_num_threads(1)
    load_start = os.getloadavg()
    print(f'load average at start: {load_start}')
    result = dict(run=os.path.abspath(args.run), games=args.games, load_start=load_start,
                  network=measure(args.run, None, args.games, args.seed),
                  search={str(n): measure(args.run, n, args.games, args.seed) for n in args.simulations})
    result['load_end'] = os.getloadavg()
    merge_results('guided_search', {args.label or os.path.basename(os.path.normpath(args.run)): result})


if __name__ == '__main__':
    main()
