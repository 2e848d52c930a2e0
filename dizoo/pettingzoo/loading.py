"""Building a PettingZoo env by name: the optional import, the name lookup (with close names), AEC or parallel.

A name is the env's module path under ``pettingzoo``, e.g. ``'classic.connect_four_v3'``
(``'classic/connect_four_v3'`` also works), or ``'package.module:factory'`` for an env outside
PettingZoo that follows its API. PettingZoo >= 1.27 builds registered envs through its registry
(``pettingzoo.make``; importing the old ``pettingzoo.classic.connect_four_v3`` modules is deprecated
there); older versions import the module and call its ``env()`` or ``parallel_env()``.
"""
from __future__ import annotations

import difflib
import importlib
import importlib.util
import pkgutil
import re
from typing import Any, List, Mapping, Tuple

from sparring.config.schema import ConfigError
from sparring.config.optional import require

INSTALL_HINT = 'pip install sparring[pettingzoo]'
APIS = ('auto', 'aec', 'parallel')
_FACTORY_OF_API = {'aec': 'env', 'parallel': 'parallel_env'}
_VERSIONED = re.compile(r'^[A-Za-z0-9_]+_v[0-9]+$')



def require_pettingzoo():
    """The ``pettingzoo`` module, or an ImportError that says how to install it."""
    return require('pettingzoo', 'PettingZoo envs', 'pettingzoo', package='pettingzoo[classic]')


def make_pettingzoo_env(name: str, kwargs: Mapping[str, Any], api: str = 'auto',
                        label: str = 'config key "env.env"') -> Tuple[Any, str]:
    """``(env, api)``: the PettingZoo env ``name`` built with ``kwargs``, and whether it is ``'aec'`` or
    ``'parallel'``. ``api='auto'`` prefers the AEC version when an env has both."""
    pettingzoo = require_pettingzoo()
    if api not in APIS:
        raise ConfigError(f'config key "env.api": expected one of {", ".join(map(repr, APIS))}, got {api!r}')
    if ':' in name:
        factory = _entry_point(name, label)
    elif hasattr(pettingzoo, 'aec_registry'):
        factory = _registered_factory(pettingzoo, name, api, label)
    else:
        factory = _module_factory(name, api, label)
    try:
        env = factory(**dict(kwargs))
    except TypeError as err:  # most often an unknown keyword argument
        raise ConfigError(f'config key "env.kwargs": building PettingZoo env {name!r} with {dict(kwargs)} raised '
                          f'TypeError: {err}') from err
    if isinstance(env, pettingzoo.AECEnv):
        built = 'aec'
    elif isinstance(env, pettingzoo.ParallelEnv):
        built = 'parallel'
    else:
        raise ConfigError(f'{label}: {name!r} built a {type(env).__name__}; expected a PettingZoo AECEnv or '
                          f'ParallelEnv')
    if api != 'auto' and built != api:
        raise ConfigError(f'config key "env.api": {name!r} built a {built} env; expected {api}')
    return env, built


def _entry_point(name: str, label: str):
    module_name, _, attribute = name.partition(':')
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        raise ConfigError(f'{label}: cannot import module {module_name!r} of {name!r} ({err})') from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ConfigError(f'{label}: module {module_name!r} has no callable {attribute!r}; expected '
                          f'\'package.module:factory\' returning a PettingZoo env')
    return factory


def _registered_factory(pettingzoo, name: str, api: str, label: str):
    from pettingzoo.env_registry.exceptions import PettingZooRegistryError
    env_id = name.replace('.', '/', 1)
    kinds = ('aec', 'parallel') if api == 'auto' else (api,)
    reasons = []
    for kind in kinds:
        try:
            spec = pettingzoo.spec(kind, env_id)
        except PettingZooRegistryError as err:
            reasons.append(str(err).split(' Available environments:')[0])
            continue
        return lambda **kwargs: pettingzoo.make(kind, spec, **kwargs)
    known = sorted({_dotted(env_id) for kind in kinds for env_id in _registry(pettingzoo, kind)})
    raise ConfigError(_unknown_message(name, known, label, f' PettingZoo says: {reasons[-1]}'))


def _registry(pettingzoo, kind: str) -> Mapping:
    return pettingzoo.aec_registry if kind == 'aec' else pettingzoo.parallel_registry


def _dotted(env_id: str) -> str:
    """A registry id ``'classic/connect_four-v3'`` as the module-path name ``'classic.connect_four_v3'``."""
    return re.sub(r'-v(?=[0-9]+$)', '_v', env_id.replace('/', '.', 1))


def _module_factory(name: str, api: str, label: str):
    module_name = 'pettingzoo.' + name.replace('/', '.')
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is not None and not module_name.startswith(err.name):
            raise  # the env exists but needs a package that is missing: PettingZoo's own message says which
        raise ConfigError(_unknown_message(name, _module_names(), label, '')) from None
    for kind in (('aec', 'parallel') if api == 'auto' else (api,)):
        factory = getattr(module, _FACTORY_OF_API[kind], None)
        if callable(factory):
            return factory
    raise ConfigError(f'{label}: module {module_name!r} has no {" or ".join(_FACTORY_OF_API.values())}() for the '
                      f'{api} API; expected a PettingZoo env module')


def _module_names() -> List[str]:
    """Env modules (``family.name_vN``) of an installed PettingZoo without a registry, found without importing them."""
    import pettingzoo
    names = []
    for family in pkgutil.iter_modules(pettingzoo.__path__):
        if not family.ispkg:
            continue
        package = importlib.util.find_spec(f'pettingzoo.{family.name}')
        for module in pkgutil.iter_modules((package and package.submodule_search_locations) or []):
            if _VERSIONED.match(module.name):
                names.append(f'{family.name}.{module.name}')
    return sorted(names)


def _unknown_message(name: str, known: List[str], label: str, detail: str) -> str:
    close = difflib.get_close_matches(name.replace('/', '.'), known, n=5, cutoff=0.5)
    hint = f' Close names: {", ".join(close)}.' if close else ''
    return (f'{label}: unknown PettingZoo env {name!r}.{hint}{detail} Expected a module path under pettingzoo '
            f'such as \'classic.connect_four_v3\', or \'package.module:factory\'.')
