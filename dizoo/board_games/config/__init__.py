"""Ready league configs for the board games."""
