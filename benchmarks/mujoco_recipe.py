"""MuJoCo benchmark: the continuous-control write-up's recipe judged by its own table (episodes to a threshold).

For each task, the ready ``<env>_ppo_kl`` config (task-sized networks, time-step feature, KL penalty,
value function trained apart) trains until the average return of the last 5 training episodes
crosses the write-up's threshold, or the budget (wall minutes, or the write-up's episode count) runs
out. The figures are the episodes it took and the best 5-episode average seen, beside the write-up's
Table 1 and 2 (episodes to the threshold, its best average). A second row trains clipped PPO (the
``<env>_ppo`` recipe: joint loss, 2048 steps per update, 10 epochs of 32 minibatches, reward
scaling) on the same network and observation; its rewards are scaled here, between collection and
learning, as the env option would (by the running std of the discounted return), so that the
episode returns counted stay raw. Returns are raw training returns of the stochastic policy, as
the write-up logs them; episodes are counted in the order they finish. Episodes to a
threshold do not depend on the machine's load; the wall minutes only bound how far a run gets.
Prints a table and writes ``benchmarks/results/mujoco_recipe.json`` (one entry per task and row).

    .venv/bin/python benchmarks/mujoco_recipe.py [--envs swimmer hopper halfcheetah] [--rows kl clip]
        [--minutes 20] [--seed 0]
"""
from __future__ import annotations

import argparse
import copy
import os
import platform
import sys
import time
from collections import deque

import numpy as np
import torch
from gymnasium.wrappers.utils import RunningMeanStd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_file import add_smoke, apply_smoke, merge_results

from sparring.config import compile_config
from sparring.config.registry import POLICY_REGISTRY
from sparring.dizoo.mujoco.config import WRITE_UP_RUNS, mujoco_ppo_config, mujoco_ppo_kl_config
from sparring.worker.collector import SampleCollector
from sparring.worker.env.manager import make_env_manager

# The write-up's Tables 1 and 2: the threshold, the episodes its 5-episode average took to cross it,
# and the best 5-episode average of its run (None where the table gives none).
WRITE_UP = dict(
    swimmer=dict(gym_id='Swimmer-v5', threshold=90, episodes=137, best=None),
    hopper=dict(gym_id='Hopper-v5', threshold=2000, episodes=2_250, best=None),
    halfcheetah=dict(gym_id='HalfCheetah-v5', threshold=4700, episodes=1_966, best=None),
)
ROWS = ('kl', 'clip')
WINDOW = 5


class ReturnScaler:
    """Training rewards divided by the running std of the discounted return, per chunk row in order:
    what ``env.reward_scaling`` does inside the env, done outside so that the env reports raw returns."""

    def __init__(self, num_envs: int, gamma: float) -> None:
        self.gamma = gamma
        self.returns = np.zeros(num_envs)
        self.stats = RunningMeanStd(shape=())

    def __call__(self, reward: np.ndarray, terminated: np.ndarray) -> np.ndarray:
        scaled = np.empty_like(reward)
        for t in range(reward.shape[0]):
            self.returns = self.returns * self.gamma * (1.0 - terminated[t]) + reward[t]
            self.stats.update(self.returns)
            scaled[t] = reward[t] / np.sqrt(self.stats.var + 1e-8)
        return scaled


def row_config(env_type: str, row: str) -> dict:
    """The ready KL recipe, or clipped PPO with the same network and time-step feature."""
    if row == 'kl':
        return mujoco_ppo_kl_config(env_type)
    config = mujoco_ppo_config(env_type)
    kl_model = mujoco_ppo_kl_config(env_type)['policy']['model']
    config['env'].update(time_feature=True, reward_scaling=False)  # scaled by ``ReturnScaler`` instead
    config['policy']['model'] = copy.deepcopy(kl_model)
    # The budget is in wall minutes, not a known step count, so the learning rate is not annealed.
    config['policy']['learn']['anneal_lr'] = False
    return config


def run(env_type: str, row: str, seed: int, minutes: float) -> dict:
    cfg = compile_config(row_config(env_type, row), seed=seed, save=False)
    env = make_env_manager(cfg.env, cfg.env.collector_env_num, seed)
    policy = POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, env.observation_space, env.action_space, seed=seed)
    collector = SampleCollector(env, policy, cfg.policy.collect.n_steps)
    scale_rewards = ReturnScaler(env.num_envs, cfg.env.reward_scaling_gamma) if row == 'clip' else None
    target = WRITE_UP[env_type]
    max_episodes = WRITE_UP_RUNS[env_type][1]
    last = deque(maxlen=WINDOW)
    episodes, crossed_at, best, updates = 0, None, float('-inf'), 0
    started = time.perf_counter()
    deadline = started + 60.0 * minutes
    try:
        while crossed_at is None and episodes < max_episodes and time.perf_counter() < deadline:
            chunk = collector.collect()
            for ret in chunk.episode_returns:
                episodes += 1
                last.append(ret)
                if len(last) == WINDOW:
                    average = float(np.mean(last))
                    best = max(best, average)
                    if crossed_at is None and average >= target['threshold']:
                        crossed_at = episodes
            if scale_rewards is not None:
                chunk.data['reward'] = scale_rewards(chunk.data['reward'], chunk.data['terminated'])
            if crossed_at is None:
                policy.learn(chunk.data, progress=min(1.0, collector.env_steps / cfg.train.max_env_steps))
                updates += 1
            if updates % 10 == 0:
                print(f'  {env_type} {row}: {episodes} episodes, {collector.env_steps} steps, best {WINDOW}-episode '
                      f'average {best:.1f}, {time.perf_counter() - started:.0f} s', flush=True)
    finally:
        collector.close()
    return dict(gym_id=target['gym_id'], threshold=target['threshold'], episodes_to_threshold=crossed_at,
                best_5_episode_average=None if best == float('-inf') else best, episodes=episodes,
                env_steps=collector.env_steps, updates=updates, wall_seconds=time.perf_counter() - started,
                budget_minutes=minutes, stopped='threshold' if crossed_at else (
                    'episodes' if episodes >= max_episodes else 'wall budget'),
                write_up_episodes_to_threshold=target['episodes'], write_up_best=target['best'],
                policy=cfg.policy.type, objective=cfg.policy.learn.objective, steps_per_update=(
                    cfg.env.collector_env_num * cfg.policy.collect.n_steps))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--envs', nargs='+', choices=sorted(WRITE_UP), default=['swimmer', 'hopper', 'halfcheetah'])
    parser.add_argument('--rows', nargs='+', choices=ROWS, default=list(ROWS))
    parser.add_argument('--minutes', type=float, default=30.0, help='wall budget per task and row')
    parser.add_argument('--seed', type=int, default=0)
    add_smoke(parser)
    args = parser.parse_args()
    apply_smoke(args, envs=['hopper'], rows=['kl'], minutes=0.1)
    torch.set_num_threads(1)
    machine = dict(cpus=os.cpu_count(), python=platform.python_version(), torch=torch.__version__,
                   load_average_at_start=os.getloadavg())
    for env_type in args.envs:
        for row in args.rows:
            result = run(env_type, row, args.seed, args.minutes)
            crossed = result['episodes_to_threshold']
            print(f'{result["gym_id"]} {row}: {"did not cross" if crossed is None else f"crossed at episode {crossed}"} '
                  f'{result["threshold"]} (write-up: {result["write_up_episodes_to_threshold"]}); best '
                  f'{WINDOW}-episode average {result["best_5_episode_average"]:.1f} in {result["episodes"]} episodes, '
                  f'{result["env_steps"]} steps, {result["wall_seconds"]:.0f} s ({result["stopped"]})', flush=True)
            merge_results('mujoco_recipe', {f'{env_type}/{row}': dict(result, seed=args.seed, machine=machine,
                                                                     finished=time.strftime('%Y-%m-%d %H:%M:%S'))})


if __name__ == '__main__':
    main()
