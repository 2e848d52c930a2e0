"""A team league: 2v2 Team Pong, each team one shared PPO policy told which paddle it moves.

Trains ``dizoo/team_pong/config/team_pong_league.py`` (naive self-play league) for ``--steps``
env steps (or ``--seconds``), then plays the final player against the random team and the
lane-tracking team, ``--games`` games each on fixed seeds. Prints the results and writes
``benchmarks/results/team_league.json``.

    .venv/bin/python benchmarks/team_league.py [--steps 491520] [--seconds 1200] [--games 400]
"""
from __future__ import annotations

import argparse
import copy
import os
import tempfile
import time

from league_eval import evaluate_checkpoint, outcome_text, save_results, start_results
from results_file import add_smoke, apply_smoke
from sparring.config import load_config
from sparring.dizoo.team_pong.config.team_pong_league import config as team_config
from sparring.framework import serial_pipeline
from sparring.framework.horizon import horizon_line

OPPONENTS = ('random', 'team_pong_heuristic')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--steps', type=int, default=240 * 2048)
    parser.add_argument('--seconds', type=float, default=1200.0, help='wall-time budget of the training run')
    parser.add_argument('--games', type=int, default=400)
    parser.add_argument('--seed', type=int, default=0)
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, steps=2048, seconds=20.0, games=4)
    results = start_results(args)
    config = copy.deepcopy(team_config)
    config['train'].update(max_env_steps=args.steps, max_wall_seconds=args.seconds, progress_bar=False,
                           tensorboard=False)
    with tempfile.TemporaryDirectory() as workdir:
        exp_dir = os.path.join(workdir, 'team_pong')
        started = time.perf_counter()
        summary = serial_pipeline(config, seed=args.seed, exp_name=exp_dir)
        results['train_seconds'] = time.perf_counter() - started
        results['env_steps'] = summary['env_steps']
        results['horizon'] = horizon_line(load_config(exp_dir))
        results['eval'] = evaluate_checkpoint(exp_dir, 'naive_sp_0', OPPONENTS, args.games)
        results['league_table'] = summary['league_table']
    results['beats_random_team_95'] = results['eval']['random']['win'] >= 0.95
    for opponent, r in results['eval'].items():
        print(f'shared policy vs {opponent} team: {outcome_text(r)} ({r["games"]} games)')
    print(f'{results["env_steps"]} env steps in {results["train_seconds"]:.0f} s '
          f'(load average at start {results["machine"]["load_average"]}); {results["horizon"]}')
    save_results('team_league', results)


if __name__ == '__main__':
    main()
