"""mkdocs hook: make this checkout importable as ``sparring`` and fill in the generated reference pages.

A page holding the line ``<!-- generated: config-reference -->``, ``<!-- generated: cli-reference -->`` or
``<!-- generated: results-records -->`` gets that line replaced, at build time, by the tables
:mod:`config_reference`, :mod:`cli_reference` and :mod:`results_records` (in ``docs/gen/``) make from the code
and the benchmark records; a line ``<!-- table: NAME -->`` (the results page) by the table
:mod:`results_tables` makes from the records. Nothing generated is written into the repository, so the
reference cannot fall behind the code, nor the results page behind the records.

The repository root is the package itself, so the hook builds ``build/docs-pkg/sparring`` out of links to
the root's ``__init__.py`` and its package folders (those holding an ``__init__.py``), and puts
``build/docs-pkg`` first on ``sys.path``: the pages (and mkdocstrings, whose ``paths`` name the same
folder) document this checkout, whatever else is installed. Only the package folders are linked, not the
root itself: mkdocstrings walks what it finds there, and a link to the root would hand it ``.venv`` (a
whole site-packages) and ``build/`` (the link again, without end).
"""
from __future__ import annotations

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PKG_DIR = os.path.join(ROOT, 'build', 'docs-pkg')
GEN_DIR = os.path.join(ROOT, 'docs', 'gen')
MARKERS = {
    '<!-- generated: config-reference -->': ('config_reference', 'render'),
    '<!-- generated: cli-reference -->': ('cli_reference', 'render'),
    '<!-- generated: results-records -->': ('results_records', 'render'),
}


def link_package() -> str:
    """``build/docs-pkg/sparring``: links to the root's ``__init__.py`` and package folders; returns
    ``build/docs-pkg``."""
    package = os.path.join(PKG_DIR, 'sparring')
    if os.path.islink(package):
        os.remove(package)  # the layout of an earlier build: one link to the whole root
    os.makedirs(package, exist_ok=True)
    wanted = ['__init__.py'] + sorted(name for name in os.listdir(ROOT)
                                      if os.path.isfile(os.path.join(ROOT, name, '__init__.py')))
    for name in wanted:
        link, target = os.path.join(package, name), os.path.join(ROOT, name)
        if os.path.islink(link) and os.path.realpath(link) != os.path.realpath(target):
            os.remove(link)  # a copy of the checkout moved elsewhere
        if not os.path.lexists(link):
            os.symlink(os.path.relpath(target, package), link)
    return PKG_DIR


def on_config(config):
    for folder in (GEN_DIR, link_package()):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    loaded = sys.modules.get('sparring')
    if loaded is not None and os.path.dirname(os.path.realpath(loaded.__file__)) != os.path.realpath(ROOT):
        raise RuntimeError(f'docs hook: sparring was already imported from {loaded.__file__}, not from {ROOT}')
    return config


# ``<!-- record: NAME -->``: a line naming the benchmark record a results section comes from, with its stamps.
RECORD_MARKER = re.compile(r'<!-- record: (\w+) -->')
# ``<!-- table: NAME -->`` on a line of its own: a results table generated from the records
# (docs/gen/results_tables.py). A page may quote the marker inside a line (the contributing page does).
TABLE_MARKER = re.compile(r'^<!-- table: (\w+) -->$', re.M)


def on_page_markdown(markdown, page, config, files):
    for marker, (module_name, function) in MARKERS.items():
        if marker in markdown:
            module = __import__(module_name)
            markdown = markdown.replace(marker, getattr(module, function)())
    if RECORD_MARKER.search(markdown):
        import results_records
        where = page.file.src_uri if page is not None else 'results.md'
        markdown = RECORD_MARKER.sub(lambda m: results_records.record_line(m.group(1), page=where), markdown)
    if TABLE_MARKER.search(markdown):
        import results_tables
        records = results_tables.Records()
        markdown = TABLE_MARKER.sub(lambda m: results_tables.render(m.group(1), records), markdown)
    return markdown


# The docstrings use Sphinx roles (:class:`~sparring.league.Player`); rendered as Markdown they would
# show the role's name before the code. Keep the code, and only the last part of a ``~`` name.
SPHINX_ROLE = re.compile(r':(?:class|func|meth|mod|attr|data|exc|obj):(<code>)(~?)([^<]*)(</code>)')


def on_page_content(html, page, config, files):
    return SPHINX_ROLE.sub(lambda m: m.group(1) + (m.group(3).rsplit('.', 1)[-1] if m.group(2) else m.group(3))
                           + m.group(4), html)
