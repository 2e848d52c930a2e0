"""Value constraints that classes attach to their config keys, beyond the type check.

A class lists them in ``config_constraints``: a dict from a dotted key, relative to its own
config section, to a constraint. A constraint is any callable ``check(value) -> None`` that
raises :class:`ConfigError` (or ``ValueError``) when the value is unacceptable.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Optional


class ConfigError(ValueError):
    """A config key or value that is unknown, of the wrong type or out of range."""


def described(check: Callable[[Any], None], description: str, allow_none: Optional[bool] = None) -> Callable[[Any], None]:
    """``check`` carrying what the config reference says of it: ``description``, and ``allow_none`` where None passes."""
    setattr(check, 'description', description)  # noqa: B010 -- a function's attribute, read by the reference
    if allow_none is not None:
        setattr(check, 'allow_none', allow_none)  # noqa: B010
    return check


def in_range(lo: Optional[float] = None, hi: Optional[float] = None, *, open_lo: bool = False,
             open_hi: bool = False, allow_none: bool = False) -> Callable[[Any], None]:
    """Numbers in [lo, hi]; ``open_lo`` / ``open_hi`` exclude an end; ``None`` means no bound."""
    left = '(' if open_lo else '['
    right = ')' if open_hi else ']'
    text = f'a number in {left}{"-inf" if lo is None else lo}, {"inf" if hi is None else hi}{right}'

    def check(value):
        if value is None and allow_none:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f'expected {text}, got {value!r}')
        too_low = lo is not None and (value <= lo if open_lo else value < lo)
        too_high = hi is not None and (value >= hi if open_hi else value > hi)
        if too_low or too_high or value != value:
            raise ConfigError(f'expected {text}, got {value!r}')

    return described(check, text, allow_none)


def one_of(*choices: Any) -> Callable[[Any], None]:
    def check(value):
        if value not in choices:
            raise ConfigError(f'expected one of {", ".join(repr(c) for c in choices)}, got {value!r}')

    return described(check, f'one of {choices}')


def of_type(*types: type, allow_none: bool = False) -> Callable[[Any], None]:
    """For keys whose default is ``None`` (so the type cannot be inferred from it)."""
    names = ' or '.join(t.__name__ for t in types) + (' or None' if allow_none else '')

    def check(value):
        if value is None and allow_none:
            return
        if isinstance(value, bool) and bool not in types:
            raise ConfigError(f'expected {names}, got {value!r}')
        if not isinstance(value, types):
            raise ConfigError(f'expected {names}, got {type(value).__name__} {value!r}')

    return described(check, names, allow_none)


def non_empty_text() -> Callable[[Any], None]:
    """A string with at least one character (a name, an id)."""
    def check(value):
        if not isinstance(value, str) or not value:
            raise ConfigError(f'expected a non-empty string, got {value!r}')

    return described(check, 'a non-empty string')


def mean_and_spread(allow_none: bool = False) -> Callable[[Any], None]:
    """A pair ``[mu, sigma]`` of numbers with ``sigma > 0`` (a TrueSkill rating)."""
    def check(value):
        if value is None and allow_none:
            return
        numbers = isinstance(value, (list, tuple)) and len(value) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        if not numbers or not value[1] > 0:
            raise ConfigError(f'expected [mu, sigma] with sigma > 0{" or None" if allow_none else ""}, got {value!r}')

    return described(check, '[mu, sigma] with sigma > 0' + (' or None' if allow_none else ''), allow_none)


def sequence_of(item_check: Callable[[Any], None], min_len: int = 0) -> Callable[[Any], None]:
    def check(value):
        if not isinstance(value, (list, tuple)) or len(value) < min_len:
            raise ConfigError(f'expected a list of at least {min_len} items, got {value!r}')
        for item in value:
            item_check(item)

    return check


def all_of(*checks: Callable[[Any], None]) -> Callable[[Any], None]:
    def check(value):
        for c in checks:
            c(value)

    return check


def describe(checks: Iterable[Callable]) -> str:
    return '; '.join(getattr(c, 'description', c.__name__) for c in checks)
