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


# -- a received run directory runs none of its author's code unless the user says so ----------------

def _received_run(tmp_path, config=None):
    """A run directory whose import_folders.json names a folder inside it, holding a module that leaves a mark."""
    from sparring.config import compile_config, save_config
    run_dir = tmp_path / 'received'
    (run_dir / 'code').mkdir(parents=True)
    mark = tmp_path / 'ran'
    (run_dir / 'code' / 'envcheck_game.py').write_text(f'open({str(mark)!r}, "w").close()\n')
    (run_dir / IMPORT_FOLDERS_FILE).write_text(json.dumps({'envcheck_game': str(run_dir / 'code')}))
    if config is None:
        cfg = compile_config(dict(exp_name=str(run_dir), env=dict(type='tictactoe'), policy=dict(type='ppo')),
                             save=False)
        cfg.import_names = ['envcheck_game']
        save_config(cfg, str(run_dir))
    else:
        (run_dir / 'config.json').write_text(config)
    return run_dir, mark


def test_a_module_inside_the_run_directory_is_not_imported_without_trust(tmp_path, clean_path):
    from sparring.framework.run_imports import UntrustedRunCode, load_run_config
    run_dir, mark = _received_run(tmp_path)
    with pytest.raises(UntrustedRunCode) as err:
        load_run_config(str(run_dir))
    message = str(err.value)
    assert "module 'envcheck_game'" in message and str(run_dir / 'code') in message
    assert '--trust-run-code' in message and 'trust_code=True' in message and '\n' not in message
    assert not mark.exists() and 'envcheck_game' not in sys.modules
    assert str(run_dir / 'code') not in sys.path
    # the user says so: imported from where the run recorded it
    assert load_run_config(str(run_dir), trust_code=True).import_names == ['envcheck_game']
    assert mark.exists()


def test_the_working_directory_inside_the_run_is_no_way_in(tmp_path, clean_path, monkeypatch):
    from sparring.framework.run_imports import UntrustedRunCode, load_run_config
    run_dir, mark = _received_run(tmp_path)
    (run_dir / IMPORT_FOLDERS_FILE).unlink()  # config.json's import_names alone, found through the cwd
    (run_dir / 'envcheck_game.py').write_text((run_dir / 'code' / 'envcheck_game.py').read_text())
    monkeypatch.chdir(run_dir)
    sys.path.insert(0, '')
    with pytest.raises(UntrustedRunCode, match=str(run_dir / 'envcheck_game.py')):
        load_run_config(str(run_dir))
    assert not mark.exists()


def test_the_users_own_module_is_imported_and_a_folder_outside_the_run_is_put_on_the_path(tmp_path, clean_path):
    from sparring.framework.run_imports import load_run_config
    run_dir, mark = _received_run(tmp_path)
    mine = tmp_path / 'mine'
    mine.mkdir()
    (mine / 'envcheck_game.py').write_text('VALUE = 3\n')
    sys.path.insert(0, str(mine))  # the user's own environment has the module: it is taken from there
    load_run_config(str(run_dir))
    assert sys.modules['envcheck_game'].VALUE == 3 and not mark.exists()
    sys.path.remove(str(mine))
    _forget('envcheck_game')
    (run_dir / IMPORT_FOLDERS_FILE).write_text(json.dumps({'envcheck_game': str(mine)}))  # outside the run
    load_run_config(str(run_dir))
    assert sys.modules['envcheck_game'].VALUE == 3 and sys.path[0] == str(mine)


def test_a_relative_folder_is_not_followed_without_trust(tmp_path, clean_path, monkeypatch):
    from sparring.framework.run_imports import UntrustedRunCode, load_run_config
    run_dir, mark = _received_run(tmp_path)
    (tmp_path / 'beside').mkdir()
    (tmp_path / 'beside' / 'envcheck_game.py').write_text((run_dir / 'code' / 'envcheck_game.py').read_text())
    (run_dir / IMPORT_FOLDERS_FILE).write_text(json.dumps({'envcheck_game': 'beside'}))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UntrustedRunCode):
        load_run_config(str(run_dir))
    assert not mark.exists()


@pytest.mark.parametrize('command', [['report'], ['export', '--out', 'x.onnx'], ['eval', '--against', 'bot:random'],
                                     ['play'], ['exploit', '--budget-steps', '8']])
def test_the_commands_refuse_a_runs_code_in_one_line_and_exit_2(tmp_path, clean_path, capsys, command):
    from sparring.framework.cli import main
    run_dir, mark = _received_run(tmp_path)
    assert main([command[0], str(run_dir), *command[1:]]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'envcheck_game' in err and '--trust-run-code' in err, err
    assert not mark.exists()


def test_surgery_refuses_the_old_runs_code(tmp_path, clean_path):
    from sparring.framework.run_imports import UntrustedRunCode
    from sparring.framework.surgery import surgery
    run_dir, mark = _received_run(tmp_path)
    (run_dir / 'ckpt').mkdir()
    (run_dir / 'ckpt' / 'iter_1.pt').write_bytes(b'')
    with pytest.raises(UntrustedRunCode):
        surgery(str(run_dir / 'ckpt' / 'iter_1.pt'), dict(env=dict(type='tictactoe'), policy=dict(type='ppo')),
                str(tmp_path / 'out'))
    assert not mark.exists()


@pytest.mark.parametrize('config', ['{}', '[1, 2]', 'garbage', '{"env": {"type": 3}, "policy": []}', '\xff'])
def test_a_malformed_config_json_is_one_line_and_exit_2(tmp_path, clean_path, capsys, config):
    from sparring.framework.cli import main
    run_dir, mark = _received_run(tmp_path, config=config)
    assert main(['report', str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'config.json' in err and 'expected' in err, err
    assert not mark.exists()
