"""Merging and checking league and player config sections with the rules of ``compile_config``.

Player sub-configs (``league.players.<type>``) are free-form to ``compile_config`` (a user may
add a player type), so the league checks them itself: the same deep merge over the class's
``default_config()``, the same type checks, ``config_constraints`` and ``validate_config``,
and error messages naming the full dotted key.
"""
from __future__ import annotations

import copy
import math
from typing import Any, Dict, Mapping

from easydict import EasyDict

from sparring.config.compile import merge_class_section  # the one merge/type-check rule
from sparring.config.schema import ConfigError


def merge_section(cls, user: Any, path: str, replace_keys=()) -> dict:
    """``user`` merged over ``cls.default_config()`` and checked; keys in ``replace_keys`` are
    taken whole from ``user`` when given (a dict of branch names must not be merged key by key).
    The caller runs its own ``validate_config``, whose signature may carry the path.
    """
    if user is not None and not isinstance(user, Mapping):
        raise ConfigError(f'config key "{path}": expected a dict, got {type(user).__name__} {user!r}')
    return merge_class_section(cls, dict(user or {}), path, replace_keys=replace_keys, validate=False)


def to_plain(obj: Any) -> Any:
    """A deep copy made only of dicts, lists and scalars (EasyDicts and tuples converted)."""
    if isinstance(obj, Mapping):
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    return copy.deepcopy(obj)


def to_easydict(obj: Mapping) -> EasyDict:
    return EasyDict(to_plain(obj))


def check_probabilities(probs: Any, path: str, tolerance: float = 1e-6) -> Dict[str, float]:
    """A dict name -> probability: numbers >= 0 that sum to 1 (within ``tolerance``)."""
    if not isinstance(probs, Mapping) or not probs:
        raise ConfigError(f'config key "{path}": expected a non-empty dict of name -> probability, got {probs!r}')
    out = {}
    for name, p in probs.items():
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or p < 0:
            raise ConfigError(f'config key "{path}.{name}": expected a probability >= 0, got {p!r}')
        out[str(name)] = float(p)
    total = sum(out.values())
    if abs(total - 1.0) > tolerance:
        raise ConfigError(f'config key "{path}": probabilities must sum to 1, got {total!r} ({out})')
    return out
