"""Generate the command-line reference (docs/reference/cli.md) from the argparse parser of ``sparring``.

It reads the parser :mod:`sparring.framework.cli` builds, so every subcommand, argument, default and
help text on the page is the one the program has.
"""
from __future__ import annotations

import argparse
import re
from typing import List, Sequence

from config_reference import plain_text


def render() -> str:
    from sparring.framework import cli
    parser = cli._build_parser()
    out = [f'`{parser.prog}`: {_text(parser.description or "")}', '', '```text', _usage(parser), '```', '']
    out += _arguments(parser)
    subcommands = _subparsers(parser)
    out += ['| command | what it does |', '|---|---|']
    out += [f'| [`{name}`](#{parser.prog}-{name}) | {_text(help_text)} |' for name, help_text, _ in subcommands]
    out.append('')
    for name, help_text, sub in subcommands:
        out += [f'## `{parser.prog} {name}` {{ #{parser.prog}-{name} }}', '', _text(help_text[:1].upper() + help_text[1:])
                + '.', '', '```text', _usage(sub), '```', '']
        out += _arguments(sub, shown=('--debug',))
    return '\n'.join(out)


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=80)  # fits a code block on the page
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or '' for choice in action._choices_actions}
            return [(name, helps.get(name, ''), sub) for name, sub in action.choices.items()]
    return []


def _arguments(parser: argparse.ArgumentParser, shown: Sequence[str] = ()) -> List[str]:
    """The argument table, leaving out hidden arguments and the options in ``shown`` (``--debug``, which
    every subcommand repeats from the top)."""
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings and set(action.option_strings) <= set(shown):
            continue
        names = ', '.join(f'`{n}`' for n in action.option_strings) or f'`{action.dest}`'
        if action.metavar and action.option_strings:
            names += f' `{action.metavar}`'
        rows.append(f'| {names} | {_required(action)} | {_default(action)} | {_text(action.help or "")} |')
    if not rows:
        return []
    return ['| argument | required | default | meaning |', '|---|---|---|---|', *rows, '']


def _required(action: argparse.Action) -> str:
    return 'yes' if action.required or not action.option_strings else ''


def _default(action: argparse.Action) -> str:
    parts = []
    if action.choices is not None:
        parts.append('one of ' + ', '.join(f'`{c}`' for c in action.choices))
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        parts.append('a flag')
    elif action.default not in (None, argparse.SUPPRESS) and action.option_strings:
        parts.append(f'`{action.default!r}`')
    return '; '.join(parts)


def _text(text: str) -> str:
    """Help text for a table cell: `code` stays code, the rest is plain text."""
    pieces = re.split(r'(`[^`]+`)', text)
    out = []
    for piece in pieces:
        if piece.startswith('`') and piece.endswith('`') and len(piece) > 1:
            out.append(piece.replace('|', '\\|'))
            continue
        out.append(plain_text(piece))
    return ''.join(out)
