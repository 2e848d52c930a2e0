"""Three-player Kuhn poker: the league's final policy judged by OpenSpiel's NashConv, beside OpenSpiel's CFR+ given
the same wall time on the same machine.

    flock /tmp/bench.lock python benchmarks/kuhn3.py                # 10 minutes each side (the target's budget)
    python benchmarks/kuhn3.py --seconds 120 --solver cfr           # shorter, plain CFR
    python benchmarks/kuhn3.py --smoke                              # seconds: checks the script works
    flock /tmp/bench.lock python benchmarks/kuhn3.py --seconds 120 --mode parallel --collectors 1

The league is the ready config ``dizoo/openspiel/config/kuhn3_league.py`` (one player, self-play and PFSP over its
snapshots in three seats, magnetic mirror descent), trained for ``--seconds`` of wall time; every evaluation
records the NashConv of the live network, of the population's meta-strategy (a mixture solved on the exact
three-player meta-game of the newest snapshots and the live network) and of the newest eight snapshots' average,
against env steps and seconds; ``--mode parallel`` trains it in parallel mode instead (a commander, ``--collectors``
collector workers, the learner and an evaluator worker, the NashConv measured by the commander from the published
networks; its wall time counts the workers' start). The solver side runs OpenSpiel's C++ CFR+ (or CFR) for the same wall time and
records the NashConv of its average policy after 1, 2, 4, ... iterations, against seconds (the solver's own time,
NashConv not counted) and the game states it visited (iterations times the states of the game tree: the
solver's counterpart of env steps). The target: NashConv <= 0.05 within 10 minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_file import add_smoke, apply_smoke, merge_results

TARGET = 0.05


def train_league(seconds: float, seed: int, exp_dir: str, eval_every: int, env_steps=None, mode: str = 'serial',
                 collectors: int = 1) -> dict:
    """The ready config trained for ``seconds`` (and at most ``env_steps``: None keeps the config's budget, which
    its magnet's annealing follows) in ``mode`` (parallel: with ``collectors`` collector workers and an evaluator
    worker); its NashConv curve and summary."""
    from sparring.dizoo.openspiel.config.kuhn3_league import config as ready
    from sparring.framework import parallel_pipeline, serial_pipeline
    config = copy.deepcopy(ready)
    config.update(exp_name=exp_dir)
    config['train'].update(max_wall_seconds=float(seconds), eval_every_iters=eval_every, tensorboard=False,
                           progress_bar=False)
    if env_steps is not None:
        config['train'].update(max_env_steps=int(env_steps))
    if mode == 'parallel':
        config['parallel'] = dict(collectors=int(collectors), evaluators=1)
        summary = parallel_pipeline(config, seed=seed)
    else:
        summary = serial_pipeline(config, seed=seed)
    points = [(h['env_steps'], h['seconds'], h['exact']) for h in summary['history']]
    if summary['exact'] and (not points or points[-1][0] != summary['env_steps']):
        points.append((summary['env_steps'], summary['wall_seconds'], summary['exact']))  # the final evaluation's
    if not points:
        sys.exit(f'kuhn3: the league measured no NashConv in {summary["wall_seconds"]:.0f} s ({summary["env_steps"]} env '
                 f'steps); expected more --seconds ({mode} mode)')
    curve = [dict(env_steps=steps, seconds=round(seconds, 2), nash_conv=round(next(iter(e['nash_conv'].values())), 5),
                  meta_nash_conv=round(e['meta_nash_conv'], 5), average_nash_conv=round(e['average_nash_conv'], 5),
                  snapshots=e['snapshots'], meta_support=e['meta_support']) for steps, seconds, e in points]
    return dict(mode=mode, **(dict(collectors=int(collectors)) if mode == 'parallel' else {}),
                seconds=round(summary['wall_seconds'], 1), env_steps=summary['env_steps'],
                final_nash_conv=curve[-1]['nash_conv'], final_meta_nash_conv=curve[-1]['meta_nash_conv'],
                final_average_nash_conv=curve[-1]['average_nash_conv'],
                best_nash_conv=min(p['nash_conv'] for p in curve),
                best_meta_nash_conv=min(p['meta_nash_conv'] for p in curve),
                best_average_nash_conv=min(p['average_nash_conv'] for p in curve), curve=curve,
                reached_target=_first_below(curve, 'nash_conv'), meta_reached_target=_first_below(curve, 'meta_nash_conv'),
                average_reached_target=_first_below(curve, 'average_nash_conv'))


def _first_below(curve, key):
    """(env steps, seconds) of the first point at or below the target, or None."""
    point = next((p for p in curve if p[key] <= TARGET), None)
    return None if point is None else dict(env_steps=point['env_steps'], seconds=point['seconds'])


def game_states(game) -> int:
    """The states of ``game``'s tree (chance and terminal nodes included): what one solver iteration walks."""
    count, stack = 0, [game.new_initial_state()]
    while stack:
        state = stack.pop()
        count += 1
        if not state.is_terminal():
            stack.extend(state.child(a) for a in state.legal_actions())
    return count


def run_solver(seconds: float, solver_name: str) -> dict:
    """OpenSpiel's CFR+ (or CFR) for ``seconds`` of its own time; NashConv of its average policy at powers of two."""
    import pyspiel
    game = pyspiel.load_game('kuhn_poker(players=3)')
    solver = (pyspiel.CFRPlusSolver if solver_name == 'cfr_plus' else pyspiel.CFRSolver)(game)
    states = game_states(game)
    curve, spent, iterations, next_point = [], 0.0, 0, 1
    while spent < seconds:
        started = time.perf_counter()
        solver.evaluate_and_update_policy()
        spent += time.perf_counter() - started
        iterations += 1
        if iterations == next_point or spent >= seconds:
            curve.append(dict(iterations=iterations, game_states=iterations * states, seconds=round(spent, 4),
                              nash_conv=float(pyspiel.nash_conv(game, solver.average_policy()))))
            next_point *= 2
    return dict(solver=solver_name, seconds=round(spent, 2), iterations=iterations, game_states_per_iteration=states,
                final_nash_conv=curve[-1]['nash_conv'], curve=curve,
                reached_target=next((dict(iterations=p['iterations'], seconds=p['seconds'])
                                     for p in curve if p['nash_conv'] <= TARGET), None))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=600.0, help='wall time of each side (default: 10 minutes)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--solver', choices=('cfr_plus', 'cfr'), default='cfr_plus')
    parser.add_argument('--eval-every', type=int, default=20, help='league rounds between two NashConv points')
    parser.add_argument('--env-steps', type=int, default=None,
                        help='the league\'s env-step budget (default: the ready config\'s, which its annealing follows)')
    parser.add_argument('--mode', choices=('serial', 'parallel'), default='serial', help='how the league trains')
    parser.add_argument('--collectors', type=int, default=1, help='collector workers in parallel mode')
    add_smoke(parser)
    args = apply_smoke(parser.parse_args(argv), seconds=3.0, eval_every=1, env_steps=4096 * 3)
    load = os.getloadavg()
    print(f'three-player Kuhn poker, {args.seconds:g} s each side; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}')
    with tempfile.TemporaryDirectory(prefix='kuhn3-') as folder:
        league = train_league(args.seconds, args.seed, os.path.join(folder, 'run'), args.eval_every, args.env_steps,
                              args.mode, args.collectors)
    print(f'league ({args.mode}): {league["env_steps"]:,} env steps in {league["seconds"]} s; NashConv live '
          f'{league["final_nash_conv"]:.4f} (best {league["best_nash_conv"]:.4f}), meta-strategy '
          f'{league["final_meta_nash_conv"]:.4f} (best {league["best_meta_nash_conv"]:.4f}), average '
          f'{league["final_average_nash_conv"]:.4f} (best {league["best_average_nash_conv"]:.4f}); target {TARGET} '
          f'reached by the network: {league["reached_target"]}, the meta-strategy: {league["meta_reached_target"]}, '
          f'the recent average: {league["average_reached_target"]}')
    solver = run_solver(args.seconds, args.solver)
    print(f'{args.solver}: {solver["iterations"]:,} iterations in {solver["seconds"]} s; NashConv '
          f'{solver["final_nash_conv"]:.6f}; target {TARGET} reached: {solver["reached_target"]}')
    where = '' if args.mode == 'serial' else f'_parallel_{args.collectors}c'
    merge_results('kuhn3', {f'seed_{args.seed}_{int(args.seconds)}s{where}': dict(
        game='kuhn_poker(players=3)', config='dizoo/openspiel/config/kuhn3_league.py', seconds_each=args.seconds,
        target=TARGET, league=league, solver=solver)})


if __name__ == '__main__':
    main()
