"""``sparring list``: what a config can name (the registered envs, policies, models, players, leagues and
bots, each with the first line of its docstring) and the ready configs under ``dizoo/*/config/``.

Registries fill by import, so the built-in modules are imported first; a user's own modules appear once
something imports them (``sparring list --import MODULE``, a config's ``import_names``), which is why the
listing says so at its end.
"""
from __future__ import annotations

import ast
import glob
import os
import sys
from typing import List, Optional, Tuple

from sparring.config import registry as reg

SECTIONS = ('envs', 'policies', 'models', 'players', 'leagues', 'bots', 'configs')
_REGISTRIES = {'envs': reg.ENV_REGISTRY, 'policies': reg.POLICY_REGISTRY, 'models': reg.MODEL_REGISTRY,
               'players': reg.PLAYER_REGISTRY, 'leagues': reg.LEAGUE_REGISTRY, 'bots': reg.BOT_REGISTRY}
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUMMARY_WIDTH = 100  # a summary longer than this is cut, so each entry stays one line


def first_line(doc: Optional[str]) -> str:
    """The first sentence-line of a docstring, cut to ``SUMMARY_WIDTH`` characters ('' without one)."""
    lines = [line.strip() for line in (doc or '').strip().splitlines()]
    text = lines[0] if lines else ''
    return text if len(text) <= SUMMARY_WIDTH else text[:SUMMARY_WIDTH - 3].rstrip() + '...'


def registered(section: str) -> List[Tuple[str, str]]:
    """``(name, summary)`` of every entry of one registry section."""
    reg.ensure_builtins()
    registry = _REGISTRIES[section]
    return [(name, _summary(registry.get(name))) for name in registry.names()]


def _summary(obj) -> str:
    """An entry's own docstring, else its module's (several envs share one module that explains them)."""
    own = first_line(getattr(obj, '__doc__', None))
    if own:
        return own
    module = sys.modules.get(getattr(obj, '__module__', ''), None)
    return first_line(getattr(module, '__doc__', None))


def ready_configs(root: str = PACKAGE_ROOT) -> List[Tuple[str, str]]:
    """``(path, summary)`` of each ready config file, its summary from the module docstring, read without
    running the file (a config may import heavy extras)."""
    out = []
    for path in sorted(glob.glob(os.path.join(root, 'dizoo', '*', 'config', '*.py'))):
        if os.path.basename(path) == '__init__.py':
            continue
        with open(path) as f:
            doc = ast.get_docstring(ast.parse(f.read(), filename=path))
        out.append((_shown_path(path), first_line(doc)))
    return out


def _shown_path(path: str) -> str:
    """The path as a user can pass it to ``sparring train`` from where they are."""
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative


def listing(section: Optional[str] = None) -> str:
    """The text ``sparring list [section]`` prints: one block per section, one line per entry."""
    if section is not None and section not in SECTIONS:
        raise ValueError(f'sparring list: expected one of {", ".join(SECTIONS)}, got {section!r}')
    blocks = []
    for name in [section] if section else SECTIONS:
        entries = ready_configs() if name == 'configs' else registered(name)
        width = max((len(key) for key, _ in entries), default=0)
        lines = [f'{name}:'] + [f'  {key.ljust(width)}  {summary}'.rstrip() for key, summary in entries]
        blocks.append('\n'.join(lines))
    if section != 'configs':
        blocks.append('(your own classes appear once their module is imported: sparring list --import MODULE; a '
                      'run imports the modules of its config\'s import_names)')
    return '\n\n'.join(blocks)
