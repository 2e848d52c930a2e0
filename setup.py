"""Install every top-level folder of this repository under the single import root ``sparring``.

The repository root is the package ``sparring`` itself, so ``framework/`` becomes
``sparring.framework`` and so on; ``tests/`` and ``benchmarks/`` are not installed.
"""
from setuptools import setup
from setuptools.command.build_py import build_py

SUBPACKAGES = ('framework', 'league', 'policy', 'worker', 'config', 'dizoo')


def _find_packages():
    import os
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
    name='sparring',
    version='0.1.0',
    description='Reinforcement learning by self-play in a league',
    python_requires='>=3.10',
    package_dir={'sparring': '.'},
    packages=_find_packages(),
    cmdclass={'build_py': _BuildPy},
    include_package_data=False,
    install_requires=[
        'torch>=2.1',
        'numpy>=1.24',
        'gymnasium>=0.29',
        'easydict>=1.10',
        'tensorboardX>=2.6',
        'pyzmq>=25',
        'tqdm>=4.60',
    ],
    extras_require={
        'test': ['pytest>=7', 'pexpect>=4.8'],  # pexpect: `sparring play` driven through a pseudo-terminal
        'league': ['trueskill>=0.4.5', 'matplotlib>=3.7', 'scipy>=1.10'],
        'openspiel': ['open_spiel>=2.0'],
        'pettingzoo': ['pettingzoo[classic]>=1.24'],
        'atari': ['gymnasium[atari]'],  # ale-py, which ships the ROMs
        'mujoco': ['gymnasium[mujoco]'],  # mujoco and what Gymnasium's MuJoCo envs import
        'export': ['onnx>=1.15', 'onnxruntime>=1.17'],  # `sparring export --format onnx` and running the file
        'ray': ['ray>=2.9'],  # parallel.launcher='ray': workers as actors on a Ray cluster
        'bench': ['stable-baselines3>=2.3'],  # benchmarks/vs_sb3.py: the side-by-side comparison
    },
    entry_points={'console_scripts': ['sparring=sparring.framework.cli:main']},
)
