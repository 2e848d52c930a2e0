"""SAC's leagues against the other algorithms' on the same game, seed and wall-clock budget.

``--game tictactoe`` (default): discrete SAC against DQN. Both run the ready ``tictactoe_sac_league`` config (32 envs, self-play + PFSP + the bots as sparring
partners, the same replay size, batch and updates per chunk); the DQN run swaps the policy for DQN with
the connect-four DQN league's exploration and targets. Each gets ``--seconds`` of wall time in a fresh
process with one torch thread, one after the other; the figures are the final greedy evaluation's win /
draw / loss rates against each bot (200 games each), with the env steps reached and the load average.

``--game pong``: continuous Pong duel, the ready ``pong_duel_continuous_sac_league`` against PPO's
``pong_duel_continuous_league`` (same court, league and bots), each for ``--seconds``.

``--game pong --curves``: the same two configs on each of ``--seeds`` (the two runs of a seed back to back, order
alternating by seed), each for ``--seconds``, evaluated every :data:`CURVE_EVAL_ENV_STEPS` env steps (greedy,
:data:`CURVE_EVAL_EPISODES` games per bot) so that learning shows against env steps and wall seconds; with
each run's env steps per second (its evaluations included) and its gradient steps.

``--opponent-age N``: SAC alone, ``replay.max_opponent_age`` off against N, at a fixed env-step budget
(``--env-steps``, no wall-clock limit) on each of ``--seeds``, the two runs of a seed back to back (order
alternating by seed); the figures as above, plus the transitions each run forgot.

    .venv/bin/python benchmarks/sac_league.py [--game tictactoe|pong] [--seconds 120] [--seed 0]
    .venv/bin/python benchmarks/sac_league.py --game pong --opponent-age 2 --env-steps 60000 --seeds 100 101
    .venv/bin/python benchmarks/sac_league.py --game pong --curves --seconds 150 --seeds 0 1 2

Writes ``benchmarks/results/sac_league.json`` (through ``results_file``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from results_file import add_smoke, apply_smoke

HERE = os.path.dirname(os.path.abspath(__file__))
DQN_POLICY = dict(type='dqn', model=dict(type='q_mlp', hidden_sizes=[128, 128], dueling=True),
                  collect=dict(n_steps=16, eps_start=1.0, eps_end=0.05, eps_decay_fraction=0.3),
                  learn=dict(lr=3e-4, batch_size=128, updates_per_chunk=16, learning_starts=2_000, gamma=0.99,
                             n_step=1, double=True, target_update_every=1, target_tau=0.01),
                  replay=dict(capacity=100_000))


GAMES = dict(tictactoe=('sac', 'dqn'), pong=('sac', 'ppo'))
CURVE_EVAL_ENV_STEPS = 40_960  # 160 of SAC's chunks (16 envs x 16 steps), 20 of PPO's (32 x 64)
CURVE_EVAL_EPISODES = 100


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


def child(game: str, algo: str, seconds: float, seed: int, workdir: str, overrides: dict) -> dict:
    """One run; ``overrides``: ``max_env_steps`` (a step budget instead of the wall clock: ``seconds`` 0) and
    ``max_opponent_age`` (SAC's replay setting), when given."""
    import torch

    from sparring.framework import serial_pipeline
    torch.set_num_threads(1)
    config = _config(game, algo)
    train = dict(config['train'], max_wall_seconds=seconds, progress_bar=False, tensorboard=False)
    if 'max_env_steps' in overrides:  # a step budget: no wall-clock limit
        train.update(max_env_steps=overrides['max_env_steps'])
        del train['max_wall_seconds']
    config['train'] = train
    if 'max_opponent_age' in overrides:
        config['policy']['replay'] = dict(config['policy'].get('replay', {}),
                                          max_opponent_age=overrides['max_opponent_age'])
    if 'eval_every_env_steps' in overrides:  # evaluations at the same env steps whatever the chunk's size
        chunk = config['env']['collector_env_num'] * config['policy']['collect']['n_steps']
        config['train'].update(eval_every_iters=max(1, overrides['eval_every_env_steps'] // chunk),
                               eval_in_background=False)
        config['env']['n_evaluator_episodes'] = overrides['eval_episodes']
    config['torch_threads'] = 1
    forgotten = _count_forgotten()
    before, started = os.getloadavg(), time.perf_counter()
    name = f'{game}_{algo}_{seed}_' + '_'.join(f'{k}{v}' for k, v in sorted(overrides.items()))
    summary = serial_pipeline(config, seed=seed, exp_name=os.path.join(workdir, name))
    curve = [dict(env_steps=h['env_steps'], seconds=h['seconds'], eval=next(iter(h['eval'].values())))
             for h in summary.get('history', [])]
    return dict(env_steps=summary['env_steps'], eval=summary['eval'], seconds=time.perf_counter() - started,
                training_seconds=summary['wall_seconds'], forgotten=forgotten[0], curve=curve,
                load_before=before, load_after=os.getloadavg())


def _count_forgotten() -> list:
    """A one-item list that counts the transitions SAC's replays forget in this process (the run's summary does
    not carry the coordinator's counters)."""
    from sparring.policy.sac import SACPolicy
    count, forget = [0], SACPolicy.forget_opponents

    def counted(policy, roster):
        n = forget(policy, roster)
        count[0] += n
        return n
    SACPolicy.forget_opponents = counted  # type: ignore[method-assign]
    return count


def run_child(game: str, algo: str, seconds: float, seed: int, workdir: str, overrides: dict) -> dict:
    out = subprocess.run([sys.executable, os.path.abspath(__file__), '--child', game, algo, str(seconds), str(seed),
                          workdir, json.dumps(overrides)], check=True, capture_output=True, text=True, cwd=HERE)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _rates(result: dict) -> str:
    rates = next(iter(result['eval'].values()))
    return ', '.join(f'{bot} {r["win"]:.0%}/{r["draw"]:.0%}/{r["loss"]:.0%}' for bot, r in rates.items())


def opponent_age_runs(args) -> dict:
    """SAC with ``max_opponent_age`` off and on, each seed's two runs back to back, at one env-step budget."""
    per_seed = {}
    for i, seed in enumerate(args.seeds):
        settings = [('off', None), ('on', args.opponent_age)]
        per_seed[seed] = {}
        for label, age in (settings if i % 2 == 0 else settings[::-1]):
            result = run_child(args.game, 'sac', 0.0, seed, args.workdir,
                               dict(max_env_steps=args.env_steps, max_opponent_age=age))
            per_seed[seed][label] = result
            print(f'seed {seed} max_opponent_age {age}: {result["env_steps"]} env steps in {result["seconds"]:.0f} s, '
                  f'forgot {result["forgotten"]}; {_rates(result)} (load {result["load_before"][0]:.2f})', flush=True)
    return dict(max_opponent_age=args.opponent_age, env_steps=args.env_steps, seeds=args.seeds, per_seed=per_seed)


def _score(rates: dict) -> float:
    """Wins minus losses, as a fraction of the games against one bot."""
    return round(rates['win'] - rates['loss'], 3)


def curve_runs(args) -> dict:
    """SAC's and PPO's ready continuous Pong leagues, each seed's two runs back to back, with learning curves."""
    per_seed: dict = {}
    for i, seed in enumerate(args.seeds):
        order = GAMES[args.game] if i % 2 == 0 else GAMES[args.game][::-1]
        per_seed[seed] = {}
        for algo in order:
            result = run_child(args.game, algo, args.seconds, seed, args.workdir,
                               dict(eval_every_env_steps=CURVE_EVAL_ENV_STEPS, eval_episodes=CURVE_EVAL_EPISODES))
            result['env_steps_per_second'] = round(result['env_steps'] / result['training_seconds'], 1)
            result['tracker_score'] = [dict(env_steps=c['env_steps'], seconds=c['seconds'],
                                            score=_score(c['eval']['pong_duel_heuristic'])) for c in result['curve']]
            per_seed[seed][algo] = result
            print(f'seed {seed} {algo}: {result["env_steps"]} env steps in {result["training_seconds"]:.0f} s '
                  f'({result["env_steps_per_second"]}/s); final {_rates(result)}; tracker score (win - loss) by env '
                  f'steps: {[(c["env_steps"], c["score"]) for c in result["tracker_score"]]} '
                  f'(load {result["load_before"][0]:.2f})', flush=True)
    summary = {}
    for algo in GAMES[args.game]:
        runs = [per_seed[seed][algo] for seed in args.seeds]
        finals = [next(iter(r['eval'].values())) for r in runs]
        summary[algo] = dict(
            env_steps_per_second=sorted(r['env_steps_per_second'] for r in runs)[len(runs) // 2],
            final_tracker_win_draw_loss=[[f['pong_duel_heuristic'][k] for k in ('win', 'draw', 'loss')] for f in finals],
            final_random_win=[f['random']['win'] for f in finals],
            final_tracker_score=[_score(f['pong_duel_heuristic']) for f in finals])
    return dict(seconds=args.seconds, seeds=args.seeds, eval_every_env_steps=CURVE_EVAL_ENV_STEPS,
                eval_episodes=CURVE_EVAL_EPISODES, summary=summary, per_seed=per_seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--game', choices=sorted(GAMES), default='tictactoe')
    parser.add_argument('--seconds', type=float, default=120.0)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--workdir', default='/tmp/sparring_sac_league')
    parser.add_argument('--opponent-age', type=int, default=None,
                        help='compare SAC with replay.max_opponent_age off and at this value instead')
    parser.add_argument('--env-steps', type=int, default=60_000, help='the budget of each --opponent-age run')
    parser.add_argument('--seeds', type=int, nargs='+', default=[100, 101],
                        help='the --opponent-age and --curves runs\' seeds')
    parser.add_argument('--curves', action='store_true', help='learning curves of both, on each of --seeds')
    parser.add_argument('--child', nargs=6, metavar=('GAME', 'ALGO', 'SECONDS', 'SEED', 'DIR', 'OVERRIDES'))
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, seconds=5.0, workdir=tempfile.mkdtemp(prefix='sparring-smoke-sac-league-'))
    if args.child:
        game, algo, seconds, seed, workdir, overrides = args.child
        print(json.dumps(child(game, algo, float(seconds), int(seed), workdir, json.loads(overrides))))
        return
    sys.path.insert(0, HERE)
    from results_file import cpu_model, merge_results
    results = dict(cpu=cpu_model(), cores=os.cpu_count(), started=time.time(), load_start=os.getloadavg())
    if args.opponent_age is not None:
        results.update(opponent_age_runs(args), load_end=os.getloadavg())
        merge_results('sac_league', {f'{args.game}_sac_max_opponent_age_{args.env_steps}': results})
        return
    if args.curves:
        results.update(curve_runs(args), load_end=os.getloadavg())
        merge_results('sac_league', {f'{args.game}_{"_vs_".join(GAMES[args.game])}_curves': results})
        return
    results.update(seconds=args.seconds, seed=args.seed)
    for algo in GAMES[args.game]:
        results[algo] = run_child(args.game, algo, args.seconds, args.seed, args.workdir, {})
        print(f'{algo}: {results[algo]["env_steps"]} env steps; {_rates(results[algo])}', flush=True)
    merge_results('sac_league', {f'{args.game}_{"_vs_".join(GAMES[args.game])}': results})


if __name__ == '__main__':
    main()
