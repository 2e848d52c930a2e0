"""A run records where its import_names came from; the commands that open it import them from there."""
import json
import os
import shutil
import sys

import pytest

from sparring.framework.run_imports import IMPORT_FOLDERS_FILE, import_run_modules, record_import_folders


@pytest.fixture
def clean_path(monkeypatch):
    """sys.path, PYTHONPATH and sys.modules as they were, whatever the test imports."""
    monkeypatch.setattr(sys, 'path', list(sys.path))
    monkeypatch.setenv('PYTHONPATH', os.environ.get('PYTHONPATH', ''))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(('envcheck_game', 'envcheck_pkg')):
            del sys.modules[name]


def _forget(*names):
    for name in names:
        sys.modules.pop(name, None)


def test_the_recorded_folder_is_put_back_on_the_path(tmp_path, clean_path):
    game_dir, run_dir = tmp_path / 'my games', tmp_path / 'run'
    (game_dir / 'envcheck_pkg').mkdir(parents=True)
    (game_dir / 'envcheck_game.py').write_text('VALUE = 7\n')
    (game_dir / 'envcheck_pkg' / '__init__.py').write_text('')
    (game_dir / 'envcheck_pkg' / 'rules.py').write_text('VALUE = 8\n')
    run_dir.mkdir()
    sys.path.insert(0, str(game_dir))
    import envcheck_game  # noqa: F401
    import envcheck_pkg.rules  # noqa: F401
    names = ['envcheck_game', 'envcheck_pkg', 'envcheck_pkg.rules', 'sparring.dizoo']
    assert record_import_folders(names, str(run_dir)) == {name: str(game_dir) for name in names[:3]}
    assert json.loads((run_dir / IMPORT_FOLDERS_FILE).read_text())['envcheck_game'] == str(game_dir)

    sys.path.remove(str(game_dir))
    _forget('envcheck_game', 'envcheck_pkg', 'envcheck_pkg.rules')
    import_run_modules(str(run_dir))
    assert sys.modules['envcheck_pkg.rules'].VALUE == 8
    assert sys.path[0] == str(game_dir) and os.environ['PYTHONPATH'].split(os.pathsep)[0] == str(game_dir)


def test_a_module_gone_from_its_folder_is_named_with_the_folder(tmp_path, clean_path):
    game_dir, run_dir = tmp_path / 'old folder', tmp_path / 'run'
    game_dir.mkdir()
    run_dir.mkdir()
    (game_dir / 'envcheck_game.py').write_text('')
    sys.path.insert(0, str(game_dir))
    import envcheck_game  # noqa: F401
    record_import_folders(['envcheck_game'], str(run_dir))
    sys.path.remove(str(game_dir))
    _forget('envcheck_game')
    shutil.rmtree(game_dir)
    with pytest.raises(ModuleNotFoundError) as err:
        import_run_modules(str(run_dir))
    assert str(err.value) == f"import_names: module 'envcheck_game' not found; the run imported it from {game_dir}"


def test_a_missing_import_inside_the_module_keeps_its_own_error(tmp_path, clean_path):
    run_dir = tmp_path / 'run'
    run_dir.mkdir()
    (tmp_path / 'envcheck_game.py').write_text('import envcheck_not_installed\n')
    (run_dir / IMPORT_FOLDERS_FILE).write_text(json.dumps({'envcheck_game': str(tmp_path)}))
    with pytest.raises(ModuleNotFoundError, match="No module named 'envcheck_not_installed'"):
        import_run_modules(str(run_dir))


def test_a_run_without_modules_of_its_user_gets_no_record_and_opens_as_before(tmp_path):
    assert record_import_folders(['sparring.dizoo'], str(tmp_path)) == {}
    assert not (tmp_path / IMPORT_FOLDERS_FILE).exists()
    import_run_modules(str(tmp_path))  # nothing recorded, nothing done
