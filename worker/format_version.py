"""The format version each kind of file sparring writes carries, and the one line that refuses another.

Three formats carry one: state files (checkpoints and parameter files, :mod:`sparring.worker.state_file`),
league state files (:mod:`sparring.league.persistence`: a league's state, a commander's snapshot) and the
commander's journal. Each has its own version, an int from 1, raised whenever what a reader finds in such
a file changes. sparring 0.x keeps no readers for earlier layouts: a file without a version (written before
versions) or with another one is refused, naming the file, its version and what to do instead. Each reader
raises its format's own error type, so a caller that passes over an unreadable file passes over this one too.
"""
from __future__ import annotations

from typing import Any, Optional, Type

from sparring import __version__

FORMAT_KEY = 'format_version'
CONTENT_KEY = 'state'


def stamped(content: Any, version: int) -> dict:
    """``content`` as the document of a file of format ``version``."""
    return {FORMAT_KEY: version, CONTENT_KEY: content}


def unstamped(document: Any, version: int, path: str, what: str, error: Type[Exception]) -> Any:
    """The content of a document :func:`stamped` with ``version``; ``error`` naming the file otherwise."""
    found = document.get(FORMAT_KEY) if isinstance(document, dict) else None
    if type(found) is not int or found != version:
        raise error(refusal(path, what, found, version))
    if CONTENT_KEY not in document:
        raise error(f'{path}: a {what} without its {CONTENT_KEY!r} entry; the file is damaged')
    return document[CONTENT_KEY]


def refusal(path: str, what: str, found: Optional[Any], version: int) -> str:
    """The line refusing ``path``, a ``what`` of format version ``found`` (None: it has none)."""
    written = 'none: written before versions' if found is None else repr(found)[:40]  # a crafted file's, short
    return (f'{path}: a {what} of format version {written}; this sparring ({__version__}) reads version {version}. '
            f'Start a new run directory, or use the sparring version that wrote it')
