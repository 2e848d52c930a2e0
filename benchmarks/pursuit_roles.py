"""An asymmetric league (pursuit and evasion): each role's win rate against the other role's scripted bot over
training, and exploiters trained against each role's initial and final players.

For each seed the ready config ``dizoo/pursuit/config/pursuit_league.py`` trains for ``--env-steps`` env steps
in serial mode, evaluating every ``--eval-every-iters`` rounds: the pursuer against ``pursuit_flee`` (and the
random evader), the evader against ``pursuit_chase`` (and the random pursuer), ``--eval-games`` games each; the
curve starts with each role's initial parameters (its snapshot ``_h0``) against the same bot.
Then, with ``--exploit-steps`` > 0, a fresh exploiter of the other role (``sparring exploit``) trains for that
many env steps against each role's final player and against its initial parameters (the snapshot ``_h0``);
an exploiter that gains less against the final player than against the initial one says the role learnt
something an opponent cannot simply undo.

For scale, ``scripted_baseline`` plays the two scripted bots against each other (``--baseline-games`` games, on
the evaluation's bot settings): how often each role's bot wins against the other role's, the figure a learnt
role's win rate against that same bot can be set beside. ``--baseline-only`` measures just that.

Figures go to ``benchmarks/results/pursuit_roles.json`` (one entry per seed), stamped with the commit, CPU
and load::

    flock /tmp/bench.lock .venv/bin/python benchmarks/pursuit_roles.py --seeds 100 101
"""
from __future__ import annotations

import argparse
import copy
import os
import tempfile
import time

import numpy as np

from results_file import add_smoke, apply_smoke, merge_results
from sparring.config.compile import compile_config
from sparring.config.registry import BOT_REGISTRY, ENV_REGISTRY
from sparring.dizoo.pursuit.config.pursuit_league import config as pursuit_config
from sparring.framework import serial_pipeline
from sparring.framework.evaluate_player import evaluate_player
from sparring.framework.exploit import exploit_player

# role -> (its player, the other role's scripted bot it is measured against)
ROLES = {'pursuer': ('naive_sp_pursuer_0', 'pursuit_flee'), 'evader': ('naive_sp_evader_0', 'pursuit_chase')}


def train(seed: int, env_steps: int, eval_every: int, eval_games: int, exp_dir: str) -> dict:
    config = copy.deepcopy(pursuit_config)
    config['env'].update(n_evaluator_episodes=eval_games)
    config['train'].update(max_env_steps=env_steps, max_wall_seconds=0.0, eval_every_iters=eval_every,
                           progress_bar=False, tensorboard=False)
    started = time.perf_counter()
    summary = serial_pipeline(config, seed=seed, exp_name=exp_dir)
    wall = time.perf_counter() - started
    points = list(summary.get('history', []))
    if not points or points[-1]['env_steps'] != summary['env_steps']:  # the final evaluation, unless it was the last
        points.append(dict(env_steps=summary['env_steps'], eval=summary['eval']))
    curves = {}
    for role, (pid, bot) in ROLES.items():
        # Where it started: its initial parameters (the snapshot _h0), sampling as the league's evaluations do.
        start = evaluate_player(exp_dir, [f'bot:{bot}'], snapshot=f'{pid}_h0', games=eval_games, sampled=True)
        curves[role] = [dict(env_steps=0, win=start['opponents'][f'bot:{bot}']['win'])] + [
            dict(env_steps=int(p['env_steps']), win=p['eval'][pid][bot]['win']) for p in points if pid in p['eval']]
    return dict(env_steps=summary['env_steps'], train_wall_seconds=round(wall, 1), curves=curves)


def scripted_baseline(games: int, seed: int, num_envs: int = 64) -> dict:
    """The scripted bots against each other: each role's bot's win rate against the other role's (a game has a
    winner, so the two add up to 1), on the ready config's env with each bot's default settings."""
    env_cfg = compile_config(copy.deepcopy(pursuit_config), seed=seed).env
    env = ENV_REGISTRY.get('pursuit')(env_cfg, num_envs, seed)
    # Seat 0 is the pursuer's: the bot the evader is measured against; seat 1 the evader's, the pursuer's opponent.
    names = (ROLES['evader'][1], ROLES['pursuer'][1])
    bots = [BOT_REGISTRY.get(name)(BOT_REGISTRY.get(name).default_config(), env.observation_spaces[seat],
                                   env.action_spaces[seat], seed=seed + seat) for seat, name in enumerate(names)]
    step, pursuer_wins = env.reset(), []
    try:
        while len(pursuer_wins) < games:
            step = env.step([bot.act(step.seat_obs(seat)).action for seat, bot in enumerate(bots)])
            ended = step.terminated | step.truncated
            pursuer_wins += (step.result[ended, 0] > 0).tolist()
    finally:
        env.close()
    pursuer = float(np.mean(pursuer_wins[:games]))
    return dict(games=games, pursuer_bot=names[0], evader_bot=names[1],
                pursuer_bot_win=pursuer, evader_bot_win=1.0 - pursuer)


def exploit(exp_dir: str, budget: int, eval_games: int, seed: int) -> dict:
    """Per role: the exploiter's final win rate and mean return against the role's final and initial player."""
    out = {}
    for role, (pid, _) in ROLES.items():
        figures = {}
        for which, kwargs in (('final', dict(player=pid)), ('initial', dict(snapshot=f'{pid}_h0'))):
            report = exploit_player(exp_dir, budget, seed=seed, eval_games=eval_games, **kwargs)
            final = report['final']
            figures[which] = dict(win=final['win'], mean_return=final['mean_return'], env_steps=report['env_steps'])
        figures['gain_less_against_final'] = figures['final']['win'] < figures['initial']['win'] or (
            figures['final']['win'] == figures['initial']['win']
            and figures['final']['mean_return'] < figures['initial']['mean_return'])
        out[role] = figures
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[100])
    parser.add_argument('--env-steps', type=int, default=300_000)
    parser.add_argument('--eval-every-iters', type=int, default=20)
    parser.add_argument('--eval-games', type=int, default=64)
    parser.add_argument('--exploit-steps', type=int, default=60_000)
    parser.add_argument('--baseline-games', type=int, default=2000)
    parser.add_argument('--baseline-only', action='store_true', help='only the scripted bots against each other')
    add_smoke(parser)
    args = apply_smoke(parser.parse_args(), seeds=[0], env_steps=2048, eval_every_iters=1, eval_games=4,
                       exploit_steps=512, baseline_games=16)
    load_before = os.getloadavg()
    baseline = scripted_baseline(args.baseline_games, args.seeds[0])
    print(f'scripted bots, {baseline["games"]} games: pursuit_chase (pursuer) wins {baseline["pursuer_bot_win"]:.2f} '
          f'against pursuit_flee (evader), which wins {baseline["evader_bot_win"]:.2f}')
    results = {'scripted_baseline': baseline}
    if args.baseline_only:
        merge_results('pursuit_roles', results)
        return
    with tempfile.TemporaryDirectory(prefix='pursuit-roles-') as workdir:
        for seed in args.seeds:
            exp_dir = os.path.join(workdir, f'seed_{seed}')
            entry = train(seed, args.env_steps, args.eval_every_iters, args.eval_games, exp_dir)
            for role, curve in entry['curves'].items():
                shown = ', '.join(f'{p["env_steps"] // 1000}k: {p["win"]:.2f}' for p in curve)
                print(f'seed {seed} {role} vs {ROLES[role][1]}: {shown}')
            if args.exploit_steps > 0:
                entry['exploiters'] = exploit(exp_dir, args.exploit_steps, args.eval_games, seed)
                for role, figures in entry['exploiters'].items():
                    print(f'seed {seed} exploiter of the {role}: win {figures["initial"]["win"]:.2f} against the '
                          f'initial player, {figures["final"]["win"]:.2f} against the final one '
                          f'(mean return {figures["initial"]["mean_return"]:+.3f} / '
                          f'{figures["final"]["mean_return"]:+.3f})')
            entry.update(load_before=[round(x, 2) for x in load_before],
                         load_after=[round(x, 2) for x in os.getloadavg()], exploit_steps=args.exploit_steps,
                         eval_games=args.eval_games)
            results[f'seed_{seed}'] = entry
    merge_results('pursuit_roles', results)


if __name__ == '__main__':
    main()
