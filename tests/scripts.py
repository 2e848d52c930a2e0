"""Loading a file that is not in a package (a benchmark script, another test module's helpers) as a module."""
from __future__ import annotations

import importlib.util
import os
from types import ModuleType

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_script(relative_path: str, name: str = '') -> ModuleType:
    """The file at ``relative_path`` from the repository root (``benchmarks/soak.py``,
    ``tests/framework/test_parallel_commander.py``) executed as a module named ``name`` (its file name by default).

    Each call executes the file afresh."""
    path = os.path.join(ROOT, relative_path)
    spec = importlib.util.spec_from_file_location(name or os.path.splitext(os.path.basename(path))[0], path)
    if spec is None or spec.loader is None:
        raise ImportError(f'load_script: {path} is not a Python file')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
