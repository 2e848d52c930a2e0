"""Ready configs for Atari games: ``config`` dicts to pass to ``serial_pipeline`` or ``sparring train``."""
