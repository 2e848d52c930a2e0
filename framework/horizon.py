"""The discount horizon in env steps and in game seconds, as OpenAI Five reports it.

A discount gamma weighs rewards about ``1 / (1 - gamma)`` steps ahead; with T game seconds per
env step the horizon is ``T / (1 - gamma)`` seconds (OpenAI Five: gamma 0.9997 at 0.133 s per
step, a horizon of about 7.4 minutes of game time). An env states its T as ``seconds_per_step``:
a number, or a function of its config section (e.g. a frame skip over a frame rate). Gymnasium
envs are asked for their ``dt`` (MuJoCo, Pendulum, Acrobot) or ``tau`` (CartPole).
"""
from __future__ import annotations

from typing import Mapping, Optional

from sparring.config.registry import ENV_REGISTRY


def discount_horizon(gamma: float, seconds_per_step: Optional[float] = None) -> dict:
    """``{'steps': 1 / (1 - gamma), 'seconds': steps * seconds_per_step or None}`` (inf for gamma 1)."""
    steps = float('inf') if gamma >= 1.0 else 1.0 / (1.0 - gamma)
    seconds = None if seconds_per_step is None else steps * seconds_per_step
    return dict(steps=steps, seconds=seconds)


def env_seconds_per_step(env_cfg: Mapping) -> Optional[float]:
    """The game time one step of the env ``env_cfg`` names takes, or None if it does not say."""
    from sparring.worker.env.gym_env import import_env_modules
    import_env_modules()
    try:
        cls = ENV_REGISTRY.get(env_cfg['type'])
    except (KeyError, LookupError):
        return None
    value = getattr(cls, 'seconds_per_step', None)
    if callable(value):
        value = value(env_cfg)
    if value is None and env_cfg.get('id'):
        value = _gymnasium_step_seconds(env_cfg['id'])
    return None if value is None else float(value)


def _gymnasium_step_seconds(env_id: str) -> Optional[float]:
    try:
        import gymnasium
        env = gymnasium.make(env_id)
    except Exception:  # noqa: BLE001 -- an id Gymnasium cannot build here (missing extra): no horizon in seconds
        return None
    try:
        unwrapped = env.unwrapped
        for attr in ('dt', 'tau'):
            value = getattr(unwrapped, attr, None)
            if isinstance(value, (int, float)) and value > 0:
                return float(value)
        return None
    finally:
        env.close()


def horizon_line(cfg: Mapping) -> Optional[str]:
    """One log line for a compiled config, e.g. ``discount horizon: gamma 0.99 -> 100 steps = 3.3 game
    seconds (0.0333 s per step)``; None when the policy has no ``learn.gamma``."""
    gamma = (cfg.get('policy', {}).get('learn') or {}).get('gamma')
    if gamma is None:
        return None
    seconds_per_step = env_seconds_per_step(cfg['env'])
    horizon = discount_horizon(float(gamma), seconds_per_step)
    line = f'discount horizon: gamma {gamma} -> {horizon["steps"]:.4g} steps'
    if horizon['seconds'] is None:
        return line + ' (the env gives no seconds_per_step)'
    return line + f' = {horizon["seconds"]:.3g} game seconds ({seconds_per_step:.3g} s per step)'


def log_horizon(log, cfg: Mapping) -> None:
    """Write :func:`horizon_line` to a run's log (``log.line``), if the config has a discount."""
    line = horizon_line(cfg)
    if line:
        log.line(line)
