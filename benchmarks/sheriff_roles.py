"""OpenSpiel's sheriff, a general-sum game of two roles: the league's pair of role policies (smuggler, sheriff)
judged by OpenSpiel's NashConv against env steps and seconds, beside OpenSpiel's CFR+ given the same wall time,
and each role's win rate against the other role's scripted and random bots over training.

    flock /tmp/bench.lock python benchmarks/sheriff_roles.py --seeds 200 201    # the ready config, each seed
    python benchmarks/sheriff_roles.py --smoke                                  # seconds: checks the script works

For each seed the ready config ``dizoo/openspiel/config/sheriff_league.py`` trains in serial mode (its wall-time
and env-step budgets, or ``--seconds``); every evaluation records, exactly (``battle.exact_analysis``), the
NashConv of the live pair (the smuggler's and the sheriff's current networks) with each role's best-response gain,
and the NashConv of the recent average (each role's live network and newest snapshots, mixed with equal weights),
and, from sampled games, each role's win rate against the other role's bots: the smuggler against
``sheriff_inspector`` (always inspects) and the random sheriff, the sheriff against ``sheriff_smuggler`` (loads
the most, never bribes) and the random smuggler. The curve starts at each role's initial parameters (its snapshot
``_h0``). The solver side runs OpenSpiel's C++ CFR+ (or CFR) for as long as the longest league run and records
the NashConv of its average policy after 1, 2, 4, ... iterations against its own seconds (NashConv not counted).

With ``--exploit-steps`` > 0, ``sparring exploit`` then trains a fresh exploiter of the other role (plain PPO,
the clipped objective: no magnet holding it back) for that many env steps against each role's final player and
against its initial parameters, and reports the exploiter's exact expected return beside what an exact best
response of its role wins: a role that learnt gives a best response (and the exploiter) less than its initial
parameters did.

A game's winner, for the win rates and the league's payoff, is the seat with the higher return (equal: a draw).
Figures go to ``benchmarks/results/sheriff_roles.json`` (one entry per seed, one for the solver), stamped.
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

# role -> (its player, the other role's scripted bot, the other role's random reference player)
ROLES = {'smuggler': ('naive_sp_smuggler_0', 'sheriff_inspector', 'random_sheriff'),
         'sheriff': ('naive_sp_sheriff_0', 'sheriff_smuggler', 'random_smuggler')}
CONFIG = 'dizoo/openspiel/config/sheriff_league.py'


def ready_config() -> dict:
    from sparring.dizoo.openspiel.config.sheriff_league import config
    return copy.deepcopy(config)


def _point(env_steps: int, seconds: float, exact: dict, evaluation: dict) -> dict:
    """One point of the curve: the exact figures and each role's win rates against the other role's bots."""
    wins = {}
    for role, (pid, bot, rand) in ROLES.items():
        report = evaluation.get(pid, {})
        wins[role] = {opponent: round(report[opponent]['win'], 4) for opponent in (bot, rand) if opponent in report}
    return dict(env_steps=int(env_steps), seconds=round(float(seconds), 2), nash_conv=round(exact['nash_conv'], 5),
                gains={role: round(g, 5) for role, g in exact['gains'].items()},
                average_nash_conv=round(exact['average_nash_conv'], 5), win=wins)


def initial_point(exp_dir: str, eval_games: int) -> dict:
    """Each role's initial parameters (its snapshot ``_h0``): the pair's exact figures and the win rates, sampled as
    the league's evaluations are."""
    from sparring.dizoo.openspiel.role_analysis import OpenSpielRoleAnalysis
    from sparring.framework.evaluate_player import evaluate_player
    from sparring.framework.player_loader import TrainedRun
    run = TrainedRun(exp_dir)
    analysis = OpenSpielRoleAnalysis(run.cfg.env.game, run.cfg.env.game_params or None, tuple(run.cfg.env.roles))
    profiles = {role: analysis.profile(run.policy(snapshot=f'{pid}_h0'), role) for role, (pid, _, _) in ROLES.items()}
    pair = analysis.pair(profiles)
    evaluation = {}
    for pid, bot, rand in ROLES.values():
        report = evaluate_player(exp_dir, [f'bot:{bot}', 'bot:random'], snapshot=f'{pid}_h0', games=eval_games,
                                 sampled=True)['opponents']
        evaluation[pid] = {bot: report[f'bot:{bot}'], rand: report['bot:random']}
    return _point(0, 0.0, dict(pair, average_nash_conv=pair['nash_conv']), evaluation)


def train_league(seed: int, exp_dir: str, seconds, env_steps, eval_every, eval_games: int) -> dict:
    """The ready config trained (its budgets unless given); its curve and summary."""
    from sparring.framework import serial_pipeline
    config = ready_config()
    config['env'].update(n_evaluator_episodes=eval_games)
    config['train'].update(tensorboard=False, progress_bar=False)
    for key, value in (('max_wall_seconds', seconds), ('max_env_steps', env_steps), ('eval_every_iters', eval_every)):
        if value is not None:
            config['train'][key] = value
    started = time.perf_counter()
    summary = serial_pipeline(config, seed=seed, exp_name=exp_dir)
    wall = time.perf_counter() - started
    curve = [initial_point(exp_dir, eval_games)]
    curve += [_point(h['env_steps'], h['seconds'], h['exact'], h['eval']) for h in summary['history']]
    if curve[-1]['env_steps'] != summary['env_steps']:  # the final evaluation, unless it was the last periodic one
        curve.append(_point(summary['env_steps'], summary['wall_seconds'], summary['exact'], summary['eval']))
    trained = curve[1:]
    return dict(seconds=round(summary['wall_seconds'], 1), process_seconds=round(wall, 1),
                env_steps=summary['env_steps'], eval_games=eval_games,
                initial_nash_conv=curve[0]['nash_conv'], final_nash_conv=curve[-1]['nash_conv'],
                best_nash_conv=min(p['nash_conv'] for p in trained),
                final_average_nash_conv=curve[-1]['average_nash_conv'],
                best_average_nash_conv=min(p['average_nash_conv'] for p in trained), curve=curve)


EXPLOITER_POLICY = dict(learn=dict(objective='clip', normalize_advantage=True, entropy_coef=0.0))


def exploit(exp_dir: str, budget: int, eval_games: int, seed: int) -> dict:
    """Per role: a fresh exploiter of the other role against the role's final and initial player: its exact and
    sampled return and win rate at the end, and what an exact best response of its role wins there."""
    from sparring.framework.exploit import exploit_player
    out = {}
    for role, (pid, _, _) in ROLES.items():
        figures = {}
        for which, kwargs in (('final', dict(player=pid)), ('initial', dict(snapshot=f'{pid}_h0'))):
            report = exploit_player(exp_dir, budget, seed=seed, eval_games=eval_games, policy=EXPLOITER_POLICY,
                                    **kwargs)
            final, exact = report['final'], report['exact']
            figures[which] = dict(best_response=round(exact['exploitability'], 5),
                                  exact_return=round(exact['exploiter_exact_return'], 5),
                                  mean_return=round(final['mean_return'], 4), win=round(final['win'], 4),
                                  env_steps=report['env_steps'])
        figures['less_against_final'] = figures['final']['exact_return'] < figures['initial']['exact_return']
        out[role] = figures
    return out


def run_solver(seconds: float, solver_name: str, game_name: str = 'sheriff') -> dict:
    """OpenSpiel's CFR+ (or CFR) for ``seconds`` of its own time; NashConv of its average policy at powers of two."""
    import pyspiel
    game = pyspiel.load_game(game_name)
    solver = (pyspiel.CFRPlusSolver if solver_name == 'cfr_plus' else pyspiel.CFRSolver)(game)
    curve, spent, iterations, next_point = [], 0.0, 0, 1
    while spent < seconds:
        started = time.perf_counter()
        solver.evaluate_and_update_policy()
        spent += time.perf_counter() - started
        iterations += 1
        if iterations == next_point or spent >= seconds:
            curve.append(dict(iterations=iterations, seconds=round(spent, 4),
                              nash_conv=float(pyspiel.nash_conv(game, solver.average_policy()))))
            next_point *= 2
    return dict(solver=solver_name, seconds=round(spent, 2), iterations=iterations,
                final_nash_conv=curve[-1]['nash_conv'], curve=curve)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[200, 201])
    parser.add_argument('--seconds', type=float, default=None, help="the league's wall time (default: the config's)")
    parser.add_argument('--env-steps', type=int, default=None, help="the league's env steps (default: the config's)")
    parser.add_argument('--eval-every', type=int, default=None, help='league rounds between two points')
    parser.add_argument('--eval-games', type=int, default=256, help='games per evaluation opponent')
    parser.add_argument('--exploit-steps', type=int, default=200_000,
                        help="each exploiter's env steps (0: no exploiters)")
    parser.add_argument('--solver', choices=('cfr_plus', 'cfr'), default='cfr_plus')
    parser.add_argument('--solver-seconds', type=float, default=None,
                        help="the solver's time (default: the longest league run's wall time)")
    add_smoke(parser)
    args = apply_smoke(parser.parse_args(argv), seeds=[0], seconds=20.0, env_steps=2 * 2 * 128 * 32, eval_every=1,
                       eval_games=8, solver_seconds=1.0, exploit_steps=2 * 128 * 32)
    load = os.getloadavg()
    print(f'sheriff, seeds {args.seeds}; load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}', flush=True)
    results, longest = {}, 0.0
    with tempfile.TemporaryDirectory(prefix='sheriff-roles-') as folder:
        for seed in args.seeds:
            load_before = [round(x, 2) for x in os.getloadavg()]
            league = train_league(seed, os.path.join(folder, f'seed_{seed}'), args.seconds, args.env_steps,
                                  args.eval_every, args.eval_games)
            league.update(load_before=load_before, load_after=[round(x, 2) for x in os.getloadavg()])
            longest = max(longest, league['seconds'])
            first, last = league['curve'][0], league['curve'][-1]
            print(f'seed {seed}: {league["env_steps"]:,} env steps in {league["seconds"]} s; NashConv of the live pair '
                  f'{first["nash_conv"]:.3f} -> {last["nash_conv"]:.3f} (best {league["best_nash_conv"]:.3f}), '
                  f'of the recent average {last["average_nash_conv"]:.3f} '
                  f'(best {league["best_average_nash_conv"]:.3f})', flush=True)
            for role, (_, bot, rand) in ROLES.items():
                print(f'  {role}: win vs {bot} {first["win"][role][bot]:.2f} -> {last["win"][role][bot]:.2f}, vs '
                      f'{rand} {first["win"][role][rand]:.2f} -> {last["win"][role][rand]:.2f}', flush=True)
            entry = dict(game='sheriff', config=CONFIG, league=league)
            if args.exploit_steps > 0:
                entry['exploiters'] = exploit(os.path.join(folder, f'seed_{seed}'), args.exploit_steps,
                                              args.eval_games, seed)
                entry['exploit_steps'] = args.exploit_steps
                for role, figures in entry['exploiters'].items():
                    print(f'  exploiter of the {role}: exact return {figures["initial"]["exact_return"]:+.3f} '
                          f'against the initial player (best response {figures["initial"]["best_response"]:+.3f}), '
                          f'{figures["final"]["exact_return"]:+.3f} against the final one (best response '
                          f'{figures["final"]["best_response"]:+.3f})', flush=True)
            results[f'seed_{seed}'] = entry
    solver = run_solver(longest if args.solver_seconds is None else args.solver_seconds, args.solver)
    print(f'{args.solver}: {solver["iterations"]:,} iterations in {solver["seconds"]} s; NashConv '
          f'{solver["final_nash_conv"]:.5f}', flush=True)
    results[f'solver_{args.solver}'] = solver
    merge_results('sheriff_roles', results)


if __name__ == '__main__':
    main()
