"""League operation throughput with many historical players.

Builds an AlphaStar league (1 main player, 1 main exploiter, 2 league exploiters) through its
public API until it holds ``--historical`` snapshots (1,000 by default), with games played
along the way so the payoff is populated, then measures:

* ``finish_job`` calls per second (one episode per job, and eight), Elo on, TrueSkill off
  (the default config), and separately with TrueSkill on; best and median of several rounds;
* ``get_job_info`` calls per second, per active player type;
* the memory the league holds (tracemalloc, numpy arrays included), the process's peak RSS,
  and save / load time and file size.

Writes JSON to ``benchmarks/results/league_ops.json`` (or ``--out``) and prints the figures.
Target: at least 100,000 ``finish_job`` calls per second with 1,000 historical players.

    .venv/bin/python benchmarks/league_ops.py [--historical 1000] [--calls 200000]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc

import numpy as np

from sparring.league import AlphaStarLeague, BaseLeague

from results_file import add_smoke, apply_smoke, merge_results

OUTCOMES = ('win', 'draw', 'loss')


def build_league(historical: int, trueskill: bool = False, seed: int = 0) -> AlphaStarLeague:
    """A league grown through update_active_player / get_job_info / finish_job / judge_snapshot."""
    fast_phase = dict(one_phase_step=1)  # a snapshot every 1-2 steps: 1,000 snapshots quickly
    league = AlphaStarLeague(dict(
        seed=seed,
        players=dict(main_player=fast_phase, main_exploiter=fast_phase, league_exploiter=fast_phase),
        rating=dict(trueskill=dict(enabled=trueskill)),
    ))
    outcome_rng = np.random.default_rng(seed + 1)
    step = 0
    while len(league.historical_players) < historical:
        step += 1
        for player in league.active_players:
            league.update_active_player(dict(player_id=player.player_id, train_iteration=step))
            for _ in range(4):
                job = league.get_job_info(player.player_id)
                league.finish_job(dict(player_ids=job['player_ids'],
                                       result=[OUTCOMES[outcome_rng.integers(3)]]))
            if len(league.historical_players) < historical:
                league.judge_snapshot(player.player_id)
    return league


def job_results(league: BaseLeague, n_jobs: int, episodes: int, seed: int = 2) -> list:
    """Results of real jobs (opponents chosen by the league), ``episodes`` outcomes each."""
    rng = np.random.default_rng(seed)
    actives = [p.player_id for p in league.active_players]
    results = []
    for i in range(n_jobs):
        job = league.get_job_info(actives[i % len(actives)])
        results.append(dict(job_id=job['job_id'], launch_player=job['launch_player'],
                            player_ids=job['player_ids'],
                            result=[OUTCOMES[k] for k in rng.integers(0, 3, size=episodes)]))
    return results


def rate(fn, items, rounds: int) -> dict:
    """Calls per second of ``fn`` over ``items``, per round: the best round is the one least
    disturbed by other processes on the machine; the median is reported too."""
    per_round = []
    for _ in range(rounds):
        start = time.perf_counter()
        for item in items:
            fn(item)
        per_round.append(len(items) / (time.perf_counter() - start))
    return dict(best=round(max(per_round)), median=round(statistics.median(per_round)), calls=rounds * len(items))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--historical', type=int, default=1000)
    parser.add_argument('--calls', type=int, default=200_000, help='finish_job calls per timing (at least)')
    parser.add_argument('--out', default=None, help='write the report to this file instead of '
                                                    'benchmarks/results/league_ops.json')
    add_smoke(parser)
    args = parser.parse_args(argv)
    apply_smoke(args, historical=50, calls=2000)

    load_at_start = os.getloadavg()  # other processes share the cores: read the figures with it
    tracemalloc.start()
    t0 = time.perf_counter()
    league = build_league(args.historical)
    build_seconds = time.perf_counter() - t0
    league_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    payoff_state = league.payoff.state_dict()
    counts = dict(active=len(league.active_players), historical=len(league.historical_players),
                  payoff_pairs=len(league.payoff.played_pairs()))

    rounds = max(1, args.calls // 20_000)
    finish_1 = rate(league.finish_job, job_results(league, 20_000, episodes=1), rounds)
    finish_8 = rate(league.finish_job, job_results(league, 20_000, episodes=8), max(1, rounds // 2))
    finish_8['games_per_second_best'] = finish_8['best'] * 8
    get_job = {}
    for player in league.active_players:
        if player.player_type not in get_job:
            get_job[player.player_type] = rate(lambda _, pid=player.player_id: league.get_job_info(pid), range(2_000), 5)
    get_job['any_player'] = rate(lambda _: league.get_job_info(), range(2_000), 5)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'league.npz')
        t0 = time.perf_counter()
        league.save(path)
        save_seconds = time.perf_counter() - t0
        size = os.path.getsize(path)
        t0 = time.perf_counter()
        BaseLeague.load(path)
        load_seconds = time.perf_counter() - t0

    ts_league = build_league(args.historical, trueskill=True)
    finish_ts = rate(ts_league.finish_job, job_results(ts_league, 2_000, episodes=1), 3)

    report = dict(
        benchmark='league_ops',
        machine=dict(python=sys.version.split()[0], platform=platform.platform(), cpus=os.cpu_count(),
                     numpy=np.__version__, load_average_at_start=[round(x, 2) for x in load_at_start]),
        league=dict(type='alphastar', build_seconds=round(build_seconds, 2), **counts),
        finish_job_per_second=dict(episodes_1=finish_1, episodes_8=finish_8, episodes_1_with_trueskill=finish_ts),
        get_job_info_per_second=get_job,
        memory=dict(league_traced_mb=round(league_bytes / 2 ** 20, 2),
                    payoff_arrays_kb=round(sum(payoff_state[k].nbytes for k in ('wins', 'draws', 'losses')) / 1024, 1),
                    process_peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)),
        persistence=dict(save_seconds=round(save_seconds, 3), load_seconds=round(load_seconds, 3),
                         file_kb=round(size / 1024, 1)),
        target=dict(finish_job_per_second=100_000, met=finish_1['best'] >= 100_000),
    )
    if args.out is None:
        merge_results('league_ops', report)
    else:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, 'w') as f:
            json.dump(report, f, indent=2)
            f.write('\n')
    print(json.dumps(report, indent=2))
    return report


if __name__ == '__main__':
    main()
