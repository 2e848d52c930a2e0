"""Moved to :mod:`sparring.worker.runtime` (every worker process sets itself up); this name stays."""
from sparring.worker.runtime import capture_rng, restore_rng, seed_everything, set_torch_threads  # noqa: F401
