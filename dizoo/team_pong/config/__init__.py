"""Ready league configs for Team Pong."""
