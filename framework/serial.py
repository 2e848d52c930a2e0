"""The serial entry point: collect -> learn -> evaluate in one process, with checkpoints and resume.

``serial_pipeline(config, seed=0)`` compiles the config, builds the env managers, policy,
collector, learner and evaluator (the same classes the parallel mode uses), and loops until
the env-step budget is spent or the evaluator reaches ``env.stop_value``. Every
``train.checkpoint_every_iters`` iterations, and at the end, it saves the policy, optimiser,
counters and RNG states; ``resume=True`` continues the run from the newest checkpoint.
"""
from __future__ import annotations

import os
import time
import warnings
from typing import Optional

from easydict import EasyDict

from sparring.config import compile_config, load_config, save_config
from sparring.config.compile import CONFIG_FILENAME, to_plain
from sparring.framework.checkpoint import CheckpointManager
from sparring.framework.horizon import log_horizon
from sparring.framework.logger import RunLogger, format_stats
from sparring.config.registry import POLICY_REGISTRY
from sparring.framework.runtime import capture_rng, restore_rng, seed_everything, set_torch_threads
from sparring.worker.collector import SampleCollector
from sparring.worker.env.battle import is_battle_env
from sparring.worker.env.gym_env import evaluator_env_config
from sparring.worker.env.manager import make_env_manager
from sparring.worker.evaluator import Evaluator
from sparring.worker.learner import Learner

# Evaluation envs are seeded away from the collection envs so they never replay the same episodes.
EVAL_SEED_OFFSET = 1_000_003


def prepare_config(config: dict, seed: Optional[int] = None, exp_name: Optional[str] = None,
                   resume: bool = False) -> EasyDict:
    """Compile a config; on resume, reuse the compiled config saved in the experiment dir.

    A resumed run repeats the saved config; where the config given now differs, a warning names
    the keys, so a changed value is never dropped unnoticed.
    """
    cfg = compile_config(config, seed=seed, exp_name=exp_name, save=False)
    saved = os.path.join(cfg.exp_name, CONFIG_FILENAME)
    if resume:
        if not os.path.exists(saved):
            raise FileNotFoundError(f'--resume: no compiled config at {saved}; was the run started with '
                                    f'exp_name={cfg.exp_name!r}?')
        given = cfg
        cfg = load_config(saved)
        if given.league is not None or is_battle_env(given.env.type):
            from sparring.framework.league_pipeline import complete_league_config
            complete_league_config(given)  # as the saved one was completed
        changed = config_differences(to_plain(given), to_plain(cfg))
        if changed:
            warnings.warn(f'--resume uses the saved config {saved}; the config given now differs at '
                          f'{", ".join(changed[:8])}{" ..." if len(changed) > 8 else ""}, which is ignored',
                          stacklevel=2)
    else:
        earlier = CheckpointManager(cfg.exp_name).latest()
        if earlier is not None:
            # A new run would mix with the earlier one's checkpoints and stored parameters.
            raise FileExistsError(f'experiment dir {cfg.exp_name!r} holds an earlier run (checkpoint {earlier}); '
                                  f'expected a new directory: pass resume=True (--resume) to continue that run, '
                                  f'or another exp_name (--exp-name), or delete the directory')
        save_config(cfg, cfg.exp_name)
    return cfg


def config_differences(a, b, path: str = '') -> list:
    """Dotted keys where two plain configs differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            sub = f'{path}.{key}' if path else key
            out += [sub] if key not in a or key not in b else config_differences(a[key], b[key], sub)
        return out
    return [] if a == b else [path]


def serial_pipeline(config: dict, seed: Optional[int] = None, exp_name: Optional[str] = None,
                    resume: bool = False, max_env_steps: Optional[int] = None) -> dict:
    """Train; returns a summary dict (steps, seconds, last evaluation).

    A single-agent env trains one policy; a battle env (or a config with a ``league`` section)
    trains a league of players (:mod:`sparring.framework.league_pipeline`).
    """
    cfg = prepare_config(config, seed=seed, exp_name=exp_name, resume=resume)
    if max_env_steps is not None:
        cfg.train.max_env_steps = int(max_env_steps)
    set_torch_threads(cfg.torch_threads)
    seed_everything(cfg.seed)
    if cfg.league is not None or is_battle_env(cfg.env.type):
        from sparring.framework.league_pipeline import league_pipeline
        return league_pipeline(cfg, resume=resume)
    exp_dir = cfg.exp_name
    ckpt = CheckpointManager(exp_dir)
    state = ckpt.load_latest() if resume else None

    # On resume the envs start new episodes, seeded by how far the run got, so they neither
    # replay the first episodes nor depend on anything but the seed and the checkpoint.
    env_seed = cfg.seed + (state['collector']['env_steps'] if state else 0)
    collector_env = make_env_manager(cfg.env, cfg.env.collector_env_num, env_seed, cfg.import_names)
    # Evaluation envs report raw returns of whole episodes (no reward scaling, no life-loss ends).
    evaluator_env = make_env_manager(evaluator_env_config(cfg.env, cfg.import_names), cfg.env.evaluator_env_num,
                                     env_seed + EVAL_SEED_OFFSET, cfg.import_names)
    try:
        policy = POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, collector_env.observation_space,
                                                      collector_env.action_space, seed=cfg.seed)
        collector = SampleCollector(collector_env, policy, cfg.policy.collect.n_steps)
        learner = Learner(policy, cfg.train.max_env_steps)
        evaluator = Evaluator(evaluator_env, policy, cfg.env.n_evaluator_episodes, cfg.env.stop_value)
        if state is not None:
            learner.load_state_dict(state['learner'])
            collector.load_state_dict(state['collector'])
            evaluator.history = list(state['evaluator_history'])
            restore_rng(state['rng'])
        with RunLogger(exp_dir, cfg.train.max_env_steps, cfg.train.tensorboard, cfg.train.progress_bar,
                       initial_env_steps=collector.env_steps) as log:
            log_horizon(log, cfg)
            return _train_loop(cfg, collector, learner, evaluator, ckpt, log,
                               elapsed_before=state['wall_seconds'] if state else 0.0)
    finally:
        collector_env.close()
        evaluator_env.close()


def out_of_time(train, started: float) -> bool:
    """Whether ``train.max_wall_seconds`` (0: unlimited) has passed since ``started``."""
    return bool(train.max_wall_seconds) and time.perf_counter() - started >= train.max_wall_seconds


def _train_loop(cfg, collector, learner, evaluator, ckpt, log, elapsed_before: float) -> dict:
    started = time.perf_counter() - elapsed_before
    train = cfg.train
    last_eval = None
    reached = None  # (env_steps, seconds) when the stop value was first reached
    recent_returns: list = []

    def save_checkpoint() -> str:
        return ckpt.save(dict(learner=learner.state_dict(), collector=collector.state_dict(),
                              evaluator_history=evaluator.history, rng=capture_rng(),
                              wall_seconds=time.perf_counter() - started), learner.train_iter)

    while collector.env_steps < train.max_env_steps:
        chunk = collector.collect()
        stats = learner.train(chunk)
        it, steps = learner.train_iter, collector.env_steps
        recent_returns = (recent_returns + chunk.episode_returns)[-100:]
        elapsed = time.perf_counter() - started
        stats.update(collect_steps_per_second=collector.last_steps_per_second,
                     steps_per_second=steps / max(elapsed, 1e-9))
        if recent_returns:
            stats['episode_return'] = sum(recent_returns) / len(recent_returns)
        log.scalars(stats, steps, prefix='train/')
        log.progress(steps)
        line = dict(it=it, steps=steps, ret=stats.get('episode_return'), vloss=stats.get('value_loss'),
                    kl=stats.get('approx_kl'), ent=stats.get('entropy'), eps=stats.get('epsilon'),
                    sps=int(stats['steps_per_second']))  # each policy reports the figures it has
        if train.eval_every_iters and it % train.eval_every_iters == 0:
            last_eval = evaluator.evaluate()
            log.scalars(dict(return_mean=last_eval.mean, return_std=last_eval.std), steps, prefix='eval/')
            line.update(eval=last_eval.mean, eval_std=last_eval.std)
        log.line(format_stats(line))
        if train.checkpoint_every_iters and it % train.checkpoint_every_iters == 0:
            save_checkpoint()
        if last_eval is not None and last_eval.reached_stop_value:
            reached = (steps, time.perf_counter() - started)
            log.line(f'stop value {cfg.env.stop_value} reached: eval mean {last_eval.mean:.2f} '
                     f'after {steps} env steps, {reached[1]:.1f} s')
            break
        if out_of_time(train, started):
            log.line(f'time budget of {train.max_wall_seconds:.0f} s spent after {steps} env steps')
            break
    if last_eval is None or evaluator.history[-1][0] != learner.policy.version:
        last_eval = evaluator.evaluate()
        log.line(f'final evaluation: mean {last_eval.mean:.2f} +- {last_eval.std:.2f}')
        if reached is None and last_eval.reached_stop_value:
            reached = (collector.env_steps, time.perf_counter() - started)
    path = save_checkpoint()
    log.line(f'checkpoint: {path}')
    return dict(exp_dir=cfg.exp_name, env_steps=collector.env_steps, train_iter=learner.train_iter,
                wall_seconds=time.perf_counter() - started, eval_mean=last_eval.mean, eval_std=last_eval.std,
                reached_stop_value=reached is not None,
                stop_env_steps=reached[0] if reached else None, stop_seconds=reached[1] if reached else None,
                collect_steps_per_second=collector.env_steps / max(collector.collect_seconds, 1e-9),
                checkpoint=path)
