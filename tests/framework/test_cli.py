"""The command line: a user's mistake is one line on stderr and exit code 2 (``--debug``: the traceback too),
and modules next to the config file can be named in ``import_names``."""
import os
import subprocess
import sys

import pytest

from sparring.framework.cli import main

pytestmark = pytest.mark.usefixtures('one_torch_thread')
QUIET = dict(eval_every_iters=0, progress_bar=False, tensorboard=False)


@pytest.fixture(autouse=True)
def own_module_path(monkeypatch):
    """The CLI makes each config file's folder importable; undo that after each test."""
    monkeypatch.setattr(sys, 'path', list(sys.path))
    monkeypatch.setenv('PYTHONPATH', os.environ.get('PYTHONPATH', ''))


def rps_league(exp_name, **extra):
    return dict(exp_name=str(exp_name),
                env=dict(type='rock_paper_scissors', collector_env_num=4, evaluator_env_num=2, n_evaluator_episodes=2),
                policy=dict(type='ppo', model=dict(hidden_sizes=[8]), collect=dict(n_steps=4)),
                league=dict(type='one_vs_one'), train=dict(max_env_steps=64, **QUIET), **extra)


def write_config(path, config) -> str:
    path.write_text(f'config = {config!r}\n')
    return str(path)


def one_line_error(capsys, *needles):
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and 'Traceback' not in err, err
    assert lines[0].startswith('sparring ') and ': error: ' in lines[0] and '--debug' in lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def test_a_config_error_is_one_line_and_exit_code_2(tmp_path, capsys):
    config = rps_league(tmp_path / 'run')
    config['policy']['learn'] = dict(learning_rate=1e-3)
    path = write_config(tmp_path / 'cfg.py', config)
    assert main(['train', path]) == 2
    one_line_error(capsys, "'learning_rate'", "'lr'")
    assert main(['train', path, '--debug']) == 2
    err = capsys.readouterr().err
    assert 'Traceback' in err and 'ConfigError' in err and "'learning_rate'" in err.splitlines()[-1]


def test_a_broken_config_file_names_file_and_line(tmp_path, capsys):
    broken = tmp_path / 'broken.py'
    broken.write_text('x = 1\nconfig = dict(\n')
    assert main(['train', str(broken)]) == 2
    one_line_error(capsys, 'broken.py, line 2')
    failing = tmp_path / 'failing.py'
    failing.write_text('base = dict()\nconfig = dict(base, lr=undefined_name)\n')
    assert main(['train', str(failing)]) == 2
    one_line_error(capsys, 'failing.py, line 2', "NameError: name 'undefined_name' is not defined")
    empty = tmp_path / 'empty.py'
    empty.write_text('cfg = dict()\n')
    assert main(['train', str(empty)]) == 2
    one_line_error(capsys, 'defines none of config, main_config')
    assert main(['train', str(tmp_path / 'absent.py')]) == 2
    one_line_error(capsys, 'FileNotFoundError: config file not found')


def test_a_missing_import_names_module_is_one_line(tmp_path, capsys):
    path = write_config(tmp_path / 'cfg.py', rps_league(tmp_path / 'run', import_names=['no_such_module_here']))
    assert main(['train', path]) == 2
    one_line_error(capsys, "'no_such_module_here'")


@pytest.mark.slow
def test_a_reused_experiment_dir_and_a_refused_surgery_are_one_line(tmp_path, capsys):
    path = write_config(tmp_path / 'cfg.py', rps_league(tmp_path / 'run'))
    assert main(['train', path]) == 0
    capsys.readouterr()
    assert main(['train', path]) == 2
    one_line_error(capsys, 'FileExistsError', 'holds an earlier run', '--resume')
    single_agent = dict(exp_name=str(tmp_path / 'cartpole'), env=dict(type='gym', id='CartPole-v1'),
                        train=dict(max_env_steps=64, **QUIET))
    new_path = write_config(tmp_path / 'new.py', single_agent)
    assert main(['surgery', '--checkpoint', str(tmp_path / 'run'), '--config', new_path,
                 '--out', str(tmp_path / 'new')]) == 2
    one_line_error(capsys, 'surgery', 'league')


PLAYERS_MODULE = '''
from sparring.config.registry import PLAYER_REGISTRY
from sparring.league.player import NaiveSpPlayer


@PLAYER_REGISTRY.register('cli_newest_snapshot_sp')
class NewestSnapshotPlayer(NaiveSpPlayer):
    def _newest_branch(self):
        mine = self.league.roster.snapshots_of(self.player_id)
        return mine.players[-1] if len(mine) else None
'''


@pytest.mark.slow
def test_import_names_may_name_a_module_next_to_the_config_file(tmp_path):
    """``cd mydir && sparring train cfg.py`` with ``mydir/myplayers.py``, no PYTHONPATH: the console script's
    own folder, not the current one, heads ``sys.path``, so only the CLI can make the config's folder importable."""
    script = os.path.join(os.path.dirname(sys.executable), 'sparring')
    if not os.path.exists(script):
        pytest.skip('the sparring console script is not installed next to this interpreter')
    mydir = tmp_path / 'mydir'
    mydir.mkdir()
    (mydir / 'myplayers.py').write_text(PLAYERS_MODULE)
    config = rps_league('run', import_names=['myplayers'])
    config['league'] = dict(type='one_vs_one', active_players=dict(cli_newest_snapshot_sp=1),
                            players=dict(cli_newest_snapshot_sp=dict(branch_probs=dict(sp=0.5, newest=0.5))))
    write_config(mydir / 'cfg.py', config)
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    env['OMP_NUM_THREADS'] = '1'
    done = subprocess.run([script, 'train', 'cfg.py'], cwd=mydir, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (mydir / 'run' / 'config.json').exists()
    # from elsewhere too: the config file's folder, not the current one
    done = subprocess.run([script, 'train', str(mydir / 'cfg.py'), '--exp-name', str(tmp_path / 'run2')],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
