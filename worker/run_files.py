"""Writing a run's own files (logs, the journal, the commander's address, reports) without following links.

An experiment directory may be shared, or come from someone else: a symbolic link planted where sparring writes
(``log.txt``, ``commander/address``, a worker's log) would make a run truncate or append to any file its user may
write. Every writer of run files opens them here: the last component of the path is opened with ``O_NOFOLLOW``
(a link there is refused with :class:`LinkedRunFile`, naming it), and whole-file rewrites go to a new temporary
file (``O_EXCL``, never an existing one) renamed over the target, which replaces a link rather than writing
through it. A run refuses to start in a directory whose own folders (``commander/``, ``workers/...``) are links.

A write that fails because the disk is full (or the user's quota spent) raises :class:`StorageFailure`: one line
naming the file, the disk it is on and the space left there. A whole-file rewrite that fails leaves the old file in
place and no temporary file behind; the caller stops rather than go on with state it could not keep.
"""
from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from typing import IO, Iterator

_FLAGS = {'a': os.O_WRONLY | os.O_CREAT | os.O_APPEND, 'w': os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
          'r+': os.O_RDWR | os.O_CREAT}


RUN_DIRS = ('commander', 'workers', 'params', 'ckpt', 'tb')  # the folders a run writes into


class LinkedRunFile(FileExistsError):
    """A symbolic link where a run writes one of its files."""


DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class StorageFailure(OSError):
    """A run file could not be written or made durable (the disk is full, or it failed): what the process holds
    that is not on the disk yet must not be acknowledged, snapshotted or built on; it stops, and ``--resume``
    continues from what is on the disk once the cause is fixed."""


def storage_failure(path: str, err: OSError, doing: str = 'writing') -> StorageFailure:
    """The one line saying that ``doing`` ``path`` failed with ``err``, on which disk, and how much space is left."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        usage = shutil.disk_usage(directory)
        space = f'{_size(usage.free)} free of {_size(usage.total)}'
    except OSError:
        space = 'free space unknown'
    what = 'the disk is full' if err.errno in DISK_FULL else (err.strerror or type(err).__name__)
    failure = StorageFailure(f'{doing} {path} failed: {what} (the disk of {_mount_point(directory)}: {space}); '
                             f'nothing that is not on the disk was acknowledged. Free space (or fix the disk), then '
                             f'resume the run')
    failure.errno = err.errno
    return failure


def _mount_point(path: str) -> str:
    path = os.path.realpath(path)
    while not os.path.ismount(path):
        path = os.path.dirname(path)
    return path


def _size(n: float) -> str:
    for power, unit in enumerate(('bytes', 'kB', 'MB', 'GB')):
        if n < 10_000 * 1000 ** power or unit == 'GB':
            return f'{n / 1000 ** power:.{1 if power else 0}f} {unit}'
    raise AssertionError('unreachable')


def sync_directory(directory: str) -> None:
    """Make the names created, renamed or removed in ``directory`` durable (a rename is not, until this)."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, 'O_DIRECTORY', 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def run_file_fd(path: str, mode: str = 'a') -> int:
    """A file descriptor of ``path`` opened for ``mode`` without following a link: 'a' (append), 'w' (truncate) or
    'r+' (read and write in place); each creates the file if it is missing ('b' is ignored)."""
    flags = _FLAGS[mode.replace('b', '')] | os.O_NOFOLLOW | getattr(os, 'O_CLOEXEC', 0)
    try:
        return os.open(path, flags, 0o644)
    except OSError as err:
        if err.errno == errno.ELOOP or os.path.islink(path):
            raise LinkedRunFile(f'{path} is a symbolic link (to {os.readlink(path)!r}); sparring writes a run\'s '
                                f'files only in place, never through a link. Expected a regular file or none: '
                                f'remove the link, or use an experiment directory of your own') from None
        raise


def open_run_file(path: str, mode: str = 'a', encoding: str = 'utf-8') -> IO:
    """``open(path, mode)`` for a run file, refusing a link (see the module)."""
    fd = run_file_fd(path, mode)
    return os.fdopen(fd, mode, encoding=None if 'b' in mode else encoding)


def refuse_linked_dirs(exp_dir: str, names=None) -> None:
    """:class:`LinkedRunFile` if a folder a run writes into (``names`` under ``exp_dir``, each worker's folder and its
    checkpoints) is a symbolic link: ``O_NOFOLLOW`` guards only a path's last component. The experiment directory
    itself may be one."""
    names = RUN_DIRS if names is None else names
    found = [os.path.join(exp_dir, name) for name in names]
    workers = os.path.join(exp_dir, 'workers')
    if os.path.isdir(workers) and not os.path.islink(workers):
        each = [os.path.join(workers, name) for name in sorted(os.listdir(workers))]
        found += each + [os.path.join(path, 'ckpt') for path in each]
    for path in found:
        if os.path.islink(path):
            raise LinkedRunFile(f'{path} is a symbolic link (to {os.readlink(path)!r}); sparring writes a run\'s files '
                                f'only in folders of the experiment directory itself. Expected a folder or none: '
                                f'remove the link, or use an experiment directory of your own')


@contextlib.contextmanager
def atomic_replacement(path: str, mode: str = 'w', durable: bool = False) -> Iterator[IO]:
    """A new temporary file beside ``path``, renamed over it when the block ends without error (a crash
    leaves the old file or the new one; a link at ``path`` is replaced, not written through); removed
    otherwise. ``durable``: its bytes reach the disk before the rename, and the rename before the return.
    A full disk is a :class:`StorageFailure` (the old file stays)."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(path) + '.', suffix='.tmp', dir=directory)
        with os.fdopen(fd, mode, encoding=None if 'b' in mode else 'utf-8') as f:
            yield f
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
        if durable:
            sync_directory(directory)
    except BaseException as err:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(err, OSError) and not isinstance(err, StorageFailure) and err.errno in DISK_FULL:
            raise storage_failure(path, err) from err
        raise


def write_atomically(path: str, text: str) -> str:
    """Replace ``path`` with ``text`` (see :func:`atomic_replacement`)."""
    with atomic_replacement(path) as f:
        f.write(text)
    return path
