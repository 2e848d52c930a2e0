"""Connect four: where a trained network loses to MCTS, by seat and by game length.

Plays a run's player (the network alone, greedy) against the project's UCT bot with random playouts
(``--simulations``, exploration 1.4 as ``bot:connect_four_mcts``), half the games from each seat,
and prints wins, draws and losses per seat, the length of every lost game and its moves (columns
0-6 from the first move). Short losses are tactical blunders (a threat not blocked); long ones are
lost endgames. Writes ``benchmarks/results/connect_four_seats.json`` (one entry per run directory).

    .venv/bin/python benchmarks/connect_four_seats.py RUN_DIR [--games 400] [--simulations 100] [--seed 777]
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from results_file import add_smoke, apply_smoke, merge_results, smoke_run


def play(run_dir: str, games: int, simulations: int, seed: int) -> dict:
    from sparring.dizoo.board_games.bitboard import BoardGeometry
    from sparring.dizoo.board_games.guided_search import policy_evaluator
    from sparring.dizoo.board_games.mcts import LockstepUCT
    from sparring.framework.player_loader import TrainedRun
    geometry = BoardGeometry(6, 7, 4, gravity=True)
    network = policy_evaluator(TrainedRun(run_dir).policy(seed=0), geometry)
    bot = LockstepUCT(geometry, simulations, 1.4, np.random.default_rng(seed))
    net_first = np.arange(games) % 2 == 0
    stones = [np.zeros(games, np.uint64), np.zeros(games, np.uint64)]  # by seat; seat 0 moves first
    over = np.zeros(games, bool)
    result = np.zeros(games, np.int64)  # +1: the network won
    moves = [[] for _ in range(games)]
    seat = 0
    while not over.all():
        rows = np.flatnonzero(~over)
        mover, other = stones[seat][rows], stones[1 - seat][rows]
        legal = geometry.legal_mask(mover | other)
        net_moves = net_first[rows] == (seat == 0)
        action = np.zeros(len(rows), np.int64)
        if net_moves.any():
            i = np.flatnonzero(net_moves)
            priors, _ = network(mover[i], other[i], legal[i])
            action[i] = np.where(legal[i], priors, -1.0).argmax(axis=1)
        if (~net_moves).any():
            i = np.flatnonzero(~net_moves)
            action[i] = bot.search(mover[i], other[i], legal[i])
        placed = mover | geometry.move_bits(mover | other, action)
        stones[seat][rows] = placed
        for row, a in zip(rows, action):
            moves[row].append(int(a))
        won = geometry.has_line(placed)
        result[rows[won]] = np.where(net_moves[won], 1, -1)
        over[rows[won | ((placed | other) == np.uint64(geometry.full_board))]] = True
        seat = 1 - seat
    by_seat = {}
    for name, mask in (('first', net_first), ('second', ~net_first)):
        by_seat[name] = dict(games=int(mask.sum()), win=int((result[mask] == 1).sum()),
                             draw=int((result[mask] == 0).sum()), loss=int((result[mask] == -1).sum()))
    losses = [dict(seat='first' if net_first[g] else 'second', length=len(moves[g]), moves=''.join(map(str, moves[g])))
              for g in np.flatnonzero(result == -1)]
    return dict(run=run_dir, games=games, simulations=simulations, seed=seed, by_seat=by_seat,
                losses=sorted(losses, key=lambda loss: loss['length']))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('run_dir', nargs='?')
    parser.add_argument('--games', type=int, default=400)
    parser.add_argument('--simulations', type=int, default=100)
    parser.add_argument('--seed', type=int, default=777)
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, games=2, simulations=4)
    if args.smoke:
        from sparring.dizoo.board_games.config.connect_four_demo import config
        args.run_dir = smoke_run(config)
    if args.run_dir is None or not os.path.isdir(args.run_dir):
        parser.error(f'{args.run_dir} is not a run directory; train one first, e.g. .venv/bin/sparring train '
                     f'dizoo/board_games/config/connect_four_search.py')
    report = play(args.run_dir, args.games, args.simulations, args.seed)
    for name, s in report['by_seat'].items():
        print(f'network moving {name}: win {s["win"]} draw {s["draw"]} loss {s["loss"]} of {s["games"]}')
    print('lengths of the lost games:', [loss['length'] for loss in report['losses']])
    for loss in report['losses']:
        print(f'  {loss["seat"]:>6} {loss["length"]:>2} moves: {loss["moves"]}')
    merge_results('connect_four_seats', {os.path.basename(os.path.normpath(args.run_dir)): report})


if __name__ == '__main__':
    main()
