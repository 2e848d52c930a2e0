"""Framework: registries, the serial and parallel entry points, checkpoints, logging and the CLI.

Entry points are imported lazily so that ``import sparring.framework.registry`` (needed by every
other package) does not pull in the workers and policies.
"""
from sparring.framework.registry import (BOT_REGISTRY, ENV_MANAGER_REGISTRY, ENV_REGISTRY, LEAGUE_REGISTRY, MODEL_REGISTRY,
                                         PLAYER_REGISTRY, POLICY_REGISTRY, Registry, RegistryError)


def serial_pipeline(config, **kwargs):
    """See :func:`sparring.framework.serial.serial_pipeline`."""
    from sparring.framework.serial import serial_pipeline as _run
    return _run(config, **kwargs)


def parallel_pipeline(config, **kwargs):
    """See :func:`sparring.framework.parallel.parallel_pipeline`."""
    from sparring.framework.parallel import parallel_pipeline as _run
    return _run(config, **kwargs)
