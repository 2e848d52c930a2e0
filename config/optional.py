"""Optional dependencies: import one, or raise an ImportError that names the extra to install."""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Optional


def require(module: str, feature: str, extra: str, package: Optional[str] = None) -> ModuleType:
    """``module`` imported, or ImportError: "<feature> need(s) the <package> package ... pip install sparring[<extra>]"."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        package = package or module
        raise ImportError(f'{feature} need the {package} package, which is not installed: '
                          f'pip install sparring[{extra}] (or pip install "{package}")') from err
