"""Where a run's ``import_names`` come from, so every command finds them again from any folder.

``sparring train`` makes the config file's folder importable (:func:`make_importable`), so a config
may name modules that sit next to it. Run setup records, for each module of ``import_names``, the
folder of the import path it was found in (:func:`record_import_folders`, ``import_folders.json``
beside ``config.json``). Every command that opens the run later (eval, play, export, report, exploit,
surgery, ``load_player``) calls :func:`import_run_modules` first: it puts those folders on the import
path and imports the modules, or says in one line which module is gone from which folder.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Dict, Iterable, Optional

from sparring.worker.run_files import write_atomically

IMPORT_FOLDERS_FILE = 'import_folders.json'


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


def import_run_modules(run_dir: str) -> None:
    """Import the run's recorded modules from the folders it found them in (a run without the record: nothing).

    A module not found there any more raises ModuleNotFoundError naming it and the folder; an import that
    fails inside the module keeps its own error.
    """
    path = os.path.join(run_dir, IMPORT_FOLDERS_FILE)
    if not os.path.exists(path):
        return
    with open(path, encoding='utf-8') as f:
        folders = json.load(f)
    if not isinstance(folders, dict):
        raise ValueError(f'{path}: expected a JSON object {{module: folder}}, got {type(folders).__name__}')
    for name, folder in folders.items():
        if os.path.isdir(folder) and folder not in sys.path:
            make_importable(folder)
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name is None or not (name == err.name or name.startswith(err.name + '.')):
                raise  # the module is there but imports something missing: its own message says what
            raise ModuleNotFoundError(f'import_names: module {name!r} not found; the run imported it from '
                                      f'{folder}', name=name) from None
