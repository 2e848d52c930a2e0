"""Seeded serial runs whose every number is kept, and the comparison of two such records.

``run_case`` runs one case and returns every number it leaves behind, flat: the last checkpoint
(parameters, optimiser state, counters, league state, payoff arrays, ratings, RNG states), the saved
league state, the compiled config, the run's summary and every update's statistics. Only wall-clock
figures are left out.
``differences`` lists, exactly, what two such records disagree on.

Two users: ``test_golden_runs.py`` compares a run with the recordings in ``golden/`` (text and
integers exactly, floats within a stated tolerance, since floats differ between CPUs), and
``benchmarks/golden.py`` records and compares runs bit for bit on one machine to prove a refactor
changes nothing. ``python benchmarks/golden.py record --out tests/framework/golden`` rewrites the
recordings: do it only when a change of behaviour is intended.
"""
from __future__ import annotations

import glob
import json
import os
from typing import Any, Dict, List, NamedTuple

import numpy as np
import torch

GOLDEN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'golden')
TEXT_KEY = '__text__'
# Wall-clock figures differ from run to run; everything else must not.
TIMING_WORDS = ('second', 'wall', 'sps', 'time')


def league_config(exp_name: str) -> dict:
    """Tic-tac-toe: a main player and a main exploiter (snapshots, resets), the random bot rated, evaluation."""
    return dict(
        exp_name=exp_name, seed=3,
        env=dict(type='tictactoe', collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=8),
        policy=dict(type='ppo', model=dict(hidden_sizes=[32]), collect=dict(n_steps=8),
                    learn=dict(epochs=2, num_minibatches=2, lr=1e-3)),
        league=dict(type='one_vs_one', active_players=dict(main_player=1, main_exploiter=1),
                    players=dict(main_player=dict(one_phase_step=2), main_exploiter=dict(one_phase_step=3))),
        train=dict(max_env_steps=1024, eval_every_iters=3, checkpoint_every_iters=4, progress_bar=False,
                   tensorboard=False),
    )


def matrix_config(exp_name: str) -> dict:
    """Rock-paper-scissors PSRO-style: the nash branch on the exact meta-game, exploitability reported."""
    return dict(
        exp_name=exp_name, seed=5,
        env=dict(type='rock_paper_scissors', collector_env_num=8, evaluator_env_num=4, n_evaluator_episodes=8),
        policy=dict(type='ppo', model=dict(hidden_sizes=[8]), collect=dict(n_steps=4),
                    learn=dict(epochs=2, num_minibatches=2, lr=3e-3, anneal_lr=False, gamma=0.0, gae_lambda=0.0)),
        league=dict(type='one_vs_one',
                    players=dict(naive_sp=dict(one_phase_step=3, branch_probs=dict(nash=1.0), mutate_prob=1.0))),
        battle=dict(exact_analysis=True),
        train=dict(max_env_steps=640, eval_every_iters=4, checkpoint_every_iters=0, progress_bar=False,
                   tensorboard=False),
    )


def cartpole_config(exp_name: str) -> dict:
    """CartPole, one PPO agent: periodic evaluation and checkpoints."""
    return dict(
        exp_name=exp_name, seed=11,
        env=dict(type='gym', id='CartPole-v1', collector_env_num=4, evaluator_env_num=2, n_evaluator_episodes=2,
                 manager=dict(type='base')),
        policy=dict(type='ppo', model=dict(hidden_sizes=[32, 32]), collect=dict(n_steps=32),
                    learn=dict(epochs=2, num_minibatches=2)),
        train=dict(max_env_steps=1024, eval_every_iters=3, checkpoint_every_iters=4, progress_bar=False,
                   tensorboard=False),
    )


def _short_train(max_env_steps: int, **train) -> dict:
    """The train section of the cases below: no progress bar, no tensorboard, a few updates."""
    return dict(dict(max_env_steps=max_env_steps, eval_every_iters=0, checkpoint_every_iters=0, progress_bar=False,
                     tensorboard=False), **train)


def kuhn_mmd_config(exp_name: str) -> dict:
    """Kuhn poker self-play with the 'mmd' objective (uniform magnet, annealed alpha), the NFSP-style average
    answering, scored by exact analysis: the MMD objective and the average policy."""
    return dict(
        exp_name=exp_name, seed=7,
        env=dict(type='openspiel', game='kuhn_poker', collector_env_num=8, evaluator_env_num=4,
                 n_evaluator_episodes=8),
        policy=dict(type='ppo', model=dict(hidden_sizes=[16]), collect=dict(n_steps=4),
                    average=dict(enabled=True, window=3, steps=2, batch_size=32),
                    learn=dict(objective='mmd', magnet='uniform', magnet_coef=0.2, magnet_coef_final=0.05,
                               normalize_advantage=False, epochs=2, num_minibatches=2, lr=1e-3, anneal_lr=False,
                               gamma=1.0, gae_lambda=1.0, value_clip_range=None)),
        league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=3, branch_probs=dict(sp=1.0)))),
        battle=dict(exact_analysis=True),
        train=_short_train(256, eval_every_iters=4, checkpoint_every_iters=4),
    )


def rps_moving_magnet_config(exp_name: str) -> dict:
    """Rock-paper-scissors with the 'mmd' objective and a moving magnet (a network trailing the policy)."""
    config = matrix_config(exp_name)
    config['policy']['learn'].update(objective='mmd', magnet='moving', magnet_lr=0.1, mmd_kl_coef=0.5)
    config['train'] = _short_train(320, eval_every_iters=4, checkpoint_every_iters=5)
    return config


def pendulum_kl_config(exp_name: str) -> dict:
    """Pendulum, one Gaussian PPO agent with the adaptive KL penalty (value replay, running obs normalisation)."""
    return dict(
        exp_name=exp_name, seed=13,
        env=dict(type='gym', id='Pendulum-v1', collector_env_num=2, evaluator_env_num=1, n_evaluator_episodes=1,
                 manager=dict(type='base')),
        policy=dict(type='ppo', obs_norm=True, model=dict(hidden_sizes=[16, 16]), collect=dict(n_steps=64),
                    learn=dict(objective='kl_penalty', kl_target=0.002, epochs=4, num_minibatches=4, lr=3e-3)),
        train=_short_train(768, eval_every_iters=4, checkpoint_every_iters=5),
    )


def pendulum_separate_value_config(exp_name: str) -> dict:
    """Pendulum with the value fitted apart (``ppo_separate_value``, the write-up's recipe) and the KL penalty."""
    return dict(
        exp_name=exp_name, seed=17,
        env=dict(type='gym', id='Pendulum-v1', collector_env_num=2, evaluator_env_num=1, n_evaluator_episodes=1,
                 manager=dict(type='base')),
        policy=dict(type='ppo_separate_value', model=dict(hidden_sizes=[16, 16]), collect=dict(n_steps=64),
                    learn=dict(objective='kl_penalty', kl_target=0.003, epochs=3, num_minibatches=1, lr_scale='hid2',
                               value_epochs=2, value_minibatch_size=64, reward_scale=0.1)),
        train=_short_train(640),
    )


def cartpole_lstm_config(exp_name: str) -> dict:
    """CartPole with a recurrent (LSTM) PPO on BPTT windows, OpenAI Five's per-element gradient clip and the
    clip objective's target_kl early stop."""
    return dict(
        exp_name=exp_name, seed=19,
        env=dict(type='gym', id='CartPole-v1', collector_env_num=2, evaluator_env_num=1, n_evaluator_episodes=1,
                 manager=dict(type='base')),
        policy=dict(type='ppo', model=dict(type='lstm', encoder_sizes=[16], hidden_size=16, bptt_len=8),
                    collect=dict(n_steps=32),
                    learn=dict(epochs=3, num_minibatches=2, grad_clip='five', target_kl=0.02, entropy_coef=0.01)),
        train=_short_train(512, checkpoint_every_iters=3),
    )


def tictactoe_search_config(exp_name: str) -> dict:
    """Tic-tac-toe by expert iteration: moves chosen by the guided search, the network trained towards its
    visits on a window of chunks, the search's value blended into the value target."""
    return dict(
        exp_name=exp_name, seed=23,
        env=dict(type='tictactoe', collector_env_num=4, evaluator_env_num=2, n_evaluator_episodes=4),
        policy=dict(type='ppo', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8),
                    learn=dict(objective='search', search_window=2, search_value_weight=0.5, epochs=2,
                               num_minibatches=2, gamma=1.0, gae_lambda=1.0, value_clip_range=None)),
        league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=3, branch_probs=dict(sp=1.0)))),
        battle=dict(collect_search=dict(num_simulations=4, sample_moves=4), eval_opponents=['bot:random']),
        train=_short_train(256, eval_every_iters=4, checkpoint_every_iters=4),
    )


def cartpole_dqn_config(exp_name: str) -> dict:
    """CartPole with DQN (double, dueling, n-step returns, Polyak target)."""
    return dict(
        exp_name=exp_name, seed=29,
        env=dict(type='gym', id='CartPole-v1', collector_env_num=2, evaluator_env_num=1, n_evaluator_episodes=1,
                 manager=dict(type='base')),
        policy=dict(type='dqn', model=dict(hidden_sizes=[16, 16], dueling=True),
                    collect=dict(n_steps=4, eps_start=1.0, eps_end=0.05, eps_decay_steps=200),
                    learn=dict(lr=1e-3, batch_size=16, updates_per_chunk=2, learning_starts=64, n_step=3,
                               double=True, target_update_every=1, target_tau=0.05),
                    replay=dict(capacity=512)),
        train=_short_train(512, eval_every_iters=20, checkpoint_every_iters=25),
    )


# The cases recorded in golden/ and compared with them by test_golden_runs.py.
CASES = dict(tictactoe_league=league_config, rps_exact=matrix_config, cartpole=cartpole_config)
# More cases for benchmarks/golden.py only (no committed recording): each objective, the average policy, a
# recurrent model, the value fitted apart and DQN, so a refactor of the policies is proven bit for bit.
REFACTOR_CASES = dict(kuhn_mmd_average=kuhn_mmd_config, rps_moving_magnet=rps_moving_magnet_config,
                      pendulum_kl=pendulum_kl_config, pendulum_separate_value=pendulum_separate_value_config,
                      cartpole_lstm=cartpole_lstm_config, tictactoe_search=tictactoe_search_config,
                      cartpole_dqn=cartpole_dqn_config)
ALL_CASES = dict(CASES, **REFACTOR_CASES)


def flatten(value: Any, path: str, arrays: Dict[str, np.ndarray], text: Dict[str, Any]) -> None:
    """Every number under ``value`` as an array keyed by its dotted path; other leaves as JSON text."""
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            if any(word in str(key).lower() for word in TIMING_WORDS):
                continue
            flatten(value[key], f'{path}.{key}' if path else str(key), arrays, text)
    elif isinstance(value, (list, tuple)) and not all(isinstance(v, (int, float, bool)) for v in value):
        for i, item in enumerate(value):
            flatten(item, f'{path}[{i}]', arrays, text)
    elif isinstance(value, torch.Tensor):
        arrays[path] = value.detach().cpu().numpy()
    elif isinstance(value, np.ndarray):
        arrays[path] = value if value.dtype != object else np.asarray(value.tolist())
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2 ** 63:
        text[path] = str(value)  # e.g. a PCG64 state: too wide for an integer array
    elif isinstance(value, (bool, np.bool_)) or value is None or isinstance(value, str):
        text[path] = value if not isinstance(value, np.bool_) else bool(value)
    elif isinstance(value, (int, float, np.integer, np.floating)) or (
            isinstance(value, (list, tuple))):
        arrays[path] = np.asarray(value)
    else:
        text[path] = repr(value)


def run_case(name: str, workdir: str, edit=None) -> Dict[str, np.ndarray]:
    """Run one case in ``workdir`` (its config changed by ``edit(config)`` if given); every number it
    leaves behind, flat."""
    from sparring.framework import serial_pipeline
    from sparring.worker.checkpoint import CheckpointManager
    from sparring.league.persistence import load_state
    from sparring.worker.state_file import load_state_file
    from sparring.worker.learner import Learner
    exp = os.path.join(workdir, name)
    before = torch.get_num_threads()
    # Every update's statistics as the learner returned them (what the logs and tensorboard show), in order:
    # a checkpoint keeps only the state they left behind.
    update_stats: List[dict] = []
    train = Learner.train

    def recording_train(self, *args, **kwargs):
        stats = train(self, *args, **kwargs)
        update_stats.append(dict(stats))
        return stats

    Learner.train = recording_train  # type: ignore[method-assign]
    try:
        config = ALL_CASES[name](exp)
        if edit is not None:
            edit(config)
        summary = serial_pipeline(config)
    finally:
        torch.set_num_threads(before)
        Learner.train = train  # type: ignore[method-assign]
    arrays: Dict[str, np.ndarray] = {}
    text: Dict[str, Any] = {}
    flatten(update_stats, 'update_stats', arrays, text)
    summary = {k: v for k, v in summary.items() if k not in ('exp_dir', 'checkpoint', 'pictures')}
    flatten(summary, 'summary', arrays, text)
    ckpt = CheckpointManager(exp)
    flatten(CheckpointManager.load(ckpt.latest()), 'checkpoint', arrays, text)
    text['checkpoint_files'] = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ckpt.dir, '*.pt')))
    for path in sorted(glob.glob(os.path.join(exp, 'params', '*.pt'))):
        flatten(load_state_file(path), 'params.' + os.path.basename(path), arrays, text)
    with open(os.path.join(exp, 'config.json')) as f:
        config = json.load(f)
    config.pop('exp_name')
    flatten(config, 'config', arrays, text)
    league_file = os.path.join(exp, 'league_state.npz')
    if os.path.exists(league_file):
        flatten(load_state(league_file), 'league_state_file', arrays, text)
    arrays[TEXT_KEY] = np.frombuffer(json.dumps(text, sort_keys=True, default=repr).encode('utf-8'), dtype=np.uint8)
    return arrays


def golden_path(name: str, directory: str = GOLDEN_DIR) -> str:
    return os.path.join(directory, f'{name}.npz')


def text_of(arrays: Dict[str, np.ndarray]) -> Dict[str, Any]:
    """The non-numeric leaves of a record (strings, booleans, None, wide integers), by dotted path."""
    return json.loads(bytes(arrays[TEXT_KEY]).decode('utf-8'))


class Difference(NamedTuple):
    """One recorded value that did not come out again bit for bit (a NamedTuple, not a dataclass: the
    tests load this file by path, outside ``sys.modules``, where a dataclass cannot resolve its annotations).

    ``reason`` is 'missing', 'text', 'shape', 'dtype' or 'values'. For 'values', ``max_abs`` is the
    largest absolute difference and ``max_rel`` that difference over the recorded array's largest
    magnitude (its scale: per-element ratios blow up on entries near zero, such as Adam's second
    moments or a weight that crosses zero)."""
    key: str
    reason: str
    floating: bool = False
    max_abs: float = float('nan')
    max_rel: float = float('nan')

    def describe(self) -> str:
        if self.reason != 'values':
            return f'{self.key}: {self.reason}'
        return f'{self.key}: max abs diff {self.max_abs:.3g}, max diff / scale {self.max_rel:.3g}'


def _value_difference(key: str, now: np.ndarray, then: np.ndarray) -> Difference:
    floating = then.dtype.kind in 'fc'
    a, b = now.astype(np.float64), then.astype(np.float64)
    same_nan = np.isnan(a) == np.isnan(b)
    diff = np.where(same_nan, np.abs(np.nan_to_num(a - b, nan=0.0)), np.inf)
    max_abs = float(diff.max()) if diff.size else 0.0
    scale = float(np.nanmax(np.abs(b))) if b.size and not np.isnan(b).all() else 0.0
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float('inf'))
    return Difference(key, 'values', floating, max_abs, max_rel)


def differences(now: Dict[str, np.ndarray], then: Dict[str, np.ndarray]) -> List[Difference]:
    """Every value recorded in ``then`` that ``now`` lacks or does not reproduce bit for bit, by key.
    Values only ``now`` has are not differences: a later version may add records (a new league field)."""
    found = []
    text_now, text_then = text_of(now), text_of(then)
    for key in sorted(text_then):
        if key not in text_now:
            found.append(Difference(f'{TEXT_KEY}.{key}', 'missing'))
        elif text_now[key] != text_then[key]:
            found.append(Difference(f'{TEXT_KEY}.{key}', 'text'))
    for key in sorted(then):
        if key == TEXT_KEY:
            continue
        if key not in now:
            found.append(Difference(key, 'missing'))
        elif now[key].shape != then[key].shape:
            found.append(Difference(key, 'shape'))
        elif now[key].dtype != then[key].dtype:
            found.append(Difference(key, 'dtype'))
        elif not np.array_equal(now[key], then[key], equal_nan=then[key].dtype.kind in 'fc'):
            found.append(_value_difference(key, now[key], then[key]))
    return found


def count_values(arrays: Dict[str, np.ndarray]) -> int:
    """How many values a record holds: its arrays and its text leaves."""
    return len(arrays) - 1 + len(text_of(arrays))


def save(path: str, arrays: Dict[str, np.ndarray]) -> None:
    np.savez_compressed(path, **arrays)


def load(path: str) -> Dict[str, np.ndarray]:
    with np.load(path) as stored:
        return {key: stored[key] for key in stored.files}
