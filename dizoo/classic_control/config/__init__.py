"""Ready configs for the classic-control envs: ``config`` dicts to pass to ``serial_pipeline`` or ``sparring train``."""
