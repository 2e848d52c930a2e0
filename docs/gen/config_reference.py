"""Generate the config reference (docs/reference/config.md) from the code, so that it cannot drift.

Every key comes from a ``default_config()`` that the config compiler merges: the top-level keys of
:func:`sparring.config.compile.base_config`, then every class registered for a typed section (``env``,
``env.manager``, ``policy``, ``policy.model``, ``league``), the player types of ``league.players``, the
reference players, ``battle.collect_search`` and the bots' options. For each key it shows the default
(by calling ``default_config()``), the type the compiler checks (inferred from the default, as
``compile_config`` does), the constraint from ``config_constraints`` and the meaning, read from the
comment beside the key in the source (:mod:`source_comments`). Nothing is made up: a key without such a
comment fails the build (:class:`UndocumentedKeys`, naming each key and the class whose ``default_config``
sets it), so a new key arrives with its meaning.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from source_comments import key_comments

class UndocumentedKeys(RuntimeError):
    """Config keys with no comment where their default is set."""
# Keys whose dict value is one setting, not a section (a player's ``branch_probs``, replaced whole; a
# league's ``active_players``, a count per player type), so its entries are not separate keys.
WHOLE_VALUE_KEYS = {'branch_probs', 'active_players'}
# Registered names that a user never writes in a config (the compiler refuses them), with the reason.
NOT_FOR_CONFIGS = {('league', 'single_agent'): 'the league a single-agent run makes for itself'}


@dataclass
class KeyRow:
    path: str
    default: Any
    type_name: str
    allowed: str
    meaning: Optional[str]
    see: str = ''  # a link to the tables of a typed sub-section


@dataclass
class Section:
    """One table: the keys of one class (or of several that share one ``default_config``)."""

    title: str
    anchor: str
    prefix: str
    names: List[str]
    classes: List[type]
    rows: List[KeyRow] = field(default_factory=list)
    note: str = ''


# -- reading one class ----------------------------------------------------------------------------

def flatten(defaults: dict, prefix: str, stop_at: Sequence[str] = ()) -> List[Tuple[str, Any]]:
    """``(dotted path, default)`` of every key; a non-empty dict is opened unless it is a whole value or
    a typed sub-section (``stop_at``, documented on its own)."""
    out = []
    for key, value in defaults.items():
        path = f'{prefix}.{key}' if prefix else str(key)
        if isinstance(value, dict) and value and key not in WHOLE_VALUE_KEYS and path not in stop_at:
            out.extend(flatten(value, path, stop_at))
        else:
            out.append((path, value))
    return out


def type_of(default: Any, check: Optional[Callable]) -> str:
    """The type ``compile_config`` checks a value against (see ``_check_type``); a ``None`` default takes
    its type from the key's constraint where one says it."""
    if isinstance(default, bool):
        return 'bool'
    if isinstance(default, int):
        return 'int'
    if isinstance(default, float):
        return 'float'
    if isinstance(default, str):
        return 'str'
    if isinstance(default, (list, tuple)):
        return 'list'
    if isinstance(default, dict):
        return 'dict' if default else 'dict (free-form)'
    if default is None:
        for part in _check_parts(check):
            if re.fullmatch(r'\w+( or \w+)* or None', part):  # an of_type(..., allow_none=True)
                return part
        return 'any (default None)'
    return type(default).__name__


def describe_check(check: Callable) -> str:
    """A constraint in words: its ``description``, those of the checks an ``all_of`` combines, or the
    first line of the check function's docstring."""
    parts = _check_parts(check)
    if parts:
        return '; '.join(parts)
    doc = (getattr(check, '__doc__', None) or '').strip().splitlines()
    return doc[0] if doc else 'checked by ' + getattr(check, '__name__', 'a function')


def _check_parts(check: Optional[Callable]) -> List[str]:
    """The descriptions of a check, or of the checks an ``all_of`` holds (read from its closure, since
    ``schema.all_of`` sets no description of its own)."""
    if check is None:
        return []
    text = getattr(check, 'description', None)
    if text:
        if getattr(check, 'allow_none', False) and not text.endswith('or None'):
            text += ', or None'
        return [text]
    parts = []
    for cell in getattr(check, '__closure__', None) or ():
        try:
            inner = cell.cell_contents
        except ValueError:
            continue
        if isinstance(inner, tuple) and inner and all(callable(c) for c in inner):
            for c in inner:
                parts.extend(_check_parts(c))
    return parts


def class_rows(cls: type, prefix: str, comments: Dict[str, str], constraints: Dict[str, Callable],
               defaults: Optional[dict] = None, stop_at: Sequence[str] = ()) -> List[KeyRow]:
    defaults = cls.default_config() if defaults is None else defaults
    rows = []
    relative_stops = [s[len(prefix) + 1:] if prefix else s for s in stop_at if not prefix or s.startswith(prefix + '.')]
    for rel, value in flatten(defaults, '', relative_stops):
        check = constraints.get(rel)
        path = f'{prefix}.{rel}' if prefix else rel
        # A typed sub-section's keys depend on its type and have their own tables.
        see = f'[{path}](#{_section_anchor(path)})' if path in stop_at else ''
        rows.append(KeyRow(path=path, default=value, type_name=type_of(value, check),
                           allowed=describe_check(check) if check is not None else '',
                           meaning=comments.get(rel) or None, see=see))
    return rows


def _section_anchor(path: str) -> str:
    return 'section-' + path.replace('.', '-')


def comments_of(cls: type) -> Dict[str, str]:
    """The source comments of ``cls.default_config`` and of every ancestor's (a subclass's win)."""
    merged: Dict[str, str] = {}
    for klass in cls.__mro__:
        if 'default_config' in vars(klass):
            for key, text in key_comments(vars(klass)['default_config']).items():
                merged.setdefault(key, text)
    return merged


# -- the whole reference --------------------------------------------------------------------------

def collect_sections() -> Tuple[List[Section], List[Tuple[str, str]]]:
    """Every table of the reference, and the (registry, name) pairs left out with their reason."""
    from sparring.config import compile as comp
    from sparring.config import registry as reg
    from sparring.league.player import ReferencePlayer

    reg.ensure_builtins()
    typed = sorted(comp.TYPED_SECTIONS)
    sections: List[Section] = []
    base = Section('Top level', 'top-level', '', [], [])
    base.rows = class_rows(_FunctionDefaults(comp.base_config), '', key_comments(comp.base_config),
                           comp.BASE_CONSTRAINTS, stop_at=typed)
    sections.append(base)
    left_out = []
    for path in typed:
        registry = comp.TYPED_SECTIONS[path]
        for group in _groups(registry, path, left_out):
            sections.append(_typed_section(path, group))
    player_registry = reg.PLAYER_REGISTRY
    for names, cls in _grouped_classes(player_registry, player_registry.names()):
        prefix = f'league.players.{names[0]}' if len(names) == 1 else 'league.players.<type>'
        section = Section(f'Player: {", ".join(names)}', f'player-{names[0]}', prefix, names, [cls])
        section.rows = class_rows(cls, prefix, comments_of(cls), getattr(cls, 'config_constraints', {}))
        sections.append(section)
    ref = Section('Reference player (an item of league.reference_players)', 'reference-player-keys',
                  'league.reference_players[i]', [], [ReferencePlayer])
    ref.rows = class_rows(ReferencePlayer, ref.prefix, comments_of(ReferencePlayer),
                          getattr(ReferencePlayer, 'config_constraints', {}))
    sections.append(ref)
    try:
        from sparring.dizoo.board_games.search_acting import KEY, SearchActing
    except ImportError:
        pass
    else:
        search = Section(f'Expert iteration: {KEY}', 'collect-search-keys', KEY, [], [SearchActing])
        search.rows = class_rows(SearchActing, KEY, comments_of(SearchActing), SearchActing.config_constraints)
        search.note = f'`{KEY}` is `None` (off) or a dict of these keys.'
        sections.append(search)
    for names, cls in _grouped_classes(reg.BOT_REGISTRY, reg.BOT_REGISTRY.names()):
        section = Section(f'Bot: {", ".join(names)}', f'bot-{names[0]}', '', names, [cls])
        section.rows = class_rows(cls, '', comments_of(cls), getattr(cls, 'config_constraints', {}))
        section.note = ('Options go in the bot reference: '
                        f'`\'bot:{names[0]}?key=value&key=value\'`.' if section.rows else '')
        sections.append(section)
    return sections, left_out


class _FunctionDefaults:
    """A defaults function dressed as a class for :func:`class_rows`."""

    def __init__(self, fn: Callable[[], dict]) -> None:
        self.default_config = fn


def _groups(registry, path: str, left_out: List[Tuple[str, str]]) -> List[Tuple[List[str], List[type]]]:
    kind = path.split('.')[-1]
    names = []
    for name in registry.names():
        if not _ours(registry.get(name)):
            continue
        reason = NOT_FOR_CONFIGS.get((kind, name))
        if reason:
            left_out.append((f'{path}.type={name!r}', reason))
        else:
            names.append(name)
    # Classes that share one default_config function (the MuJoCo envs, the classic-control ones) share a
    # table; defaults that differ between them are listed per name.
    by_function: Dict[Any, Tuple[List[str], List[type]]] = {}
    for name in names:
        cls = registry.get(name)
        fn = getattr(getattr(cls, 'default_config', None), '__func__', None)
        group = by_function.setdefault((fn, _shape(cls)), ([], []))
        group[0].append(name)
        group[1].append(cls)
    return list(by_function.values())


def _ours(cls) -> bool:
    """Whether sparring defines the class: the reference documents sparring, not what a user's module (or a
    test) registered in the same process."""
    return cls.__module__.split('.')[0] == 'sparring'


def _shape(cls) -> Tuple[str, ...]:
    return tuple(path for path, _ in flatten(cls.default_config(), ''))


def _grouped_classes(registry, names: Sequence[str]) -> List[Tuple[List[str], type]]:
    """One entry per class (a class registered under several names is listed once)."""
    seen: Dict[type, List[str]] = {}
    for name in names:
        if _ours(registry.get(name)):
            seen.setdefault(registry.get(name), []).append(name)
    return [(names, cls) for cls, names in seen.items()]


def _typed_section(path: str, group: Tuple[List[str], List[type]]) -> Section:
    from sparring.config import compile as comp
    names, classes = group
    title = f'{path}.type: ' + ', '.join(f"'{n}'" for n in names)
    section = Section(title, f'{path.replace(".", "-")}-{names[0]}', path, names, classes)
    first = classes[0]
    rows = class_rows(first, path, comments_of(first), getattr(first, 'config_constraints', {}),
                      stop_at=[p for p in comp.TYPED_SECTIONS if p != path])
    if len(classes) > 1:
        per_name = [dict(flatten(c.default_config(), path)) for c in classes]
        for row in rows:
            values = [d.get(row.path) for d in per_name]
            if any(v != values[0] for v in values):
                row.default = _PerName(list(zip(names, values)))
    kind = comp.TYPED_SECTIONS[path].kind
    chooser = KeyRow(path=f'{path}.type', default=_Raw(''), type_name='str',
                     allowed=('for this table ' + ' or '.join(repr(n) for n in names)),
                     meaning=f'the registered name of the {kind} class, which decides the keys of the section')
    section.rows = [chooser] + rows
    return section


@dataclass
class _Raw:
    text: str


@dataclass
class _PerName:
    pairs: List[Tuple[str, Any]]


# -- markdown -------------------------------------------------------------------------------------

def undocumented(sections: List[Section]) -> List[str]:
    """``'key (class)'`` for each key without a meaning."""
    return [f'{row.path} ({", ".join(f"{c.__module__}.{c.__qualname__}" for c in _unique(s.classes)) or "base_config"})'
            for s in sections for row in s.rows if row.meaning is None and not row.see]


def render(sections: Optional[List[Section]] = None, left_out: Optional[List[Tuple[str, str]]] = None) -> str:
    if sections is None:
        sections, left_out = collect_sections()
    missing = undocumented(sections)
    if missing:
        raise UndocumentedKeys(f'{len(missing)} config keys have no comment where their default is set (write one '
                               f'beside the key in default_config(): `key=value,  # what it means`): '
                               + '; '.join(missing))
    rows = [r for s in sections for r in s.rows]
    out = [f'{len(rows)} keys in {len(sections)} tables.', '']
    order = [('Top level', 'top-level', lambda s: s.prefix == '' and not s.names),
             ('Environments (`env`)', _section_anchor('env'), lambda s: s.prefix == 'env'),
             ('Environment managers (`env.manager`)', _section_anchor('env.manager'),
              lambda s: s.prefix == 'env.manager'),
             ('Policies (`policy`)', _section_anchor('policy'), lambda s: s.prefix == 'policy'),
             ('Models (`policy.model`)', _section_anchor('policy.model'), lambda s: s.prefix == 'policy.model'),
             ('Leagues (`league`)', _section_anchor('league'), lambda s: s.prefix == 'league'),
             ('Players (`league.players.<type>`)', 'players', lambda s: s.prefix.startswith('league.players')),
             ('Reference players (`league.reference_players`)', 'reference-players',
              lambda s: s.prefix.startswith('league.reference')),
             ('Expert iteration (`battle.collect_search`)', 'collect-search',
              lambda s: s.prefix == 'battle.collect_search'),
             ('Bots (`bot:<name>?options`)', 'bots', lambda s: s.title.startswith('Bot:'))]
    for heading, anchor, belongs in order:
        chosen = [s for s in sections if belongs(s)]
        if not chosen:
            continue
        out += [f'## {heading} {{ #{anchor} }}', '']
        for section in chosen:
            if heading != 'Top level':
                out += [f'### {_escape(section.title)} {{ #{section.anchor} data-toc-label="{_toc_label(section)}" }}', '']
            out += _section_lines(section)
    if left_out:
        out += ['## Not for configs', '']
        out += [f'- `{name}`: {_escape(reason)}' for name, reason in left_out]
        out.append('')
    return '\n'.join(out)


def _toc_label(section: Section) -> str:
    """A short entry for the page's table of contents: a long group of types by its first few names."""
    names = section.names or [section.title]
    shown = ', '.join(names[:3]) + (f' and {len(names) - 3} more' if len(names) > 3 else '')
    return html.escape(shown, quote=True)


def _section_lines(section: Section) -> List[str]:
    lines = []
    if section.classes:
        where = ', '.join(f'`{c.__module__}.{c.__qualname__}`' for c in _unique(section.classes))
        lines += [f'Defined by {where}.', '']
    if section.note:
        lines += [section.note, '']
    if not section.rows:
        return lines + ['No options.', '']
    lines += ['| key | default | type and allowed values | meaning |', '|---|---|---|---|']
    for row in section.rows:
        meaning = _escape(row.meaning) if row.meaning else ''
        if row.see:
            joint = ' ' if meaning.endswith('.') else '; ' if meaning else ''
            meaning += f'{joint}{"I" if joint == " " else "i"}ts keys depend on its `type`: see {row.see}'
        kind = _escape(row.type_name)
        if row.allowed and row.allowed != row.type_name:
            kind += f': {_escape(row.allowed)}'
        lines.append(f'| {key_cell(row.path)} | {_default(row.default)} | {kind} | {meaning} |')
    return lines + ['']


def key_cell(path: str) -> str:
    """A key as code that a narrow table may break after its dots (``<wbr>``: nothing is added to copied text)."""
    return '<code>' + html.escape(path).replace('.', '.<wbr>') + '</code>'


def _unique(items):
    seen = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def _default(value: Any) -> str:
    if isinstance(value, _Raw):
        return _escape(value.text)
    if isinstance(value, _PerName):
        return '<br>'.join(f'{name}: `{_cell(repr(v))}`' for name, v in value.pairs)
    return f'`{_cell(repr(value))}`'


def _cell(text: str) -> str:
    """Text inside a code span in a table cell: only the pipe needs escaping."""
    return text.replace('|', '\\|')


def _escape(text: str) -> str:
    """Source text for a table cell: ``code`` (double or single backticks) becomes a code span, the rest
    plain text with no markup read into it."""
    pieces = re.split(r'``(.+?)``|`(.+?)`', text)
    out = []
    for i, piece in enumerate(pieces):
        if piece is None:
            continue
        if i % 3:  # a captured code segment
            out.append(f'`{_cell(piece)}`')
            continue
        out.append(plain_text(piece))
    return ''.join(out)


def plain_text(piece: str) -> str:
    """Text for a markdown table cell, shown as written: HTML and markdown's special characters escaped."""
    piece = html.escape(piece, quote=False)
    for char in '\\*_[]|#':
        piece = piece.replace(char, '\\' + char)
    return piece
