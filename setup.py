"""Build hook: install every top-level folder of this repository under the single import root ``sparring``.

Why this file exists next to pyproject.toml (which holds all the metadata): the repository root IS the
package ``sparring``, so ``framework/`` becomes ``sparring.framework`` and so on. pyproject.toml alone can
map a root package onto ``.`` but cannot list its sub-packages from the folders nor keep ``setup.py``,
``tests/`` and ``benchmarks/`` out of the wheel; that takes the few lines below.
"""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

SUBPACKAGES = ('framework', 'league', 'policy', 'worker', 'config', 'dizoo')


def _find_packages():
    found = ['sparring']
    for top in SUBPACKAGES:
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if not d.startswith(('.', '__'))]
            if '__init__.py' in filenames:
                found.append('sparring.' + dirpath.replace(os.sep, '.'))
    return found


class _BuildPy(build_py):
    """The root package is the repository root: ship only its ``__init__.py``, not ``setup.py``."""

    def find_package_modules(self, package, package_dir):
        modules = super().find_package_modules(package, package_dir)
        if package == 'sparring':
            modules = [m for m in modules if m[1] == '__init__']
        return modules


setup(
    package_dir={'sparring': '.'},
    packages=_find_packages(),
    cmdclass={'build_py': _BuildPy},
)
