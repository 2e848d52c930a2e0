"""``--import MODULE``: ``check-env`` and ``list`` (and the commands that use a run) see the classes a user's own
module registers; an unknown name says how to make it known."""
import os
import re
import sys

import pytest

from sparring.framework.cli import main

MODULE = '''
from sparring.config.registry import ENV_REGISTRY
from sparring.dizoo.board_games.board_game_env import TicTacToeEnv


@ENV_REGISTRY.register('cli_import_tictactoe')
class MyTicTacToe(TicTacToeEnv):
    """Tic-tac-toe under a name of the user's own."""
'''


@pytest.fixture
def user_folder(tmp_path, monkeypatch):
    (tmp_path / 'cli_import_games.py').write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, 'path', list(sys.path))  # --import puts the current folder on it
    monkeypatch.setenv('PYTHONPATH', os.environ.get('PYTHONPATH', ''))
    monkeypatch.delitem(sys.modules, 'cli_import_games', raising=False)
    return tmp_path


def test_list_and_check_env_see_an_env_registered_by_an_imported_module(user_folder, capsys):
    assert main(['list', 'envs', '--import', 'cli_import_games']) == 0
    assert re.search(r"cli_import_tictactoe +Tic-tac-toe under a name of the user's own\.", capsys.readouterr().out)
    assert main(['check-env', 'cli_import_tictactoe', '--games', '2', '--import', 'cli_import_games']) == 0
    assert 'check-env cli_import_tictactoe: passed' in capsys.readouterr().out


def test_a_module_that_is_not_there_is_named_in_one_line(user_folder, capsys):
    assert main(['check-env', 'tictactoe', '--import', 'no_such_games']) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert f"--import no_such_games: no module named 'no_such_games' in the current folder ({user_folder})" in err


def test_an_unknown_env_says_how_to_make_a_users_own_known(capsys):
    assert main(['check-env', 'not_registered_anywhere']) == 2
    err = capsys.readouterr().err
    assert "unknown env 'not_registered_anywhere'" in err and 'pass --import MODULE' in err
    assert 'import_names, not those a training script imported itself' in err
