"""Find the Python examples of the documentation and run one page's examples as a script.

A page's ```` ```python ```` blocks run in order, in one namespace, as the reader would paste them. A
block that only shows something (a fragment, a call that needs a trained run) is marked by the line
``<!-- docs: skip -->`` right before its fence. Run as ``python doc_examples.py PAGE``: it executes the
page's blocks in the current directory and exits non-zero on the first failure, naming the page and the
line of the block.
"""
from __future__ import annotations

import os
import re
import sys
import traceback
from dataclasses import dataclass
from typing import List

SKIP_MARK = '<!-- docs: skip -->'
FENCE_OPEN = re.compile(r'^(?P<indent>[ ]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$')
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the block's first code line
    code: str
    skipped: bool


def blocks_of(text: str, page: str = '<page>') -> List[Block]:
    """Every ```` ```python ```` block of a markdown text, in order, with its skip mark."""
    lines = text.splitlines()
    found: List[Block] = []
    i = 0
    while i < len(lines):
        match = FENCE_OPEN.match(lines[i])
        if not match:
            i += 1
            continue
        fence, info = match.group('fence'), match.group('info').strip()
        indent = len(match.group('indent'))
        end = i + 1
        while end < len(lines) and not (lines[end].strip().startswith(fence[0] * len(fence))
                                        and set(lines[end].strip()) == {fence[0]}):
            end += 1
        language = info.split()[0].lstrip('{.').rstrip('}') if info else ''
        if language == 'python':
            previous = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), '')
            body = '\n'.join(line[indent:] if line[:indent].isspace() else line for line in lines[i + 1:end])
            found.append(Block(page, i + 2, body + '\n', previous == SKIP_MARK))
        i = end + 1
    return found


def doc_pages(root: str = ROOT) -> List[str]:
    """README.md and every page under docs/, as paths relative to ``root``."""
    pages = ['README.md'] if os.path.isfile(os.path.join(root, 'README.md')) else []
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, 'docs')):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith('.md'):
                pages.append(os.path.relpath(os.path.join(dirpath, name), root))
    return pages


def run_page(path: str) -> int:
    """Execute the page's runnable blocks in order in one namespace; 0 if all ran."""
    with open(path) as f:
        blocks = [b for b in blocks_of(f.read(), path) if not b.skipped]
    # The namespace of a script: classes the examples define get a module name, as pickling and the
    # registries' re-registration check expect.
    namespace = {'__name__': '__main__'}
    for block in blocks:
        try:
            exec(compile(block.code, f'{path} (block at line {block.line})', 'exec'), namespace)
        except BaseException:  # noqa: BLE001 -- any failure of an example, SystemExit included, is reported
            traceback.print_exc()
            print(f'docs example failed: {path}, the block at line {block.line}', file=sys.stderr)
            return 1
    print(f'{path}: {len(blocks)} blocks ran')
    return 0


if __name__ == '__main__':
    sys.exit(run_page(sys.argv[1]))
