"""Where a run's ``import_names`` come from, and opening a run directory without running its author's code.

``sparring train`` makes the config file's folder importable (:func:`make_importable`), so a config
may name modules that sit next to it. Run setup records, for each module of ``import_names``, the
folder of the import path it was found in (:func:`record_import_folders`, ``import_folders.json``
beside ``config.json``). Every command that opens the run later (eval, play, export, report, exploit,
surgery, ``load_player``) reads its config through :func:`load_run_config`: the config file is read as
data and checked, then its modules are imported (:func:`import_run_modules`), or one line says which
module is gone from which folder.

A run directory may come from someone else, and importing a module runs it. So by default a run's
modules come only from the user's own environment (what ``import`` finds on the path as it is) and from
recorded folders outside the run directory; a module that would be loaded from inside the run directory
(a recorded folder there, or the working directory when it is the run's) is refused with one line
naming it, where it would come from, and how to allow it: ``trust_code=True`` (``--trust-run-code`` on
the command line), which imports the run's modules from wherever it recorded them.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from typing import Dict, Iterable, List, Optional

from sparring.config import load_config
from sparring.config.compile import CONFIG_FILENAME, CompiledConfig
from sparring.config.schema import ConfigError
from sparring.worker.run_files import write_atomically

IMPORT_FOLDERS_FILE = 'import_folders.json'
TRUST_HINT = 'pass --trust-run-code (trust_code=True in Python) if you trust whoever made the run'
# What a command needs of a run's compiled config before it can use it, by section: the type it must be.
RUN_CONFIG_SECTIONS = dict(exp_name=str, seed=int, import_names=list, env=dict, policy=dict, train=dict,
                           parallel=dict)


class UntrustedRunCode(ImportError):
    """A run directory would run its author's code (a module it ships), which the user has not allowed."""


def make_importable(folder: str) -> None:
    """Put ``folder`` first on the module search path, here and in the processes this one starts."""
    folder = os.path.abspath(folder)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    paths = os.environ.get('PYTHONPATH', '').split(os.pathsep)
    if folder not in paths:
        os.environ['PYTHONPATH'] = os.pathsep.join([folder] + [p for p in paths if p])


def import_root(name: str) -> Optional[str]:
    """The folder of the import path that the imported module ``name`` was found in (None if it has no file)."""
    module = sys.modules.get(name)
    path = getattr(module, '__file__', None)
    if not path:
        return None
    folder = os.path.dirname(os.path.abspath(path))
    # 'a.b.c' sits two folders below the root, and one more when it is a package's __init__.py.
    levels = name.count('.') + (os.path.splitext(os.path.basename(path))[0] == '__init__')
    for _ in range(levels):
        folder = os.path.dirname(folder)
    return folder


def record_import_folders(import_names: Iterable[str], exp_dir: str) -> Dict[str, str]:
    """Write where each (already imported) module of ``import_names`` came from into ``exp_dir``; sparring's
    own modules need no record, and a run without modules of its user gets no file."""
    folders = {name: root for name in import_names
               if not name.startswith('sparring.') and (root := import_root(name)) is not None}
    if folders:
        write_atomically(os.path.join(exp_dir, IMPORT_FOLDERS_FILE),
                         json.dumps(folders, indent=2, sort_keys=True) + '\n')
    return folders


def load_run_config(run_dir: str, trust_code: bool = False) -> CompiledConfig:
    """The compiled config of the run in ``run_dir``, its modules imported (see the module docstring).

    ``config.json`` is read as data first: a file that is not the JSON object of a compiled config raises
    ConfigError naming the file and what is wrong, before anything is imported.
    """
    path = os.path.join(run_dir, CONFIG_FILENAME)
    try:
        with open(path, encoding='utf-8') as f:
            raw = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ConfigError(f'{path}: not a compiled config ({err}); expected the JSON object a run saves') from None
    if not isinstance(raw, dict):
        raise ConfigError(f'{path}: expected a JSON object (the compiled config a run saves), got '
                          f'{type(raw).__name__}')
    wrong = [f'{key} ({kind.__name__})' for key, kind in RUN_CONFIG_SECTIONS.items()
             if not isinstance(raw.get(key), kind) or isinstance(raw.get(key), bool)]
    wrong += [f'{key}.type (str)' for key in ('env', 'policy')
              if isinstance(raw.get(key), dict) and not isinstance(raw[key].get('type'), str)]
    if not wrong and not all(isinstance(name, str) for name in raw['import_names']):
        wrong.append('import_names (a list of module names)')
    if wrong:
        raise ConfigError(f'{path}: not a compiled config: missing or wrong {", ".join(wrong)}; expected the '
                          f'config.json a run saves')
    import_run_modules(run_dir, raw['import_names'], trust_code=trust_code)
    return load_config(path)


def import_run_modules(run_dir: str, import_names: Iterable[str] = (), trust_code: bool = False) -> None:
    """Import the run's modules: those recorded in its ``import_folders.json`` from the folders it found them in,
    and ``import_names``; without ``trust_code``, none from inside the run directory (UntrustedRunCode).

    A module not found raises ModuleNotFoundError naming it and the folder; an import that fails inside the
    module keeps its own error.
    """
    folders = _recorded_folders(run_dir)
    names = list(folders) + [name for name in import_names if name not in folders]
    for name in names:
        if name.startswith('sparring.'):
            continue  # sparring's own
        folder = folders.get(name)
        if folder is not None and os.path.isdir(folder) and (
                trust_code or (os.path.isabs(folder) and not _inside(folder, run_dir))):
            make_importable(folder)
        if name in sys.modules:
            continue  # imported already: nothing of the run's runs
        if not trust_code:
            _refuse_run_code(name, folder, run_dir)
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name is None or not (name == err.name or name.startswith(err.name + '.')):
                raise  # the module is there but imports something missing: its own message says what
            raise ModuleNotFoundError(f'import_names: module {name!r} not found' + (
                f'; the run imported it from {folder}' if folder else ' on the import path'), name=name) from None


def _recorded_folders(run_dir: str) -> Dict[str, str]:
    path = os.path.join(run_dir, IMPORT_FOLDERS_FILE)
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding='utf-8') as f:
            folders = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ConfigError(f'{path}: not valid JSON ({err}); expected {{module: folder}}') from None
    if not isinstance(folders, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in folders.items()):
        raise ConfigError(f'{path}: expected a JSON object {{module: folder}} of strings, got '
                          f'{type(folders).__name__}')
    return folders


def _refuse_run_code(name: str, folder: Optional[str], run_dir: str) -> None:
    """UntrustedRunCode if importing ``name`` now would load a file from inside ``run_dir`` (nothing is run to
    find out: only the top-level package is looked up, and found by its finder, not imported)."""
    where = _locations(name.split('.')[0])
    inside = [place for place in where if _inside(place, run_dir)]
    if inside:
        source = inside[0]
    elif not where and folder is not None and (not os.path.isabs(folder) or _inside(folder, run_dir)):
        source = folder  # not on the path as it is: only the run's own folder holds it
    else:
        return
    raise UntrustedRunCode(f'{run_dir}: opening the run would import module {name!r} from {source}, inside the run '
                           f'directory, and run its code; {TRUST_HINT}, or install the module yourself',
                           name=name)


def _locations(top: str) -> List[str]:
    """Where the top-level module ``top`` would be loaded from (its file, or a namespace package's folders)."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.origin and os.path.isabs(spec.origin):
        return [spec.origin]
    return [str(p) for p in (spec.submodule_search_locations or ())]


def _inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or below it, links resolved (a relative path is taken from the cwd)."""
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
