"""Moved to :mod:`sparring.config.optional`; this name stays for user code."""
from sparring.config.optional import require  # noqa: F401
