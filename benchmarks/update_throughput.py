"""PPO update throughput, sparring's ``policy.learn`` against SB3's ``PPO.train()``: samples per second.

The same network, batch and update settings on both sides; both update repeatedly on one collected
batch (the first update is a warm-up), and the figure is epochs x batch / median seconds per update.

* ``cartpole``: the 64-64 tanh MLP with separate trunks, a batch of 8 envs x 32 steps of CartPole-v1,
  20 epochs of one 256-sample minibatch (the rl-zoo settings).
* ``connect_four``: one 4x4 convolution of 64 channels and 256 hidden units shared by both heads, a
  batch of 64 x 64 = 4096 random boards ``[3, 6, 7]`` with 7 actions, 4 epochs of 8 minibatches (the
  ready league config's update). sparring's batch carries action masks as in the league; SB3's PPO has
  none (it takes no masks). ``sparring_bf16`` is the same update with the CNN's bfloat16 trunk
  (``trunk_precision='bfloat16'``).

    .venv/bin/python benchmarks/update_throughput.py LIBRARY:NETWORK [THREADS]   # one line of JSON
Run by ``vs_sb3.py``; each measurement is a fresh process. ``--smoke``: every library on both networks, one timed
update each, in this process (SB3's side skipped, in one line, where it is not installed); it writes no record.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import gymnasium as gym
import numpy as np
import torch

NETWORKS = dict(
    cartpole=dict(envs=8, steps=32, epochs=20, minibatch=256, lr=1e-3, gamma=0.98, lam=0.8, ent=0.0),
    connect_four=dict(envs=64, steps=64, epochs=4, minibatch=512, lr=1e-3, gamma=0.99, lam=0.95, ent=0.01),
)
BOARD = (3, 6, 7)
REPEATS = 7


class RandomBoards(gym.Env):
    """Connect-four shaped observations and actions with random contents: only the update is timed."""
    observation_space = gym.spaces.Box(0.0, 1.0, BOARD, np.float32)
    action_space = gym.spaces.Discrete(BOARD[2])

    def _board(self):
        return (self.np_random.random(BOARD) < 0.3).astype(np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return self._board(), {}

    def step(self, action):
        done = self.np_random.random() < 0.05
        return self._board(), float(self.np_random.choice([-1.0, 1.0])) if done else 0.0, done, False, {}


def _timed(update) -> float:
    update()  # warm-up
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        update()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sparring_update(network: str, trunk_precision: str = 'float32') -> float:
    from sparring.config import compile_section
    from sparring.config.registry import POLICY_REGISTRY
    import sparring.dizoo.classic_control  # noqa: F401  registers cartpole
    s = NETWORKS[network]
    learn = dict(epochs=s['epochs'], num_minibatches=s['envs'] * s['steps'] // s['minibatch'], lr=s['lr'],
                 gamma=s['gamma'], gae_lambda=s['lam'], entropy_coef=s['ent'], value_clip_range=None)
    model = dict(type='mlp') if network == 'cartpole' else dict(type='cnn', conv_layers=[[64, 4, 1]], hidden_size=256,
                                                                trunk_precision=trunk_precision)
    cfg = compile_section('policy', dict(type='ppo', model=model, collect=dict(n_steps=s['steps']), learn=learn))
    if network == 'cartpole':
        from sparring.worker.collector import SampleCollector
        from sparring.worker.env.manager import make_env_manager
        env = make_env_manager(dict(type='cartpole'), s['envs'], 0)
        policy = POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=0)
        chunk = SampleCollector(env, policy, s['steps']).collect().data
    else:
        policy = POLICY_REGISTRY.get('ppo')(cfg, RandomBoards.observation_space, RandomBoards.action_space, seed=0)
        chunk = _board_chunk(policy, s['steps'], s['envs'])
    return _timed(lambda: policy.learn(chunk, progress=0.5))


def _board_chunk(policy, T: int, B: int) -> dict:
    rng = np.random.default_rng(0)
    obs = (rng.random((T, B, *BOARD)) < 0.3).astype(np.float32)
    mask = rng.random((T, B, BOARD[2])) < 0.8
    mask[..., 0] = True
    out = policy.act(obs.reshape(T * B, *BOARD), action_mask=mask.reshape(T * B, -1))
    value = out.value.reshape(T, B)
    done = rng.random((T, B)) < 0.05
    return dict(obs=obs, action=out.action.reshape(T, B), log_prob=out.log_prob.reshape(T, B), value=value,
                next_value=np.concatenate([value[1:], value[-1:]]), reward=np.where(done, 1.0, 0.0).astype(np.float32),
                terminated=done, truncated=np.zeros((T, B), bool), action_mask=mask)


def sb3_update(network: str) -> float:
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
    s = NETWORKS[network]

    class BoardTrunk(BaseFeaturesExtractor):
        def __init__(self, observation_space, features_dim: int = 256) -> None:
            super().__init__(observation_space, features_dim)
            self.net = torch.nn.Sequential(torch.nn.Conv2d(BOARD[0], 64, 4, 1), torch.nn.ReLU(), torch.nn.Flatten(),
                                           torch.nn.Linear(64 * 3 * 4, features_dim), torch.nn.ReLU())

        def forward(self, obs):
            return self.net(obs)

    if network == 'cartpole':
        env, policy_kwargs = make_vec_env('CartPole-v1', n_envs=s['envs'], seed=0), None
    else:
        env = make_vec_env(RandomBoards, n_envs=s['envs'], seed=0)
        policy_kwargs = dict(features_extractor_class=BoardTrunk, net_arch=dict(pi=[], vf=[]))
    model = PPO('MlpPolicy', env, n_steps=s['steps'], batch_size=s['minibatch'], n_epochs=s['epochs'],
                learning_rate=s['lr'], gamma=s['gamma'], gae_lambda=s['lam'], ent_coef=s['ent'],
                policy_kwargs=policy_kwargs, seed=0, device='cpu', verbose=0)
    model.learn(s['envs'] * s['steps'])  # one rollout fills the buffer (and trains once)
    return _timed(model.train)


def measure(name: str, threads: int = 1) -> dict:
    torch.set_num_threads(threads)
    library, network = name.split(':')
    if library == 'sparring_bf16':  # the CNN's bfloat16 trunk (policy.model.trunk_precision)
        seconds = sparring_update(network, 'bfloat16')
    else:
        seconds = (sparring_update if library == 'sparring' else sb3_update)(network)
    s = NETWORKS[network]
    samples = s['epochs'] * s['envs'] * s['steps']
    return dict(seconds_per_update=seconds, samples_per_second=samples / seconds, threads=threads)


def compare_updates(run_in_child, threads=(1,)) -> dict:
    """Both libraries on both networks, interleaved, each in a fresh process; the ratios sparring / SB3."""
    import os
    results = {}
    for network in NETWORKS:
        for n in threads:
            pair = {}
            libraries = ('sparring', 'sb3') + (('sparring_bf16',) if network == 'connect_four' else ())
            for library in libraries:
                pair[library] = dict(run_in_child(f'{library}:{network}', n), load=list(os.getloadavg()))
            pair['ratio'] = pair['sparring']['samples_per_second'] / pair['sb3']['samples_per_second']
            if 'sparring_bf16' in pair:
                pair['ratio_bf16'] = pair['sparring_bf16']['samples_per_second'] / pair['sb3']['samples_per_second']
            pair['target_met'] = max(pair['ratio'], pair.get('ratio_bf16', 0.0)) >= 2.0
            results[f'{network}_threads{n}'] = pair
            print(f'update {network} ({n} thread{"s" if n > 1 else ""}): sparring '
                  f'{pair["sparring"]["samples_per_second"]:.0f} samples/s, SB3 {pair["sb3"]["samples_per_second"]:.0f} '
                  f'(ratio {pair["ratio"]:.2f}' + (f', bfloat16 trunk {pair["ratio_bf16"]:.2f}' if 'ratio_bf16' in pair
                                                   else '') + f'; load {os.getloadavg()[0]:.2f})', flush=True)
    return results


def smoke() -> None:
    """Each library's update on each network once (after its warm-up), here; SB3's only where it is installed."""
    global REPEATS
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from results_file import peer_missing
    REPEATS = 1
    libraries = ['sparring', 'sparring_bf16']
    if not peer_missing('stable_baselines3', 'SB3', "pip install -e '.[bench]'"):
        libraries.append('sb3')
    for network in NETWORKS:
        for library in libraries:
            if library != 'sparring_bf16' or network == 'connect_four':
                print(json.dumps(dict(measure(f'{library}:{network}'), name=f'{library}:{network}')), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('name', nargs='?', metavar='LIBRARY:NETWORK',
                        help=f'sparring, sparring_bf16 or sb3, then one of {", ".join(NETWORKS)}')
    parser.add_argument('threads', nargs='?', type=int, default=1)
    parser.add_argument('--smoke', action='store_true', help='each library on each network once, in seconds')
    args = parser.parse_args()
    if args.smoke:
        return smoke()
    if args.name is None or args.name.count(':') != 1 or args.name.split(':')[1] not in NETWORKS:
        parser.error(f'expected LIBRARY:NETWORK (e.g. sparring:cartpole), got {args.name!r}')
    print(json.dumps(measure(args.name, args.threads)))


if __name__ == '__main__':
    main()
