"""Moved to :mod:`sparring.worker.logger` (every worker logs); this name stays."""
from sparring.worker.logger import RunLogger, format_stats  # noqa: F401
