"""Ctrl-C and SIGTERM end a run the same way in every mode: what was done is saved, then the run stops
with the resume hint. A second signal while it saves cannot cut the save short."""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import List


@contextlib.contextmanager
def terminate_as_interrupt():
    """Inside, SIGTERM raises KeyboardInterrupt as Ctrl-C does (only the main thread can handle signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f'signal {signum}')

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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
