"""Ready league configs for pursuit and evasion."""
