"""Surgery in a running league: Pong duel stopped, widened and given a new observation feature, resumed.

1. A naive self-play PPO league trains on Pong duel (``dizoo/pong_duel/config/pong_duel_league.py``)
   for ``--steps-before`` env steps and stops.
2. ``sparring surgery`` widens its network (64-64 -> 128-96 units) and adds the observation feature
   ``ball_intercept_y`` (``env.extra_features=True``).
3. The league resumes for ``--steps-after`` more env steps.

The player is evaluated against the random bot (the league's reference player) and the tracker
bot with the same evaluation seeds before the surgery, right after it, and at the end. Also
reported: the surgery's measured change of action probabilities and values, and the games the
snapshots from before the surgery played after it (through observation adapters). Prints a
summary and writes ``benchmarks/results/surgery_league.json``.

    .venv/bin/python benchmarks/surgery_league.py [--steps-before 61440] [--steps-after 245760] [--games 1000]
"""
from __future__ import annotations

import argparse
import copy
import os
import tempfile
import time

from league_eval import evaluate_checkpoint, outcome_text, save_results, start_results
from results_file import add_smoke, apply_smoke
from sparring.dizoo.pong_duel.config.pong_duel_league import config as league_config
from sparring.framework import serial_pipeline
from sparring.worker.checkpoint import CheckpointManager
from sparring.framework.surgery import surgery
from sparring.league.base_league import build_league

PLAYER = 'naive_sp_0'
OPPONENTS = ('random', 'pong_duel_heuristic')


def snapshot_games(checkpoint: str, snapshot_ids) -> int:
    state = CheckpointManager.load(checkpoint)['league_state']
    league = build_league(state['config'])
    league.load_state_dict(state)
    return int(sum(record['games'] for home, away, record in league.payoff.played_pairs()
                   if home in snapshot_ids or away in snapshot_ids))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--steps-before', type=int, default=30 * 2048)
    parser.add_argument('--steps-after', type=int, default=120 * 2048)
    parser.add_argument('--games', type=int, default=1000)
    parser.add_argument('--seed', type=int, default=0)
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, steps_before=2048, steps_after=2048, games=4)
    results = start_results(args)
    with tempfile.TemporaryDirectory() as workdir:
        before_dir, after_dir = os.path.join(workdir, 'before'), os.path.join(workdir, 'after')
        config = copy.deepcopy(league_config)
        config['train'].update(max_env_steps=args.steps_before, progress_bar=False, tensorboard=False,
                               max_wall_seconds=0.0)
        started = time.perf_counter()
        first = serial_pipeline(config, seed=args.seed, exp_name=before_dir)
        results['train_before_seconds'] = time.perf_counter() - started
        results['before'] = evaluate_checkpoint(before_dir, PLAYER, OPPONENTS, args.games)
        snapshots = {p['player_id'] for p in CheckpointManager.load(first['checkpoint'])['league_state']['players']
                     if p['kind'] == 'historical'}

        new_config = copy.deepcopy(config)
        new_config['env']['extra_features'] = True
        new_config['policy']['model']['hidden_sizes'] = [128, 96]
        new_config['train']['max_env_steps'] = args.steps_before + args.steps_after
        started = time.perf_counter()
        report = surgery(first['checkpoint'], new_config, after_dir, log=lambda line: None)
        results['surgery_seconds'] = time.perf_counter() - started
        results['surgery'] = {k: report[k] for k in ('changes', 'players', 'max_prob_change', 'max_value_change',
                                                      'historical_players')}
        results['right_after'] = evaluate_checkpoint(after_dir, PLAYER, OPPONENTS, args.games)
        games_at_surgery = snapshot_games(report['new_checkpoint'], snapshots)

        started = time.perf_counter()
        final = serial_pipeline(new_config, seed=args.seed, exp_name=after_dir, resume=True)
        results['train_after_seconds'] = time.perf_counter() - started
        results['end'] = evaluate_checkpoint(after_dir, PLAYER, OPPONENTS, args.games)
        results['pre_surgery_snapshots'] = sorted(snapshots)
        results['pre_surgery_snapshot_games_after_surgery'] = snapshot_games(final['checkpoint'], snapshots) - \
            games_at_surgery
        results['league_table_end'] = final['league_table']
        results['env_steps'] = final['env_steps']

    change = {o: results['right_after'][o]['win'] - results['before'][o]['win'] for o in OPPONENTS}
    results['win_rate_change_at_surgery'] = change
    # Same function, same seeds: the games differ only where a float rounding flips a sampled move
    # (the wider matrix products add in another order), after which a game takes its own course.
    results['win_rate_standard_error'] = {o: (results['before'][o]['win'] * (1 - results['before'][o]['win'])
                                              / args.games) ** 0.5 for o in OPPONENTS}
    results['within_2_points'] = all(abs(c) <= 0.02 for c in change.values())
    results['improved_after'] = {o: results['end'][o]['score'] - results['right_after'][o]['score'] for o in OPPONENTS}
    for when in ('before', 'right_after', 'end'):
        print(f'{when:>11}: ' + ', '.join(f'vs {o} {outcome_text(results[when][o])}' for o in OPPONENTS))
    print(f'surgery: {"; ".join(results["surgery"]["changes"])}; max |dp| {results["surgery"]["max_prob_change"]:.3g}, '
          f'max |dv| {results["surgery"]["max_value_change"]:.3g}')
    print(f'win rate change at the surgery: {change} (within 2 points: {results["within_2_points"]}; standard error '
          f'of one evaluation {results["win_rate_standard_error"]})')
    print(f'score change after resuming: {results["improved_after"]}')
    print(f'pre-surgery snapshots {results["pre_surgery_snapshots"]} played '
          f'{results["pre_surgery_snapshot_games_after_surgery"]} games after the surgery')
    print(f'train {results["train_before_seconds"]:.0f} s + surgery {results["surgery_seconds"]:.1f} s + train '
          f'{results["train_after_seconds"]:.0f} s (load average at start {results["machine"]["load_average"]})')
    save_results('surgery_league', results)


if __name__ == '__main__':
    main()
