"""Speed and strength of the board-game MCTS bots: the lockstep search against the sequential one it replaced.

* ``speed``: milliseconds per move of ``connect_four_mcts`` (and ``tictactoe_mcts``) on a batch of
  50 positions, empty boards and mid-game ones, at 100 and 1000 simulations, for the lockstep
  search and the sequential one (``SequentialUCT``, the bots' search before), the bot held to
  one search whatever the batch; one thread.
* ``parity``: the lockstep bot against the sequential one at the same simulations, seats
  alternating, its score (win 1, draw 1/2) with its standard error; and each against the heuristic
  bot, whose scores should agree.

Each section merges its entry into ``benchmarks/results/bots_speed.json`` with the load average at
its start (the machine is shared). Run it under the benchmark lock:

    flock /tmp/sparring-bench.lock .venv/bin/python benchmarks/bots_speed.py [--only speed parity] [--games 1000]
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
import torch

import sparring.dizoo  # noqa: F401  (registers the games and their bots)
from sparring.config.registry import BOT_REGISTRY
from sparring.worker.env.battle import make_battle_env
from sparring.worker.env.lockstep_match import first_game_results

from results_file import add_smoke, apply_smoke, merge_results

BATCH = 50


def bot_classes(game: str) -> dict:
    """The registered bot held to one search whatever the batch: lockstep, and sequential (the
    search the bot had before)."""
    registered = BOT_REGISTRY.get(f'{game}_mcts')
    return dict(lockstep=type(f'Lockstep{registered.__name__}', (registered,), {'lockstep_from_batch': 1}),
                sequential=type(f'Sequential{registered.__name__}', (registered,),
                                {'lockstep_from_batch': float('inf')}))


def positions(game: str, random_moves: int, seed: int = 0):
    """Observations and masks ``[BATCH, ...]`` of the seat to move after ``random_moves`` random moves
    (games that end sooner are replayed with the next seed), and the env."""
    rng = np.random.default_rng(seed)
    obs, masks = [], []
    while len(obs) < BATCH:
        env = make_battle_env(dict(type=game), 1, int(rng.integers(2 ** 31)))
        step = env.reset()
        for _ in range(random_moves):
            scores = rng.random(step.action_mask.shape) * step.action_mask
            step = env.step(np.where(step.to_move, scores.argmax(axis=2), 0))
            if step.terminated[0]:
                break
        else:
            seat = random_moves % 2
            obs.append(step.obs[0, seat])
            masks.append(step.action_mask[0, seat])
    return np.stack(obs), np.stack(masks), env


def time_moves(bots: dict, obs, mask, rounds: int = 5) -> dict:
    """Milliseconds per move (per position of the batch) of each bot, the median over ``rounds``
    batches; the bots take turns batch by batch, so a change of the machine's load hits all alike."""
    times = {name: [] for name in bots}
    for _ in range(rounds):
        for name, bot in bots.items():
            start = time.perf_counter()
            bot.act(obs, action_mask=mask)
            times[name].append(time.perf_counter() - start)
    return {name: float(np.median(t)) / len(obs) * 1e3 for name, t in times.items()}


def speed(simulation_counts=(100, 1000), rounds: int = 5) -> dict:
    out = dict(load_average=os.getloadavg(), batch=BATCH, unit='ms per move')
    for game, mid_game in (('connect_four', 10), ('tictactoe', 3)):
        classes = bot_classes(game)
        for label, moves in (('empty', 0), ('mid_game', mid_game)):
            obs, mask, env = positions(game, moves)
            for simulations in simulation_counts:
                bots = {name: cls({'num_simulations': simulations}, env.observation_space, env.action_space, seed=0)
                        for name, cls in classes.items()}
                row = {name: round(ms, 3) for name, ms in time_moves(bots, obs, mask, rounds).items()}
                row['speedup'] = round(row['sequential'] / row['lockstep'], 1)
                row['load_average'] = round(os.getloadavg()[0], 2)
                out[f'{game}/{label}/{simulations}'] = row
                print(f'{game:12s} {label:8s} {simulations:5d} simulations: lockstep {row["lockstep"]:7.2f} ms/move, '
                      f'sequential {row["sequential"]:7.2f} ms/move, x{row["speedup"]} (load {row["load_average"]})',
                      flush=True)
    return out


def play(game: str, bots, num_games: int, seed: int) -> np.ndarray:
    """Seat 0's results (+1/0/-1) of ``num_games`` games between two bot instances, all in lockstep."""
    return first_game_results(make_battle_env(dict(type=game), num_games, seed), bots)


def score(game: str, first: tuple, second: tuple, num_games: int, seed: int) -> dict:
    """``first``'s score against ``second`` over ``num_games`` games, half of them from each seat.

    ``first`` and ``second`` are ``(bot class, config)``."""
    env = make_battle_env(dict(type=game), 1, 0)

    def build(spec, bot_seed):
        cls, cfg = spec
        return cls(cfg, env.observation_space, env.action_space, seed=bot_seed)

    half = num_games // 2
    as_first = play(game, [build(first, seed), build(second, seed + 1)], half, seed)
    as_second = -play(game, [build(second, seed + 2), build(first, seed + 3)], half, seed + 4)
    results = np.concatenate([as_first, as_second])
    points = (results + 1) / 2.0
    return dict(games=len(results), score=round(float(points.mean()), 4),
                standard_error=round(float(points.std(ddof=1) / np.sqrt(len(points))), 4),
                wins=int((results == 1).sum()), draws=int((results == 0).sum()), losses=int((results == -1).sum()),
                score_as_first=round(float((as_first + 1).mean() / 2), 4),
                score_as_second=round(float((as_second + 1).mean() / 2), 4))


def parity(num_games: int, simulations: int = 100) -> dict:
    out = dict(load_average=os.getloadavg())
    for game in ('connect_four', 'tictactoe'):
        classes = bot_classes(game)
        cfg = {'num_simulations': simulations}
        heuristic = (BOT_REGISTRY.get(f'{game}_heuristic'), {})
        start = time.perf_counter()
        rows = {
            'lockstep_vs_sequential': score(game, (classes['lockstep'], cfg), (classes['sequential'], cfg),
                                            num_games, seed=11),
            'lockstep_vs_heuristic': score(game, (classes['lockstep'], cfg), heuristic, num_games, seed=21),
            'sequential_vs_heuristic': score(game, (classes['sequential'], cfg), heuristic, num_games, seed=31),
        }
        rows['seconds'] = round(time.perf_counter() - start, 1)
        out[f'{game}/{simulations}'] = rows
        for name, row in rows.items():
            if isinstance(row, dict):
                print(f'{game:12s} {simulations:4d} simulations, {name:24s}: score {row["score"]:.3f} '
                      f'+- {row["standard_error"]:.3f} over {row["games"]} games (W/D/L {row["wins"]}/{row["draws"]}/'
                      f'{row["losses"]})', flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--only', nargs='+', choices=('speed', 'parity'), default=('speed', 'parity'))
    parser.add_argument('--games', type=int, default=1000, help='games per pairing in the parity section')
    parser.add_argument('--simulations', type=int, nargs='+', default=[100, 1000],
                        help='simulations per move of the bots the speed section times')
    parser.add_argument('--rounds', type=int, default=5, help='batches timed per bot (the median is kept)')
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, games=4, simulations=[4], rounds=1)
    torch.set_num_threads(1)
    machine = dict(python=platform.python_version(), numpy=np.__version__, cpus=os.cpu_count(),
                   load_average_at_start=os.getloadavg())
    print(f'load average at start: {machine["load_average_at_start"]}')
    results = {'machine': machine}
    if 'speed' in args.only:
        results['speed'] = speed(args.simulations, args.rounds)
    if 'parity' in args.only:
        results['parity'] = parity(args.games, 4 if args.smoke else 100)
    merge_results('bots_speed', results)


if __name__ == '__main__':
    main()
