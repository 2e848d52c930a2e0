"""Registers the ``docs`` marker: the tests that run the documentation's examples (``-m docs`` selects
them, ``-m 'not docs'`` leaves them out)."""


def pytest_configure(config):
    config.addinivalue_line('markers', 'docs: runs the Python examples of README.md and docs/ (seconds per page)')
