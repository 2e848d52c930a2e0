"""DQN benchmark: CartPole-v1 time-to-475, and DQN leagues on Pong duel and connect four against the random bot.

CartPole-v1 (``dizoo/classic_control/config/cartpole_dqn.py``): env steps and wall seconds until
the evaluation mean (8 greedy episodes) reaches 475, per seed. Leagues (``--leagues``, each its
ready config): the league's player after its budget, its win/draw/loss rates in 400 greedy games
with the seats alternating against the random bot (the target is >= 95 % wins on one battle
game) and the game's other bots, and the periodic evaluations against env steps: ``pong_duel``
(``dizoo/pong_duel/config/pong_duel_dqn_league.py``) and ``connect_four``
(``dizoo/board_games/config/connect_four_dqn_league.py``). Prints the figures and writes
``benchmarks/results/dqn.json``.

    .venv/bin/python benchmarks/dqn.py [--seeds 0 1 2] [--only cartpole|league] [--leagues pong_duel connect_four]
                                       [--league-seconds 1500]
"""
from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import tempfile
import time

import torch

from sparring.dizoo.board_games.config.connect_four_dqn_league import config as connect_four_config
from sparring.dizoo.classic_control.config.cartpole_dqn import config as cartpole_config
from sparring.dizoo.pong_duel.config.pong_duel_dqn_league import config as pong_duel_config
from sparring.framework import serial_pipeline

from results_file import add_smoke, apply_smoke, merge_results, smoke_config

TARGET_WIN_RATE = 0.95
LEAGUES = dict(pong_duel=pong_duel_config, connect_four=connect_four_config)


def quiet(config: dict) -> dict:
    config = copy.deepcopy(config)
    config['train'] = dict(config.get('train', {}), progress_bar=False, tensorboard=False)
    return config


SMOKE = False  # --smoke: every run cut to a few hundred env steps


def run_cartpole(seed: int, workdir: str) -> dict:
    config = smoke_config(quiet(cartpole_config)) if SMOKE else quiet(cartpole_config)
    summary = serial_pipeline(config, seed=seed, exp_name=os.path.join(workdir, f'cartpole_{seed}'))
    return {k: summary[k] for k in ('env_steps', 'wall_seconds', 'eval_mean', 'eval_std', 'reached_stop_value',
                                    'stop_env_steps', 'stop_seconds', 'collect_steps_per_second')}


def run_league(game: str, seed: int, workdir: str, seconds: float = None) -> dict:
    config = quiet(LEAGUES[game])
    if seconds is not None:
        config['train']['max_wall_seconds'] = seconds
    config['env']['n_evaluator_episodes'] = 400
    if SMOKE:
        config = smoke_config(config)
    summary = serial_pipeline(config, seed=seed, exp_name=os.path.join(workdir, f'league_{game}_{seed}'))
    player, per_opponent = next(iter(summary['eval'].items()))
    curve = [dict(env_steps=h['env_steps'], seconds=h['seconds'],
                  win={oid: round(s['win'], 3) for oid, s in h['eval'][player].items()}) for h in summary['history']]
    return dict(player=player, env_steps=summary['env_steps'], rounds=summary['rounds'],
                wall_seconds=summary['wall_seconds'], eval=per_opponent, curve=curve,
                win_rate_vs_random=per_opponent['random']['win'],
                beats_random_95=per_opponent['random']['win'] >= TARGET_WIN_RATE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2], help='CartPole seeds')
    parser.add_argument('--league-seed', type=int, default=0)
    parser.add_argument('--leagues', nargs='+', choices=list(LEAGUES), default=list(LEAGUES))
    parser.add_argument('--league-seconds', type=float, default=None,
                        help='wall-time budget of each league run (default: its config\'s)')
    parser.add_argument('--only', choices=['cartpole', 'league'], default=None)
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, seeds=[0])
    global SMOKE
    SMOKE = args.smoke
    torch.set_num_threads(1)
    results = dict(machine=dict(cpus=os.cpu_count(), python=platform.python_version(), torch=torch.__version__,
                                load_average_at_start=[round(x, 2) for x in os.getloadavg()]),
                   started=time.strftime('%Y-%m-%d %H:%M:%S'))
    with tempfile.TemporaryDirectory() as workdir:
        if args.only in (None, 'cartpole'):
            runs = {seed: run_cartpole(seed, workdir) for seed in args.seeds}
            solved = [r for r in runs.values() if r['reached_stop_value']]
            results['cartpole'] = dict(
                per_seed=runs, solved_seeds=len(solved), seeds=len(runs),
                median_seconds_to_475=statistics.median(r['stop_seconds'] for r in solved) if solved else None,
                median_env_steps_to_475=statistics.median(r['stop_env_steps'] for r in solved) if solved else None)
            for seed, r in runs.items():
                print(f'CartPole-v1 DQN seed {seed}: reached 475={r["reached_stop_value"]} '
                      f'steps={r["stop_env_steps"]} seconds={r["stop_seconds"] and round(r["stop_seconds"], 1)} '
                      f'final eval={r["eval_mean"]:.1f}')
            print(f'CartPole-v1 DQN: {len(solved)}/{len(runs)} seeds reached 475; median '
                  f'{results["cartpole"]["median_env_steps_to_475"]} env steps, '
                  f'{results["cartpole"]["median_seconds_to_475"]} s')
        if args.only in (None, 'league'):
            for game in args.leagues:
                r = run_league(game, args.league_seed, workdir, args.league_seconds)
                results[f'{game}_league'] = r
                print(f'{game} DQN league ({r["player"]}, {r["env_steps"]} env steps, {r["wall_seconds"]:.0f} s): '
                      + ', '.join(f'vs {oid}: win {s["win"]:.1%} draw {s["draw"]:.1%} loss {s["loss"]:.1%} '
                                  f'({s["games"]} games)' for oid, s in r['eval'].items()))
    results['load_average_at_end'] = [round(x, 2) for x in os.getloadavg()]
    merge_results('dqn', results)  # --only keeps the other part's last figures


if __name__ == '__main__':
    main()
