"""sparring's PPO against Stable-Baselines3's on CartPole-v1: time to an evaluation return of 475, over many seeds.

The protocol, the same for both libraries:

* every run is a fresh process with one torch thread; the library's modules are imported, and a fresh process's
  one-time costs paid, before its clocks start;
* seed by seed the two libraries run back to back, the order alternating from one seed to the next, so that the
  machine's load falls on both alike (the bootstrap below keeps each seed's two runs together);
* both clocks, wall and process CPU, start before the envs and the model are built;
* both are evaluated by one function (``peer_runs.evaluate_greedy``) after the update on every 1,280 env steps:
  8 greedy episodes on 8 CartPole-v1 envs seeded ``seed + 10_000``, so both see the same start states, each
  library choosing the actions through its own call for greedy actions (``policy.greedy``, ``model.predict``);
* a run ends at its first evaluation with a mean of at least 475 (the target) or at 100k env steps (not reached:
  the slowest in the medians); its time splits into training and evaluation, wall and CPU.

sparring runs its ready config (``dizoo/classic_control/config/cartpole_ppo.py``) through the classes its serial
pipeline uses (env manager, collector, learner), without the pipeline's logging and checkpoints; SB3 runs
rl-zoo's tuned CartPole hyperparameters (8 envs x 32 steps, batch 256, 20 epochs, lr 1e-3 and clip 0.2 annealed
over 1e5 steps, gamma 0.98, lambda 0.8). The figures: per seed the env steps, wall and CPU seconds to the target,
each split into training and evaluation, and the CPU time per env step of the training and of the evaluations; over the seeds the
medians and the ratio of medians (sparring / SB3) with a paired bootstrap 95 % interval, for wall and CPU time.

    .venv/bin/python benchmarks/cartpole_vs_sb3.py --seeds $(seq 300 329)
    .venv/bin/python benchmarks/cartpole_vs_sb3.py --smoke      # 2 seeds, a tiny target; sparring alone without SB3

Never report seeds the ready config was tuned on (0-31). Needs Stable-Baselines3 (the ``bench`` extra); without
it only ``--smoke`` runs, measuring sparring's side alone and saying so. Writes
``benchmarks/results/cartpole_vs_sb3.json`` (``results_file``): one entry per run (``--entry``, by default
``seeds_<first>_<last>``) with every seed's figures, the load before and after, the CPU model and the command.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from peer_runs import Clocks, evaluate_greedy, load, median, prepare_process, ratio_of_medians  # noqa: E402
from results_file import add_smoke, apply_smoke, cpu_model, merge_results, peer_missing  # noqa: E402

ENV_ID = 'CartPole-v1'
LIBRARIES = ('sparring', 'sb3')
EVAL_EPISODES = 8
EVAL_SEED_OFFSET = 10_000
SB3_CARTPOLE = dict(n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0)  # rl-zoo
SB3_ENVS = 8
SB3_SCHEDULE_STEPS = 100_000  # rl-zoo's n_timesteps: SB3's lr and clip range anneal over it


class Run:
    """One library's run: its clocks (started when it is made), its evaluations and when the target was met."""

    def __init__(self, seed: int, protocol: dict) -> None:
        self.seed, self.protocol = seed, protocol
        self.next_eval = protocol['eval_every']
        self.curve: list = []  # (env steps, mean return)
        self.eval_env_steps = 0  # env steps played by the evaluations (8 a vector step, finished envs included)
        self.at_target: dict = {}
        self.clocks = Clocks()

    def due(self, env_steps: int) -> bool:
        return not self.at_target and env_steps >= self.next_eval

    def evaluate(self, env_steps: int, act) -> bool:
        """Evaluate ``act`` now (after the update on ``env_steps``); whether the target is met."""
        while self.next_eval <= env_steps:
            self.next_eval += self.protocol['eval_every']
        def counted(obs):
            self.eval_env_steps += EVAL_EPISODES
            return act(obs)
        mean = self.clocks.evaluation(lambda: evaluate_greedy(counted, ENV_ID, EVAL_EPISODES,
                                                              self.seed + EVAL_SEED_OFFSET))
        self.curve.append((int(env_steps), mean))
        if mean >= self.protocol['target']:
            self.at_target = dict(self.clocks.split(), env_steps=int(env_steps), eval_env_steps=self.eval_env_steps)
        return bool(self.at_target)

    def result(self, env_steps: int) -> dict:
        reached = bool(self.at_target)
        figures = self.at_target or dict(self.clocks.split(), env_steps=int(env_steps),
                                         eval_env_steps=self.eval_env_steps)
        return dict(reached=reached, curve=self.curve, evaluations=len(self.curve),
                    train_cpu_ms_per_env_step=1000 * figures['train_cpu_seconds'] / max(figures['env_steps'], 1),
                    eval_cpu_us_per_env_step=1e6 * figures['eval_cpu_seconds'] / max(figures['eval_env_steps'], 1),
                    **figures)


# -- the child runs: each prints one JSON line ------------------------------------------------------
def sparring_run(seed: int, protocol: dict, workdir: str) -> dict:
    import copy

    import numpy as np

    import sparring.dizoo.classic_control  # noqa: F401 -- the env's registration, imported before the clock
    from sparring.config import compile_config
    from sparring.config.registry import POLICY_REGISTRY
    from sparring.dizoo.classic_control.config.cartpole_ppo import config as ready
    from sparring.worker.collector import SampleCollector
    from sparring.worker.env.manager import make_env_manager
    from sparring.worker.learner import Learner
    from sparring.worker.runtime import seed_everything
    config = copy.deepcopy(ready)
    config['train'] = dict(config['train'], progress_bar=False, tensorboard=False)

    run = Run(seed, protocol)
    cfg = compile_config(config, seed=seed, exp_name=os.path.join(workdir, f'sparring_{seed}'), save=False)
    seed_everything(cfg.seed)  # as the serial pipeline does
    env = make_env_manager(cfg.env, cfg.env.collector_env_num, cfg.seed, cfg.import_names)
    policy = POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, env.observation_space, env.action_space, seed=cfg.seed)
    collector = SampleCollector(env, policy, cfg.policy.collect.n_steps)
    learner = Learner(policy, cfg.train.max_env_steps)  # the ready config's budget: its clip range anneals over it

    def act(obs):
        return policy.greedy(obs.astype(np.float32))[0]

    while learner.env_steps < protocol['max_env_steps']:
        learner.train(collector.collect())
        if run.due(learner.env_steps) and run.evaluate(learner.env_steps, act):
            break
    result = run.result(learner.env_steps)
    env.close()
    return result


def sb3_run(seed: int, protocol: dict) -> dict:
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    def act(obs):
        return model.predict(obs, deterministic=True)[0]

    class EvaluateEvery(BaseCallback):
        """Evaluates at the start of a rollout, i.e. after the update on every env step so far."""

        def _on_rollout_start(self) -> None:
            if run.due(self.num_timesteps):
                run.evaluate(self.num_timesteps, act)

        def _on_step(self) -> bool:
            return not run.at_target

    run = Run(seed, protocol)
    env = make_vec_env(ENV_ID, n_envs=SB3_ENVS, seed=seed)
    model = PPO('MlpPolicy', env, learning_rate=_linear(1e-3), clip_range=_linear(0.2), seed=seed, device='cpu',
                verbose=0, **SB3_CARTPOLE)
    # The schedules anneal over rl-zoo's 1e5 steps; the run itself ends at the target or the cap.
    model.learn(max(SB3_SCHEDULE_STEPS, protocol['max_env_steps']), callback=EvaluateEvery())
    if run.due(model.num_timesteps):  # the update on the last rollout has no rollout after it
        run.evaluate(model.num_timesteps, act)
    return run.result(model.num_timesteps)


def _linear(start: float):
    return lambda remaining: remaining * start


def child(library: str, seed: int, protocol: dict, workdir: str) -> dict:
    if library == 'sb3':
        import stable_baselines3  # noqa: F401 -- its import paid before the clock, as sparring's
    prepare_process()
    before = load()
    result = sparring_run(seed, protocol, workdir) if library == 'sparring' else sb3_run(seed, protocol)
    return dict(result, load_before=before, load_after=load())


def run_child(library: str, seed: int, protocol: dict, workdir: str) -> dict:
    out = subprocess.run([sys.executable, os.path.abspath(__file__), '--child', library, str(seed),
                          json.dumps(protocol), workdir], check=True, capture_output=True, text=True, cwd=HERE)
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the side-by-side runs ------------------------------------------------------------------------
def side_by_side(seeds, libraries, protocol: dict, workdir: str) -> dict:
    per_seed = {}
    for i, seed in enumerate(seeds):
        order = libraries if i % 2 == 0 else tuple(reversed(libraries))
        per_seed[seed] = {library: run_child(library, seed, protocol, workdir) for library in order}
        print(f'seed {seed}: ' + '  '.join(f'{library} {_brief(r)}' for library, r in per_seed[seed].items()),
              flush=True)
    return per_seed


def _brief(r: dict) -> str:
    where = f'{r["env_steps"]} steps' if r['reached'] else f'not reached in {r["env_steps"]} steps'
    return (f'{where}, {r["wall_seconds"]:.1f} s ({r["eval_wall_seconds"]:.1f} eval), {r["cpu_seconds"]:.1f} CPU s, '
            f'{r["train_cpu_ms_per_env_step"]:.3f} CPU ms/step (load {r["load_before"][0]})')


def summary(per_seed: dict, libraries) -> dict:
    """Medians per library and, with both libraries, the ratios of medians with their bootstrap intervals."""
    inf = float('inf')

    def column(library: str, key: str, only_reached: bool = True) -> list:
        return [r[library][key] if r[library]['reached'] or not only_reached else inf for r in per_seed.values()]

    figures = {}
    for library in libraries:
        runs = [r[library] for r in per_seed.values()]
        figures[library] = dict(
            reached=sum(r['reached'] for r in runs), runs=len(runs),
            **{f'median_{key}': _finite(median(column(library, key)))
               for key in ('env_steps', 'wall_seconds', 'cpu_seconds', 'train_wall_seconds', 'train_cpu_seconds',
                           'eval_wall_seconds', 'eval_cpu_seconds')},
            **{f'median_{key}': median(column(library, key, False))
               for key in ('train_cpu_ms_per_env_step', 'eval_cpu_us_per_env_step')})
    out: dict = dict(medians=figures)
    if set(libraries) == set(LIBRARIES):
        paces = ('train_cpu_ms_per_env_step', 'eval_cpu_us_per_env_step')  # every run's, reached or not
        out['ratios'] = {key: ratio_of_medians(column('sparring', key, key not in paces),
                                               column('sb3', key, key not in paces))
                         for key in ('wall_seconds', 'cpu_seconds', 'env_steps', 'train_wall_seconds',
                                     'train_cpu_seconds') + paces}
    return out


def _finite(x: float):
    return None if x == float('inf') else x


def _print_summary(result: dict) -> None:
    for library, m in result['medians'].items():
        print(f'{library}: reached {m["reached"]}/{m["runs"]}; medians to the target: {m["median_env_steps"]} env '
              f'steps, {_s(m["median_wall_seconds"])} wall s (training {_s(m["median_train_wall_seconds"])}, '
              f'evaluation {_s(m["median_eval_wall_seconds"])}), {_s(m["median_cpu_seconds"])} CPU s (training '
              f'{_s(m["median_train_cpu_seconds"])}, evaluation {_s(m["median_eval_cpu_seconds"])}); training '
              f'{m["median_train_cpu_ms_per_env_step"]:.3f} CPU ms per env step, evaluation '
              f'{m["median_eval_cpu_us_per_env_step"]:.1f} CPU us per env step')
    for key, r in result.get('ratios', {}).items():
        print(f'sparring / SB3, median {key}: {_s(r["ratio"], 3)} (95 % CI {_s(r["ci_low"], 3)}-{_s(r["ci_high"], 3)}, '
              f'{r["pairs"]} seeds)')


def _s(x, digits: int = 2) -> str:
    return '-' if x is None else f'{x:.{digits}f}'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=list(range(300, 330)),
                        help='seeds never tuned on (the ready config was tuned on 0-31); at least 30 for a claim')
    parser.add_argument('--target', type=float, default=475.0, help='the evaluation mean a run stops at')
    parser.add_argument('--eval-every', type=int, default=1280, help='env steps between evaluations')
    parser.add_argument('--max-env-steps', type=int, default=100_000, help='a run that has not reached the target '
                        'by then stops (not reached)')
    parser.add_argument('--entry', default=None, help='the key the run is stored under (default seeds_<first>_<last>)')
    parser.add_argument('--workdir', default='/tmp/sparring_cartpole_vs_sb3')
    parser.add_argument('--child', nargs=4, metavar=('LIBRARY', 'SEED', 'PROTOCOL', 'WORKDIR'), help=argparse.SUPPRESS)
    add_smoke(parser)
    args = parser.parse_args()
    if args.child:
        library, seed, protocol, workdir = args.child
        print(json.dumps(child(library, int(seed), json.loads(protocol), workdir)))
        return
    apply_smoke(args, seeds=[900, 901], target=20.0, eval_every=512, max_env_steps=1024)
    libraries = LIBRARIES
    if peer_missing('stable_baselines3', 'SB3', "pip install -e '.[bench]'"):
        if not args.smoke:
            parser.error("needs Stable-Baselines3 for its side: pip install -e '.[bench]'")
        libraries = ('sparring',)  # no ratios
    protocol = dict(target=args.target, eval_every=args.eval_every, max_env_steps=args.max_env_steps)
    import gymnasium
    import torch
    versions = dict(torch=torch.__version__, gymnasium=gymnasium.__version__)
    if 'sb3' in libraries:
        import stable_baselines3
        versions['stable_baselines3'] = stable_baselines3.__version__
    started, load_start = time.time(), load()
    print(f'load before: {load_start}, CPU {cpu_model()}, {os.cpu_count()} cores', flush=True)
    per_seed = side_by_side(args.seeds, libraries, protocol, args.workdir)
    result = dict(summary(per_seed, libraries), libraries=list(libraries), seeds=args.seeds, protocol=protocol,
                  eval_episodes=EVAL_EPISODES, sb3_hyperparameters=dict(SB3_CARTPOLE, n_envs=SB3_ENVS,
                                                                        learning_rate='linear 1e-3',
                                                                        clip_range='linear 0.2',
                                                                        schedule_steps=SB3_SCHEDULE_STEPS),
                  sparring_config='dizoo/classic_control/config/cartpole_ppo.py', versions=versions,
                  cpu=cpu_model(), cores=os.cpu_count(), torch_threads=1, load_before=load_start, load_after=load(),
                  wall_seconds=time.time() - started, per_seed=per_seed)
    print(f'load after: {result["load_after"]}')
    _print_summary(result)
    merge_results('cartpole_vs_sb3', {args.entry or f'seeds_{args.seeds[0]}_{args.seeds[-1]}': result})


if __name__ == '__main__':
    main()
