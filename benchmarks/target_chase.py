"""A continuous game of three seats (target chase) and its team game of three teams of two: the ready league's player
against the scripted bot, before and after training.

For each seed a ready config trains for ``--env-steps`` env steps in serial mode: the free-for-all
``dizoo/target_chase/config/target_chase_league.py`` (``--configs ffa``, the default) and the team game
``dizoo/target_chase/config/target_chase_teams.py`` (``--configs teams``). Then its initial parameters (the snapshot
``naive_sp_0_h0``) and its final player each play ``--games`` games against the scripted ``target_chase_greedy``
and ``--games`` against random bots, acting as they trained (actions sampled from the Gaussian): in the
free-for-all the player holds one seat against two bots, in the team game every seat of one team (the player is
its own teammate) against two teams of bots; its seat (its team) goes round. Each line says how often the player
(its team) finished first and how often it finished ahead of a given rival seat (the payoff's pairwise reading of a
ranking). For scale, ``scripted_baseline`` seats the scripted bot (a team of them) against random bots.

Figures go to ``benchmarks/results/target_chase.json`` and ``target_chase_teams.json`` (one entry per seed),
stamped with the commit, CPU and load::

    flock /tmp/bench.lock .venv/bin/python benchmarks/target_chase.py --seeds 100 101 102
    flock /tmp/bench.lock .venv/bin/python benchmarks/target_chase.py --configs teams --seeds 100 101 102
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
from sparring.dizoo.target_chase.config.target_chase_league import config as free_for_all
from sparring.dizoo.target_chase.config.target_chase_teams import config as teams
from sparring.dizoo.target_chase.target_chase_env import observed_order
from sparring.framework import serial_pipeline
from sparring.framework.player_loader import load_player

PLAYER = 'naive_sp_0'
NUM_ENVS = 60
GAMES = {'ffa': ('target_chase', free_for_all), 'teams': ('target_chase_teams', teams)}  # record, ready config


def play(player, opponent: str, games: int, seed: int, env_cfg=None) -> dict:
    """``player`` in one team (of one seat in a free-for-all; team ``b % teams`` in env b) against bots named
    ``opponent`` in every other seat: how often its team finished first, and ahead of a rival seat (a tie counts
    half), over ``games`` games."""
    env = TargetChaseEnv(dict(env_cfg or {}), NUM_ENVS, seed)
    size, S = env.team_size, env.num_seats
    order = observed_order(S, size)  # a seat's teammates, then its rivals
    home = (np.arange(NUM_ENVS) % env.num_teams) * size  # the first seat of the player's team
    held = np.concatenate([home[:, None], order[home, :size - 1]], axis=1)  # [B, team_size]
    rivals = order[home, size - 1:]  # [B, S - team_size]
    bots = [BOT_REGISTRY.get(opponent)({}, env.observation_space, env.action_space, seed=seed + k)
            for k in range(1, S - size + 1)]
    first, ahead = [], []
    step = env.reset()
    rows = np.arange(NUM_ENVS)
    while len(first) < games:
        actions = np.zeros((NUM_ENVS, S, 2), np.float32)
        obs = step.obs[rows[:, None], held].reshape(NUM_ENVS * size, -1)
        actions[rows[:, None], held] = player.act(obs).action.reshape(NUM_ENVS, size, 2)
        for k, bot in enumerate(bots):
            actions[rows, rivals[:, k]] = bot.act(step.obs[rows, rivals[:, k]]).action
        step = env.step(actions)
        for b in np.flatnonzero(step.terminated):
            rank = step.rank[b]
            own = rank[home[b]]
            first.append(float(own == 0))
            others = rank[rivals[b]]
            ahead.append(float(np.mean(np.where(own < others, 1.0, np.where(own == others, 0.5, 0.0)))))
    env.close()
    return dict(games=games, first=round(float(np.mean(first[:games])), 4),
                ahead=round(float(np.mean(ahead[:games])), 4))


def train(ready: dict, seed: int, env_steps: int, exp_dir: str) -> dict:
    config = copy.deepcopy(ready)
    config['train'].update(max_env_steps=env_steps, max_wall_seconds=0.0, progress_bar=False, tensorboard=False)
    started = time.perf_counter()
    summary = serial_pipeline(config, seed=seed, exp_name=exp_dir)
    return dict(env_steps=summary['env_steps'], train_wall_seconds=round(time.perf_counter() - started, 1))


def measure(game: str, args) -> None:
    """Train and play one game's ready config on every seed; write its record."""
    record, ready = GAMES[game]
    env_cfg = {k: v for k, v in ready['env'].items() if k in ('seats', 'team_size')}
    who = 'the player' if game == 'ffa' else "the player's team"
    rivals = 'two {} bots' if game == 'ffa' else 'two teams of {} bots'
    scripted = BOT_REGISTRY.get('target_chase_greedy')({}, *_spaces(env_cfg), seed=0)
    baseline = play(scripted, 'random', args.games, seed=1, env_cfg=env_cfg)
    print(f'{game} scripted baseline: target_chase_greedy against {rivals.format("random")} finishes first in '
          f'{baseline["first"]:.2f} of {baseline["games"]} games')
    results = {'scripted_baseline': baseline}
    with tempfile.TemporaryDirectory(prefix='target-chase-') as workdir:
        for seed in args.seeds:
            load_before = os.getloadavg()
            exp_dir = os.path.join(workdir, f'{game}_seed_{seed}')
            entry = train(ready, seed, args.env_steps, exp_dir)
            for which, player in (('initial', load_player(exp_dir, snapshot=f'{PLAYER}_h0')),
                                  ('final', load_player(exp_dir, PLAYER))):
                entry[which] = {bot: play(player, bot, args.games, seed + 1000, env_cfg)
                                for bot in ('target_chase_greedy', 'random')}
            entry.update(load_before=[round(x, 2) for x in load_before],
                         load_after=[round(x, 2) for x in os.getloadavg()])
            for bot in ('target_chase_greedy', 'random'):
                print(f'{game} seed {seed}, {entry["env_steps"]} env steps in {entry["train_wall_seconds"]} s: '
                      f'{who} against {rivals.format(bot)}, first {entry["initial"][bot]["first"]:.2f} -> '
                      f'{entry["final"][bot]["first"]:.2f}, ahead of one {entry["initial"][bot]["ahead"]:.2f} -> '
                      f'{entry["final"][bot]["ahead"]:.2f}')
            results[f'seed_{seed}'] = entry
    merge_results(record, results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[100, 101, 102])
    parser.add_argument('--env-steps', type=int, default=200_000)
    parser.add_argument('--games', type=int, default=600)
    parser.add_argument('--configs', nargs='+', choices=sorted(GAMES), default=['ffa'],
                        help='the ready configs to train and play: ffa (three players), teams (three teams of two)')
    add_smoke(parser)
    args = apply_smoke(parser.parse_args(), seeds=[0], env_steps=1280, games=60, configs=sorted(GAMES))
    for game in args.configs:
        measure(game, args)


def _spaces(env_cfg):
    env = TargetChaseEnv(dict(env_cfg), 1, 0)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


if __name__ == '__main__':
    main()
