"""Ctrl-C and SIGTERM end a run the same way in every mode: what was done is saved, then the run stops
with the resume hint. A second signal while it saves cannot cut the save short.

A KeyboardInterrupt raised where Python cannot pass it on (a finaliser or a callback that was running
when the signal came) is lost, and the run would go on; so each signal is also noted, and a loop
that calls :func:`raise_if_stopped` at its step boundaries stops at the next one regardless.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import List


_noted: List[int] = []  # signals that came inside terminate_as_interrupt, in order
# The first signal that stopped the last run, kept after it ends: the CLI's exit status names it (130 for
# SIGINT, 143 for SIGTERM, as a shell reports a process killed by that signal).
_stopped_by: List[int] = []


@contextlib.contextmanager
def terminate_as_interrupt():
    """Inside, SIGINT and SIGTERM raise KeyboardInterrupt (as Ctrl-C does) and are noted for
    :func:`raise_if_stopped` (only the main thread can handle signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        _noted.append(signum)
        if not _stopped_by:
            _stopped_by.append(signum)
        raise KeyboardInterrupt(f'signal {signum}')

    _noted.clear()
    _stopped_by.clear()
    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _noted.clear()


def stopping_signal() -> int:
    """The signal that stopped the last run inside :func:`terminate_as_interrupt` (SIGINT when none was noted:
    a KeyboardInterrupt raised some other way is Ctrl-C's)."""
    return _stopped_by[0] if _stopped_by else int(signal.SIGINT)


def exit_status(signum: int) -> int:
    """The exit status of a command stopped cleanly by ``signum``: 128 + its number, as shells report it."""
    return 128 + int(signum)


def raise_if_stopped() -> None:
    """Raise KeyboardInterrupt if a signal came whose own KeyboardInterrupt was lost on the way."""
    if _noted:
        raise KeyboardInterrupt(f'signal {_noted[0]}')


@contextlib.contextmanager
def shielded():
    """Inside, SIGINT and SIGTERM are noted, not acted on (a save in progress finishes); yields the list of
    signals that came."""
    came: List[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    previous = {sig: signal.signal(sig, lambda signum, frame: came.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield came
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
