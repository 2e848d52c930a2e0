"""Moved to :mod:`sparring.worker.checkpoint` (learner workers write checkpoints too); this name stays."""
from sparring.worker.checkpoint import CheckpointManager  # noqa: F401
