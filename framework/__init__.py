"""Framework, the top floor: the run coordinator, the serial and parallel entry points, the commander,
launchers and the CLI. The registries live on the ground floor (:mod:`sparring.config.registry`). Entry points
are imported lazily, so ``import sparring.framework`` stays cheap.
"""


def serial_pipeline(config, **kwargs):
    """See :func:`sparring.framework.serial.serial_pipeline`."""
    from sparring.framework.serial import serial_pipeline as _run
    return _run(config, **kwargs)


def parallel_pipeline(config, **kwargs):
    """See :func:`sparring.framework.parallel.parallel_pipeline`."""
    from sparring.framework.parallel import parallel_pipeline as _run
    return _run(config, **kwargs)
