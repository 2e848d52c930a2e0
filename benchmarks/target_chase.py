"""A continuous game of three seats (target chase): the ready league's player against the scripted bot, before and
after training.

For each seed the ready config ``dizoo/target_chase/config/target_chase_league.py`` trains for ``--env-steps`` env
steps in serial mode. Then its initial parameters (the snapshot ``naive_sp_0_h0``) and its final player each play
``--games`` games against two copies of the scripted ``target_chase_greedy`` and ``--games`` against two random
bots, their seat going round, acting as they trained (actions sampled from the Gaussian). Each line says how often
the player finished first and how often it finished ahead of a given opponent (the payoff's pairwise reading of a
ranking). For scale, ``scripted_baseline`` seats the scripted bot against two random bots.

Figures go to ``benchmarks/results/target_chase.json`` (one entry per seed), stamped with the commit, CPU and load::

    flock /tmp/bench.lock .venv/bin/python benchmarks/target_chase.py --seeds 100 101 102
"""
from __future__ import annotations

import argparse
import copy
import os
import tempfile
import time

import numpy as np

from results_file import add_smoke, apply_smoke, merge_results
from sparring.config.registry import BOT_REGISTRY
from sparring.dizoo.target_chase import TargetChaseEnv
from sparring.dizoo.target_chase.config.target_chase_league import config as ready
from sparring.framework import serial_pipeline
from sparring.framework.player_loader import load_player

PLAYER = 'naive_sp_0'
NUM_ENVS = 60


def play(player, opponent: str, games: int, seed: int) -> dict:
    """``player`` in one seat (seat ``b % 3`` in env b) against two bots named ``opponent``: how often it finished
    first, and ahead of an opponent (a tie counts half), over ``games`` games."""
    env = TargetChaseEnv({}, NUM_ENVS, seed)
    bots = [BOT_REGISTRY.get(opponent)({}, env.observation_space, env.action_space, seed=seed + k) for k in (1, 2)]
    seat = np.arange(NUM_ENVS) % env.num_seats
    first, ahead = [], []
    step = env.reset()
    while len(first) < games:
        actions = np.zeros((NUM_ENVS, env.num_seats, 2), np.float32)
        rows = np.arange(NUM_ENVS)
        actions[rows, seat] = player.act(step.obs[rows, seat]).action
        for k, bot in enumerate(bots, start=1):
            other = (seat + k) % env.num_seats
            actions[rows, other] = bot.act(step.obs[rows, other]).action
        step = env.step(actions)
        for b in np.flatnonzero(step.terminated):
            rank = step.rank[b]
            own = rank[seat[b]]
            first.append(float(own == 0))
            others = np.delete(rank, seat[b])
            ahead.append(float(np.mean(np.where(own < others, 1.0, np.where(own == others, 0.5, 0.0)))))
    env.close()
    return dict(games=games, first=round(float(np.mean(first[:games])), 4),
                ahead=round(float(np.mean(ahead[:games])), 4))


def train(seed: int, env_steps: int, exp_dir: str) -> dict:
    config = copy.deepcopy(ready)
    config['train'].update(max_env_steps=env_steps, max_wall_seconds=0.0, progress_bar=False, tensorboard=False)
    started = time.perf_counter()
    summary = serial_pipeline(config, seed=seed, exp_name=exp_dir)
    return dict(env_steps=summary['env_steps'], train_wall_seconds=round(time.perf_counter() - started, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[100, 101, 102])
    parser.add_argument('--env-steps', type=int, default=200_000)
    parser.add_argument('--games', type=int, default=600)
    add_smoke(parser)
    args = apply_smoke(parser.parse_args(), seeds=[0], env_steps=1280, games=60)
    scripted = BOT_REGISTRY.get('target_chase_greedy')({}, *_spaces(), seed=0)
    baseline = play(scripted, 'random', args.games, seed=1)
    print(f'scripted baseline: target_chase_greedy against two random bots finishes first in {baseline["first"]:.2f} '
          f'of {baseline["games"]} games')
    results = {'scripted_baseline': baseline}
    with tempfile.TemporaryDirectory(prefix='target-chase-') as workdir:
        for seed in args.seeds:
            load_before = os.getloadavg()
            exp_dir = os.path.join(workdir, f'seed_{seed}')
            entry = train(seed, args.env_steps, exp_dir)
            for which, player in (('initial', load_player(exp_dir, snapshot=f'{PLAYER}_h0')),
                                  ('final', load_player(exp_dir, PLAYER))):
                entry[which] = {bot: play(player, bot, args.games, seed + 1000)
                                for bot in ('target_chase_greedy', 'random')}
            entry.update(load_before=[round(x, 2) for x in load_before],
                         load_after=[round(x, 2) for x in os.getloadavg()])
            for bot in ('target_chase_greedy', 'random'):
                print(f'seed {seed}, {entry["env_steps"]} env steps in {entry["train_wall_seconds"]} s: against two '
                      f'{bot} bots, first {entry["initial"][bot]["first"]:.2f} -> {entry["final"][bot]["first"]:.2f}, '
                      f'ahead of one {entry["initial"][bot]["ahead"]:.2f} -> {entry["final"][bot]["ahead"]:.2f}')
            results[f'seed_{seed}'] = entry
    merge_results('target_chase', results)


def _spaces():
    env = TargetChaseEnv({}, 1, 0)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


if __name__ == '__main__':
    main()
