"""Name -> class registries, so that a config can pick a class by a string.

``ENV_REGISTRY.register('name')`` decorates a class; ``ENV_REGISTRY.get('name')`` returns it, or
raises :class:`RegistryError` listing the registered names closest to the one asked for.
User packages register themselves by being imported: a config lists them in ``import_names``
and :func:`import_modules` imports them before anything is looked up.
"""
from __future__ import annotations

import difflib
import importlib
from typing import Callable, Dict, Iterable, List, Optional


class RegistryError(KeyError):
    """An unknown or duplicate registry name."""

    def __str__(self) -> str:  # KeyError would print the message with quotes around it
        return str(self.args[0]) if self.args else ''


class Registry:
    """A mapping from names to classes (or factories) of one kind."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: Dict[str, Callable] = {}

    def register(self, name: str, obj: Optional[Callable] = None, force: bool = False):
        """Register ``obj`` under ``name``; without ``obj``, return a class decorator."""
        if not isinstance(name, str) or not name:
            raise RegistryError(f'{self.kind} registry: a name must be a non-empty string, got {name!r}')

        def _add(target: Callable) -> Callable:
            existing = self._entries.get(name)
            if existing is not None and existing is not target and not force:
                # Re-importing the same module (e.g. under two paths) yields a new class with the
                # same qualified name: that is a re-registration, not a clash.
                same = (getattr(existing, '__qualname__', None) == getattr(target, '__qualname__', 0)
                        and getattr(existing, '__module__', None) == getattr(target, '__module__', 0))
                if not same:
                    raise RegistryError(
                        f'{self.kind} registry: name {name!r} is already taken by '
                        f'{existing.__module__}.{existing.__qualname__}; pass force=True to replace it')
            self._entries[name] = target
            setattr(target, 'registry_name', name)  # noqa: B010 -- lets an instance report the name it was built from
            return target

        return _add if obj is None else _add(obj)

    def get(self, name: str) -> Callable:
        if name not in self._entries:
            raise RegistryError(self._unknown_message(name))
        return self._entries[name]

    def build(self, name: str, *args, **kwargs):
        return self.get(name)(*args, **kwargs)

    def _unknown_message(self, name) -> str:
        known = sorted(self._entries)
        close = difflib.get_close_matches(str(name), known, n=3, cutoff=0.5)
        hint = f' Did you mean {", ".join(repr(c) for c in close)}?' if close else ''
        listing = ', '.join(known) if known else '(none registered; is the module that registers it imported?)'
        return f'unknown {self.kind} {name!r}.{hint} Registered {self.kind} names: {listing}.'

    def names(self) -> List[str]:
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __repr__(self) -> str:
        return f'Registry({self.kind!r}, {self.names()})'


ENV_REGISTRY = Registry('env')
POLICY_REGISTRY = Registry('policy')
MODEL_REGISTRY = Registry('model')
ENV_MANAGER_REGISTRY = Registry('env manager')
PLAYER_REGISTRY = Registry('player')
LEAGUE_REGISTRY = Registry('league')
# Fixed, non-learning opponents (random and heuristic bots) that battle envs ship.
BOT_REGISTRY = Registry('bot')

# Modules that register the built-in classes. They are imported lazily (see ``ensure_builtins``)
# so that ``import sparring.config`` stays cheap and nothing on this floor imports a floor above it.
BUILTIN_MODULES = (
    'sparring.worker.env',
    'sparring.policy',
    'sparring.league',
    'sparring.dizoo',
)


def import_modules(names: Iterable[str]) -> None:
    """Import each named module so that its ``@REGISTRY.register`` decorators run."""
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f'import_names: expected module names (str), got {name!r}')
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as err:
            raise ModuleNotFoundError(
                f'import_names: cannot import module {name!r} listed in the config ({err})') from err


def ensure_builtins() -> None:
    """Import sparring's own registering modules (idempotent)."""
    for name in BUILTIN_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as err:
            # Only tolerate a built-in module that does not exist yet, never a broken import
            # inside one.
            if err.name != name:
                raise
