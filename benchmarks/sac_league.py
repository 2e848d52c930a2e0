"""SAC's leagues against the other algorithms' on the same game, seed and wall-clock budget.

``--game tictactoe`` (default): discrete SAC against DQN. Both run the ready ``tictactoe_sac_league`` config (32 envs, self-play + PFSP + the bots as sparring
partners, the same replay size, batch and updates per chunk); the DQN run swaps the policy for DQN with
the connect-four DQN league's exploration and targets. Each gets ``--seconds`` of wall time in a fresh
process with one torch thread, one after the other; the figures are the final greedy evaluation's win /
draw / loss rates against each bot (200 games each), with the env steps reached and the load average.

``--game pong``: continuous Pong duel, the ready ``pong_duel_continuous_sac_league`` against PPO's
``pong_duel_continuous_league`` (same court, league and bots), each for ``--seconds``.

    .venv/bin/python benchmarks/sac_league.py [--game tictactoe|pong] [--seconds 120] [--seed 0]

Writes ``benchmarks/results/sac_league.json`` (through ``results_file``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DQN_POLICY = dict(type='dqn', model=dict(type='q_mlp', hidden_sizes=[128, 128], dueling=True),
                  collect=dict(n_steps=16, eps_start=1.0, eps_end=0.05, eps_decay_fraction=0.3),
                  learn=dict(lr=3e-4, batch_size=128, updates_per_chunk=16, learning_starts=2_000, gamma=0.99,
                             n_step=1, double=True, target_update_every=1, target_tau=0.01),
                  replay=dict(capacity=100_000))


GAMES = dict(tictactoe=('sac', 'dqn'), pong=('sac', 'ppo'))


def _config(game: str, algo: str) -> dict:
    import copy
    if game == 'pong':
        if algo == 'sac':
            from sparring.dizoo.pong_duel.config.pong_duel_continuous_sac_league import config
        else:
            from sparring.dizoo.pong_duel.config.pong_duel_continuous_league import config
        return copy.deepcopy(config)
    from sparring.dizoo.board_games.config.tictactoe_sac_league import config
    config = copy.deepcopy(config)
    if algo == 'dqn':
        config['policy'] = copy.deepcopy(DQN_POLICY)
    return config


def child(game: str, algo: str, seconds: float, seed: int, workdir: str) -> dict:
    import torch

    from sparring.framework import serial_pipeline
    torch.set_num_threads(1)
    config = _config(game, algo)
    config['train'] = dict(config['train'], max_wall_seconds=seconds, progress_bar=False, tensorboard=False)
    config['torch_threads'] = 1
    before = os.getloadavg()
    summary = serial_pipeline(config, seed=seed, exp_name=os.path.join(workdir, f'{game}_{algo}_{seed}'))
    return dict(env_steps=summary['env_steps'], eval=summary['eval'], load_before=before, load_after=os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--game', choices=sorted(GAMES), default='tictactoe')
    parser.add_argument('--seconds', type=float, default=120.0)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--workdir', default='/tmp/sparring_sac_league')
    parser.add_argument('--child', nargs=5, metavar=('GAME', 'ALGO', 'SECONDS', 'SEED', 'DIR'))
    args = parser.parse_args()
    if args.child:
        game, algo, seconds, seed, workdir = args.child
        print(json.dumps(child(game, algo, float(seconds), int(seed), workdir)))
        return
    sys.path.insert(0, HERE)
    from results_file import merge_results
    from results_file import cpu_model
    results = dict(cpu=cpu_model(), cores=os.cpu_count(), seconds=args.seconds, seed=args.seed, started=time.time())
    for algo in GAMES[args.game]:
        out = subprocess.run([sys.executable, os.path.abspath(__file__), '--child', args.game, algo, str(args.seconds),
                              str(args.seed), args.workdir], check=True, capture_output=True, text=True, cwd=HERE)
        results[algo] = json.loads(out.stdout.strip().splitlines()[-1])
        rates = next(iter(results[algo]['eval'].values()))
        print(f'{algo}: {results[algo]["env_steps"]} env steps; ' + ', '.join(
            f'{bot} {r["win"]:.0%}/{r["draw"]:.0%}/{r["loss"]:.0%}' for bot, r in rates.items()), flush=True)
    merge_results('sac_league', {f'{args.game}_{"_vs_".join(GAMES[args.game])}': results})


if __name__ == '__main__':
    main()
