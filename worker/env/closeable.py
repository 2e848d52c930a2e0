"""The closing protocol shared by env managers and vectorised battle envs.

``close()`` is idempotent and calls the subclass's ``_close()`` once; the object is a context
manager; use after close raises :class:`EnvError`; garbage collection closes it quietly.
"""
from __future__ import annotations

from sparring.worker.env.errors import EnvError


class Closeable:
    closed = True  # until a subclass's __init__ opens it

    def _close(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release the envs (and any workers); safe to call more than once."""
        if getattr(self, 'closed', True):
            return
        self.closed = True
        self._close()

    def _check_open(self) -> None:
        if self.closed:
            raise EnvError(f'{self!r} is closed')

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 -- at interpreter shutdown there is no one left to report to
            pass


def close_all(envs, label: str) -> None:
    """Close every env, then raise the first error any of them raised while closing."""
    first_error = None
    for env in envs:
        try:
            env.close()
        except Exception as err:  # noqa: BLE001 -- keep closing the others; reported below
            first_error = first_error or err
    if first_error is not None:
        raise EnvError(f'{label}: an env raised {type(first_error).__name__} in close(): {first_error}') \
            from first_error
