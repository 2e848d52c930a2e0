"""Learning from stale chunks, with and without V-trace: PPO on CartPole-v1 whose chunks are collected by the
learner's parameters of ``k`` versions ago (k = 0, 4, 8, 16), as a parallel run's collectors lag the learner.

For every seed, staleness and arm ('gae': today's update, the recorded values and GAE; 'vtrace':
``learn.off_policy='vtrace'``) the learner trains for ``--env-steps`` and is then evaluated by sampling
actions for ``--eval-steps`` steps in 8 fresh envs (mean return of the finished episodes). Seeds,
staleness and arms are interleaved, so load falls on all alike. Settings are the ready CartPole config
(``dizoo/classic_control/config/cartpole_ppo.py``) and were not tuned for this; seeds 100+ by default.

    flock /tmp/sparring-bench.lock .venv/bin/python benchmarks/vtrace_staleness.py [--seeds 100 101 102]

Writes ``benchmarks/results/vtrace_staleness.json`` (figures per run, means per staleness and arm, CPU, load).
"""
from __future__ import annotations

import argparse
import collections
import copy
import os
import statistics
import time

import torch

import sparring.dizoo  # noqa: F401  (registers the envs)
from sparring.config import compile_section
from sparring.config.registry import POLICY_REGISTRY
from sparring.dizoo.classic_control.config.cartpole_ppo import config as cartpole_config
from sparring.worker.collector import SampleCollector
from sparring.worker.env.manager import make_env_manager

from results_file import add_smoke, apply_smoke, cpu_model, merge_results


def train(seed: int, staleness: int, arm: str, env_steps: int, eval_steps: int) -> dict:
    torch.manual_seed(seed)
    policy_cfg = copy.deepcopy(cartpole_config['policy'])
    if arm == 'vtrace':
        policy_cfg['learn']['off_policy'] = 'vtrace'
    cfg = compile_section('policy', policy_cfg)
    env = make_env_manager(dict(type='cartpole'), 8, seed)
    learner = POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=seed)
    actor = POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=seed + 10_000)
    collector = SampleCollector(env, actor, cfg['collect']['n_steps'])
    history = collections.deque([learner.get_params()], maxlen=staleness + 1)  # the versions the actor may use
    started, done, iterations = time.perf_counter(), 0, 0
    total = env_steps
    while done < total:
        actor.set_params(history[0], learner.version - len(history) + 1)  # k versions behind once k are made
        chunk = collector.collect()
        done += chunk.env_steps
        learner.learn(chunk.data, progress=min(done / total, 1.0))
        history.append(learner.get_params())
        iterations += 1
    collector.close()
    eval_env = make_env_manager(dict(type='cartpole'), 8, seed + 20_000)
    evaluation = SampleCollector(eval_env, learner, eval_steps)
    returns = evaluation.collect().episode_returns
    eval_env.close()
    return dict(seed=seed, staleness=staleness, arm=arm, env_steps=done, iterations=iterations,
                wall_seconds=round(time.perf_counter() - started, 2),
                eval_return=statistics.fmean(returns) if returns else None, eval_episodes=len(returns))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[100, 101, 102])
    parser.add_argument('--staleness', type=int, nargs='+', default=[0, 4, 8, 16])
    parser.add_argument('--env-steps', type=int, default=60_000)
    parser.add_argument('--eval-steps', type=int, default=1_000)
    parser.add_argument('--results-key', default='cartpole',
                        help='the key of benchmarks/results/vtrace_staleness.json the run is stored under')
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, seeds=[100], staleness=[0, 4], env_steps=512, eval_steps=200)
    torch.set_num_threads(1)
    load_before = os.getloadavg()
    runs = []
    for seed in args.seeds:
        for k in args.staleness:
            for arm in ('gae', 'vtrace'):
                run = train(seed, k, arm, args.env_steps, args.eval_steps)
                runs.append(run)
                print(f'seed {seed} staleness {k:>2} {arm:>6}: return {run["eval_return"]:.1f} '
                      f'({run["eval_episodes"]} episodes) in {run["wall_seconds"]:.1f} s', flush=True)
    means = {}
    for k in args.staleness:
        for arm in ('gae', 'vtrace'):
            values = [r['eval_return'] for r in runs if r['staleness'] == k and r['arm'] == arm
                      and r['eval_return'] is not None]
            sem = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else None
            means[f'{arm}_k{k}'] = dict(mean=statistics.fmean(values) if values else None, sem=sem, n=len(values))
            print(f'staleness {k:>2} {arm:>6}: mean return {means[f"{arm}_k{k}"]["mean"]:.1f}'
                  + (f' +- {sem:.1f}' if sem is not None else ''))
    merge_results('vtrace_staleness', {
        args.results_key: dict(runs=runs, means=means, env_steps=args.env_steps, seeds=args.seeds, cpu=cpu_model(),
                               load_before=load_before, load_after=os.getloadavg(), torch=torch.__version__)})


if __name__ == '__main__':
    main()
