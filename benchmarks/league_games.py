"""League benchmarks on the battle games: speed, distance to Nash, exploitability and strength against bots.

Sections (``--only`` picks some; each merges its entry into ``benchmarks/results/league_games.json``):

* ``throughput``: self-play env steps per second for every game, collection alone and whole
  league rounds (collect + PPO update), one process, one torch thread.
* ``matrix``: the PSRO-style league on the 2x2 zero-sum game and on rock-paper-scissors, scored
  exactly: the population's Nash meta-strategy against the known equilibrium; for
  rock-paper-scissors also the final player's exploitability against a naive self-play run of
  the same budget.
* ``poker``: PSRO with PPO best responses on Kuhn poker (10 minutes) and Leduc poker, the exact
  exploitability of the population's meta-strategy against wall time.
* ``connect_four``: the connect-four league for 30 minutes, win rates against the random and
  heuristic bots and MCTS-100 against wall time; at the end (``sparring eval``'s function on the run's
  final player) 1000 greedy games against random, 200 against MCTS-100 and 50 against MCTS-1000, and
  1000 sampled games against the heuristic bot.

    .venv/bin/python benchmarks/league_games.py [--only throughput matrix poker connect_four] [--minutes-scale 1.0]
"""
from __future__ import annotations

import argparse
import copy
import os
import platform
import tempfile
import time

import torch

from sparring.dizoo.board_games.config.connect_four_league import config as connect_four_config
from sparring.dizoo.matrix_games.config.rock_paper_scissors_league import config as rps_config
from sparring.dizoo.matrix_games.config.zero_sum_2x2_league import config as zero_sum_config
from sparring.dizoo.openspiel.config.kuhn_poker_psro import config as kuhn_config
from sparring.framework import serial_pipeline
from sparring.framework.evaluate_player import evaluate_player
from sparring.framework.run_setup import complete_league_config
from sparring.framework.run_setup import prepare_config
from sparring.framework.serial_run import SerialRun

from results_file import add_smoke, apply_smoke, merge_results, print_exploitability_curve

QUIET = dict(progress_bar=False, tensorboard=False)


def _with(config: dict, workdir: str, name: str, **sections) -> dict:
    """A copy of ``config`` in ``workdir/name`` with each section updated by ``sections``."""
    config = copy.deepcopy(config)
    config['exp_name'] = os.path.join(workdir, name)
    for key, values in sections.items():
        config[key] = dict(config.get(key, {}), **values)
    config['train'] = dict(config.get('train', {}), **QUIET)
    return config


# ------------------------------------------------------------------------------------ throughput
THROUGHPUT_GAMES = [
    ('zero_sum_2x2', {}), ('rock_paper_scissors', {}), ('prisoners_dilemma', {}), ('tictactoe', {}),
    ('connect_four', {}), ('pong_duel', {}), ('openspiel', dict(game='kuhn_poker')),
    ('openspiel', dict(game='leduc_poker')),
]


def throughput(workdir: str, seconds: float) -> dict:
    out = {}
    for env_type, options in THROUGHPUT_GAMES:
        name = options.get('game', env_type)
        config = dict(exp_name=os.path.join(workdir, f'speed_{name}'), seed=0,
                      env=dict(type=env_type, collector_env_num=64, **options),
                      policy=dict(type='ppo', model=dict(hidden_sizes=[64, 64]), collect=dict(n_steps=32)),
                      league=dict(type='one_vs_one'), train=dict(eval_every_iters=0, **QUIET))
        cfg = prepare_config(config)
        complete_league_config(cfg)
        run = SerialRun(cfg)
        collector = run.collectors[run.player_ids[0]]
        collector.collect()  # warm-up
        steps, started = collector.env_steps, time.perf_counter()
        while time.perf_counter() - started < seconds:
            collector.collect()
        collect_sps = (collector.env_steps - steps) / (time.perf_counter() - started)
        steps, started = run.env_steps, time.perf_counter()
        while time.perf_counter() - started < seconds:
            run.train_round()
        round_sps = (run.env_steps - steps) / (time.perf_counter() - started)
        run.close()
        out[name] = dict(collect_env_steps_per_second=round(collect_sps), league_env_steps_per_second=round(round_sps))
        print(f'{name:22s} collect {collect_sps:10,.0f} steps/s   collect+learn {round_sps:9,.0f} steps/s')
    return out


# ------------------------------------------------------------------------------------ matrix games
def matrix(workdir: str, scale: float) -> dict:
    out = {}
    budget = int(150_000 * scale)
    summary = serial_pipeline(_with(zero_sum_config, workdir, 'zero_sum_2x2', train=dict(max_env_steps=budget)))
    out['zero_sum_2x2'] = _matrix_entry(summary, target=[0.375, 0.625])
    # Rock-paper-scissors: the league (its config as shipped: best responses to the Nash mixture of
    # the snapshots) against naive self-play, where the player only ever meets its current self.
    # Same budget, same PPO settings.
    naive = dict(type='one_vs_one', players=dict(naive_sp=dict(branch_probs=dict(sp=1.0), mutate_prob=0.0)))
    for arm, league in (('league', {}), ('naive_self_play', naive)):
        config = _with(rps_config, workdir, f'rps_{arm}', train=dict(max_env_steps=budget), league=league)
        out[f'rock_paper_scissors_{arm}'] = _matrix_entry(serial_pipeline(config), target=[1 / 3] * 3)
    for name, entry in out.items():
        print(f'{name:34s} meta-strategy {entry["meta_strategy_seat_0"]} (distance {entry["meta_distance_to_nash"]:.4f})'
              f'  final player exploitability {entry["final_player_exploitability"]:.4f}')
    return out


def _matrix_entry(summary: dict, target) -> dict:
    exact = summary['exact']
    return dict(target=target, env_steps=summary['env_steps'], wall_seconds=round(summary['wall_seconds'], 1),
                meta_strategy_seat_0=[round(p, 4) for p in exact['meta_strategy_actions'][0]],
                meta_strategy_seat_1=[round(p, 4) for p in exact['meta_strategy_actions'][1]],
                meta_distance_to_nash=exact['meta_distance_to_nash'],
                meta_exploitability=exact['meta_exploitability'],
                final_player_exploitability=next(iter(exact['exploitability'].values())),
                final_player_distance_to_nash=next(iter(exact['distance_to_nash'].values())))


# ------------------------------------------------------------------------------------ poker
def poker(workdir: str, scale: float) -> dict:
    out = {}
    for game, minutes in (('kuhn_poker', 10.0), ('leduc_poker', 10.0)):
        config = _with(kuhn_config, workdir, game, env=dict(game=game),
                       train=dict(max_wall_seconds=60.0 * minutes * scale, eval_every_iters=20))
        summary = serial_pipeline(config)
        curve = [dict(seconds=h['seconds'], env_steps=h['env_steps'],
                      meta_exploitability=round(h['exact']['meta_exploitability'], 5),
                      player_exploitability=round(next(iter(h['exact']['exploitability'].values())), 5))
                 for h in summary['history']]
        if not curve:  # a run shorter than one evaluation interval (--smoke): its final analysis is the one point
            curve = [dict(seconds=round(summary['wall_seconds'], 1), env_steps=summary['env_steps'],
                          meta_exploitability=round(summary['exact']['meta_exploitability'], 5),
                          player_exploitability=round(next(iter(summary['exact']['exploitability'].values())), 5))]
        best = min(curve, key=lambda c: c['meta_exploitability'])
        under = [c for c in curve if c['meta_exploitability'] <= 0.05]
        out[game] = dict(wall_seconds=round(summary['wall_seconds'], 1), env_steps=summary['env_steps'],
                         final_meta_exploitability=summary['exact']['meta_exploitability'],
                         best_meta_exploitability=best['meta_exploitability'],
                         first_at_most_0_05=under[0] if under else None, curve=curve)
        print(f'{game}: meta-strategy exploitability {summary["exact"]["meta_exploitability"]:.4f} after '
              f'{summary["wall_seconds"]:.0f} s / {summary["env_steps"]:,} env steps (best {best["meta_exploitability"]:.4f}); '
              f'<= 0.05 first at {under[0]["seconds"] if under else "never"} s')
        print_exploitability_curve(curve, 12)
    return out


# ------------------------------------------------------------------------------------ connect four
MCTS = 'bot:connect_four_mcts?num_simulations={}'


def connect_four(workdir: str, scale: float) -> dict:
    config = _with(connect_four_config, workdir, 'connect_four',
                   train=dict(max_wall_seconds=1800.0 * scale, checkpoint_every_iters=100))
    summary = serial_pipeline(config)
    curve = [dict(seconds=h['seconds'], env_steps=h['env_steps'],
                  win={oid: round(s['win'], 3) for oid, s in next(iter(h['eval'].values())).items()})
             for h in summary['history']]
    # The final player against MCTS of 1000 simulations (dear: about a second a game), through `sparring eval`'s
    # function: the run's newest checkpoint, the league's evaluation seeds.
    final = {}
    # Greedy play against the random bot once more over 1000 games, where the 98 % target needs a
    # tighter figure than the periodic 200 games give (their standard error is about 1 point).
    for name, ref, games in (('random_1000', 'bot:random', 1000), ('mcts_100', MCTS.format(100), 200),
                             ('mcts_1000', MCTS.format(1000), 50)):
        final[name] = evaluate_player(config['exp_name'], [ref], games=games)['opponents'][ref]
    # Greedy play against the heuristic bot (itself nearly deterministic) repeats the same couple of
    # games, so its rate moves in steps of 50 %; sampled play gives a figure over many games.
    heuristic = 'bot:connect_four_heuristic'
    final['heuristic_sampled'] = evaluate_player(config['exp_name'], [heuristic], games=1000,
                                                 sampled=True)['opponents'][heuristic]
    final.update({oid: s for oid, s in next(iter(summary['eval'].values())).items()})
    print(f'connect four after {summary["wall_seconds"]:.0f} s, {summary["env_steps"]:,} env steps:')
    for oid, s in final.items():
        print(f'    vs {oid:45s} win {s["win"]:.1%}  draw {s["draw"]:.1%}  loss {s["loss"]:.1%}  ({s["games"]} games)')
    return dict(wall_seconds=round(summary['wall_seconds'], 1), env_steps=summary['env_steps'], final=final,
                curve=curve)


SECTIONS = dict(throughput=None, matrix=matrix, poker=poker, connect_four=connect_four)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--only', nargs='+', choices=list(SECTIONS), default=list(SECTIONS))
    parser.add_argument('--minutes-scale', type=float, default=1.0,
                        help='scale every time or step budget (e.g. 0.1 for a quick check)')
    parser.add_argument('--throughput-seconds', type=float, default=5.0)
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, minutes_scale=0.002, throughput_seconds=0.3)
    torch.set_num_threads(1)
    machine = dict(cpus=os.cpu_count(), machine=platform.machine(), python=platform.python_version(),
                   torch=torch.__version__, load_average_at_start=os.getloadavg()[0])
    with tempfile.TemporaryDirectory() as workdir:
        for section in args.only:
            started = time.perf_counter()
            print(f'== {section}')
            if section == 'throughput':
                result = throughput(workdir, args.throughput_seconds)
            else:
                result = SECTIONS[section](workdir, args.minutes_scale)
            result = dict(result=result, seconds=round(time.perf_counter() - started, 1),
                          minutes_scale=args.minutes_scale, **machine)
            merge_results('league_games', {section: result})


if __name__ == '__main__':
    main()
