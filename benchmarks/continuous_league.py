"""A PPO league on continuous Pong duel (paddle velocities in [-1, 1]) beside the discrete one, at one env-step budget.

For each seed, each variant trains its ready config (``dizoo/pong_duel/config/pong_duel_continuous_league.py``,
and ``pong_duel_league.py`` for ``discrete``) for ``--steps`` env steps, with no evaluation during training;
then its player plays ``--games`` games against each bot (the random bot and the tracker) on the fixed
evaluation seeds of ``league_eval.py``, sampling its actions as it does in the league. Both variants share
the court, the speeds and the bots' rules (velocity 1 moves as far as "up"), so the win rates compare;
``discrete_8_epochs`` is the discrete league with the continuous config's 8 PPO epochs per chunk.

Reported per seed: win/draw/loss and score against each bot with the binomial standard error of the win
rate, env steps and training wall seconds; per variant: the mean win rate over the seeds with the standard
error over the seeds. Also the CPU model and the load average before and after (the machine is shared).
Seeds 0 and 1 were used to choose the continuous config; report on others (100-102). Results are merged into
``benchmarks/results/continuous_league.json`` under ``--label``::

    flock /tmp/sparring-bench.lock .venv/bin/python benchmarks/continuous_league.py --seeds 100 101 102
"""
from __future__ import annotations

import argparse
import copy
import math
import os
import tempfile
import time

from league_eval import evaluate_checkpoint, outcome_text, save_results, start_results
from results_file import add_smoke, apply_smoke
from sparring.dizoo.pong_duel.config.pong_duel_continuous_league import config as continuous_config
from sparring.dizoo.pong_duel.config.pong_duel_league import config as discrete_config
from sparring.framework import serial_pipeline

PLAYER = 'naive_sp_0'
OPPONENTS = ('random', 'pong_duel_heuristic')
VARIANTS = dict(continuous=continuous_config, discrete=discrete_config)
# The discrete league with the continuous config's 8 epochs per chunk: tells the action space from that choice.
VARIANTS['discrete_8_epochs'] = copy.deepcopy(discrete_config)
VARIANTS['discrete_8_epochs']['policy']['learn']['epochs'] = continuous_config['policy']['learn']['epochs']


def win_standard_error(summary: dict) -> float:
    """The binomial standard error of a win rate over ``games`` games."""
    p, n = summary['win'], summary['games']
    return math.sqrt(p * (1.0 - p) / n)


def train_and_evaluate(variant: str, seed: int, steps: int, games: int, workdir: str) -> dict:
    config = copy.deepcopy(VARIANTS[variant])
    config['train'].update(max_env_steps=steps, max_wall_seconds=0.0, eval_every_iters=0, progress_bar=False,
                           tensorboard=False)
    exp_dir = os.path.join(workdir, f'{variant}_{seed}')
    started = time.perf_counter()
    summary = serial_pipeline(config, seed=seed, exp_name=exp_dir)
    wall = time.perf_counter() - started
    report = evaluate_checkpoint(exp_dir, PLAYER, OPPONENTS, games)
    for bot, outcome in report.items():
        outcome['win_standard_error'] = win_standard_error(outcome)
        print(f'{variant} seed {seed} vs {bot}: {outcome_text(outcome)} (+- {outcome["win_standard_error"]:.3f})')
    return dict(env_steps=summary['env_steps'], train_wall_seconds=wall,
                env_steps_per_second=summary['env_steps'] / wall, against=report)


def over_seeds(runs: dict) -> dict:
    """Per bot: the mean win rate and score over the seeds, and the standard error of the mean win rate."""
    out = {}
    for bot in OPPONENTS:
        wins = [run['against'][bot]['win'] for run in runs.values()]
        scores = [run['against'][bot]['score'] for run in runs.values()]
        mean = sum(wins) / len(wins)
        spread = math.sqrt(sum((w - mean) ** 2 for w in wins) / (len(wins) - 1)) if len(wins) > 1 else float('nan')
        out[bot] = dict(win_mean=mean, win_standard_error_over_seeds=spread / math.sqrt(len(wins)),
                        score_mean=sum(scores) / len(scores), seeds=len(wins))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--steps', type=int, default=48 * 2048, help='env steps per league run')
    parser.add_argument('--seeds', type=int, nargs='+', default=[100, 101, 102])
    parser.add_argument('--variants', nargs='+', choices=sorted(VARIANTS), default=['continuous', 'discrete'])
    parser.add_argument('--games', type=int, default=400, help='evaluation games against each bot')
    parser.add_argument('--label', default='report', help='the key the results go under in the JSON file')
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, steps=2048, seeds=[100], games=4)
    results = start_results(args)
    results['variants'] = {}
    with tempfile.TemporaryDirectory() as workdir:
        for variant in args.variants:
            runs = {str(seed): train_and_evaluate(variant, seed, args.steps, args.games, workdir)
                    for seed in args.seeds}
            results['variants'][variant] = dict(seeds=runs, over_seeds=over_seeds(runs))
    results['load_average_after'] = os.getloadavg()
    for variant, entry in results['variants'].items():
        for bot, figures in entry['over_seeds'].items():
            print(f'{variant} vs {bot}: win {figures["win_mean"]:.3f} +- {figures["win_standard_error_over_seeds"]:.3f} '
                  f'over {figures["seeds"]} seeds')
    save_results('continuous_league', {args.label: results})


if __name__ == '__main__':
    main()
