"""Exceptions raised by environments and environment managers."""


class EnvError(RuntimeError):
    """An environment returned malformed output, raised inside a worker, or was misused."""


class EnvWorkerDiedError(EnvError):
    """An environment subprocess exited (crashed or was killed) while the manager needed it."""
