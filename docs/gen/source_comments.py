"""Read the meaning of each config key from the comments beside it in the source of ``default_config()``.

sparring documents a config key where it sets its default: ``lr=3e-4,  # its Adam learning rate``, or a
comment block on the lines just above the key. :func:`key_comments` walks the source of a function that
builds a defaults dict (following the functions it calls and the module constants it unpacks, such as
``**SEARCH_DEFAULTS``) and returns ``{dotted key: comment}``. It never invents a meaning: a key with no
comment is simply absent from the result.

Attribution rules, in order:

* a comment at the end of a line belongs to the key whose value is the last code on that line (so
  ``trueskill=dict(..., draw_probability=0.1),  # needs the trueskill package`` is about ``trueskill``);
* a comment at the end of a line where no value ends belongs to the key that opens on that line
  (``rating=dict(  # ...``);
* a block of whole-line comments belongs to the next key, unless that key has a comment of its own or
  the previous key's comment ends in ``:``, ``;`` or ``,`` (then it continues the previous one).
"""
from __future__ import annotations

import ast
import inspect
import io
import textwrap
import tokenize
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional


@dataclass
class _KeySite:
    path: str
    first_line: int
    end_line: int
    end_col: int


def key_comments(func: Callable) -> Dict[str, str]:
    """``{dotted key: comment}`` for the dict keys ``func`` builds, its callees and constants included."""
    out: Dict[str, str] = {}
    _collect_function(func, '', out, seen=set())
    return out


def _collect_function(func: Callable, prefix: str, out: Dict[str, str], seen: set) -> None:
    func = inspect.unwrap(getattr(func, '__func__', func))
    if not inspect.isfunction(func) or (func, prefix) in seen:
        return
    seen.add((func, prefix))  # a helper called for several sections (one per role) documents each of them
    try:
        lines, _ = inspect.getsourcelines(func)
    except (OSError, TypeError):
        return
    source = textwrap.dedent(''.join(lines))
    _collect_source(source, prefix, out, seen, func.__globals__)


def _collect_source(source: str, prefix: str, out: Dict[str, str], seen: set, namespace: dict) -> None:
    tree = ast.parse(source)
    sites: List[_KeySite] = []
    for node in tree.body:
        _visit(node, prefix, sites, out, seen, namespace)
    for path, text in _attribute(source, sites).items():
        out.setdefault(path, text)  # the first definition seen (a subclass's) wins


def _visit(node: ast.AST, prefix: str, sites: List[_KeySite], out: Dict[str, str], seen: set,
           namespace: dict) -> None:
    """Record every key a dict display or ``dict(...)`` call defines, with its dotted path."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == 'dict':
        for arg in node.args:
            _visit(arg, prefix, sites, out, seen, namespace)
        for kw in node.keywords:
            if kw.arg is None:  # **CONSTANT: its keys join this level
                _visit(kw.value, prefix, sites, out, seen, namespace)
            else:
                _add_site(kw.arg, kw.lineno, kw.value, prefix, sites, out, seen, namespace)
        return
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if key is None:
                _visit(value, prefix, sites, out, seen, namespace)
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                _add_site(key.value, key.lineno, value, prefix, sites, out, seen, namespace)
        return
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        _follow_name(node.id, prefix, out, seen, namespace)
        return
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        target = namespace.get(node.func.id)
        if inspect.isfunction(target):  # a helper that builds the defaults (ppo_default_config())
            _collect_function(target, prefix, out, seen)
    for child in ast.iter_child_nodes(node):
        _visit(child, prefix, sites, out, seen, namespace)


def _add_site(key: str, line: int, value: ast.AST, prefix: str, sites: List[_KeySite], out: Dict[str, str],
              seen: set, namespace: dict) -> None:
    path = f'{prefix}.{key}' if prefix else key
    sites.append(_KeySite(path, line, value.end_lineno, value.end_col_offset))
    _visit(value, path, sites, out, seen, namespace)


def _follow_name(name: str, prefix: str, out: Dict[str, str], seen: set, namespace: dict) -> None:
    """A module-level constant holding defaults (``AVERAGE_DEFAULTS``): read the comments where it is set."""
    value = namespace.get(name)
    if not isinstance(value, dict) or ('const', id(value)) in seen:
        return
    seen.add(('const', id(value)))
    for path, module_vars in _candidate_sources(name, value, namespace):
        try:
            with open(path) as f:
                source = f.read()
            tree = ast.parse(source)
        except (OSError, SyntaxError):
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                # Parse the module whole, so that line numbers (by which comments are read) match it.
                _collect_node(source, node.value, prefix, out, seen, module_vars)
                return


def _candidate_sources(name: str, value: dict, namespace: dict):
    """(source file, module globals) of the namespace's own module, then of the modules holding the same
    object under ``name`` (where it was imported from)."""
    import sys
    own = namespace.get('__file__')
    if own:
        yield own, namespace
    for module in list(sys.modules.values()):
        module_vars = getattr(module, '__dict__', None)
        path = getattr(module, '__file__', None)
        if module_vars is None or not path or path == own or module_vars.get(name) is not value:
            continue
        yield path, module_vars


def _collect_node(source: str, node: ast.AST, prefix: str, out: Dict[str, str], seen: set, namespace: dict) -> None:
    sites: List[_KeySite] = []
    _visit(node, prefix, sites, out, seen, namespace)
    # Only the comments inside the constant's own lines: the module's later comments are about other things.
    for path, text in _attribute(source, sites, lines=(node.lineno, node.end_lineno or node.lineno)).items():
        out.setdefault(path, text)


def _attribute(source: str, sites: List[_KeySite], lines: Optional[tuple] = None) -> Dict[str, str]:
    trailing: Dict[int, str] = {}
    whole_line: Dict[int, str] = {}
    code_lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            if lines is not None and not lines[0] <= tok.start[0] <= lines[1]:
                continue
            text = tok.string.lstrip('#').strip()
            if tok.line[:tok.start[1]].strip():
                trailing[tok.start[0]] = text
            else:
                whole_line[tok.start[0]] = text
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                              tokenize.ENDMARKER):
            code_lines.add(tok.start[0])
    found: Dict[str, str] = {}
    # Trailing comments: the key whose value ends last on the line, else the key that opens there.
    for line, text in trailing.items():
        ending = [s for s in sites if s.end_line == line]
        if ending:
            owner: Optional[_KeySite] = max(ending, key=lambda s: s.end_col)
        else:
            opening = [s for s in sites if s.first_line == line]
            owner = opening[-1] if opening else None
        if owner is not None:
            found[owner.path] = _join(found.get(owner.path), text)
    # Whole-line comment blocks: the next key, or a continuation of the previous one.
    ordered = sorted(sites, key=lambda s: s.first_line)
    for block_start, block in _blocks(whole_line):
        block_end = block_start + len(block) - 1
        before = [s for s in ordered if s.first_line < block_start]
        after = [s for s in ordered if s.first_line > block_end]
        previous = before[-1] if before else None
        following = after[0] if after and after[0].first_line == _next_code_line(code_lines, block_end) else None
        text = ' '.join(block)
        continues = previous is not None and found.get(previous.path, '').rstrip().endswith((':', ';', ','))
        if following is not None and not continues and following.path not in found:
            found[following.path] = text
        elif previous is not None and previous.path in found and (continues or following is None
                                                                   or following.path in found):
            found[previous.path] = _join(found[previous.path], text)
    return found


def _blocks(whole_line: Dict[int, str]):
    block: List[str] = []
    start = None
    for line in sorted(whole_line):
        if start is not None and line == start + len(block):
            block.append(whole_line[line])
            continue
        if block:
            yield start, block
        start, block = line, [whole_line[line]]
    if block:
        yield start, block


def _next_code_line(code_lines: set, after: int) -> Optional[int]:
    later = [line for line in code_lines if line > after]
    return min(later) if later else None


def _join(first: Optional[str], second: str) -> str:
    return second if not first else f'{first} {second}'
