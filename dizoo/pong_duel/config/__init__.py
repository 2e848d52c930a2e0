"""Ready league configs for Pong duel."""
