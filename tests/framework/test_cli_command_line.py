"""The command line a user expects: ``python -m sparring``, ``--version``, ``list``, ``--set`` and the budgets
recorded in config.json and repeated in the resume hint, ``--max-wall-seconds``, SIGTERM's exit status, the
device said once, and the figures a serial run sends to TensorBoard."""
import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest

from sparring.framework import cli
from sparring.framework.cli import main
from sparring.framework.interrupts import exit_status
from sparring.worker.logger import RunLogger, format_outcome_rates

pytestmark = pytest.mark.usefixtures('one_torch_thread')


@pytest.fixture(autouse=True)
def own_module_path(monkeypatch):
    """The CLI makes each config file's folder importable; undo that after each test."""
    monkeypatch.setattr(sys, 'path', list(sys.path))
    monkeypatch.setenv('PYTHONPATH', os.environ.get('PYTHONPATH', ''))


def cartpole(exp, steps=64):
    return dict(exp_name=str(exp), env=dict(type='gym', id='CartPole-v1', collector_env_num=2, evaluator_env_num=1,
                                            n_evaluator_episodes=1),
                policy=dict(type='ppo', model=dict(hidden_sizes=[8]), collect=dict(n_steps=16),
                            learn=dict(epochs=1, num_minibatches=1)),
                train=dict(max_env_steps=steps, eval_every_iters=0, progress_bar=False, tensorboard=False))


def write_config(path, config) -> str:
    path.write_text(f'config = {config!r}\n')
    return str(path)


def test_python_dash_m_sparring_and_version():
    out = subprocess.run([sys.executable, '-m', 'sparring', '--version'], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == f'sparring {cli.package_version()}', out
    from sparring import __version__
    assert cli.package_version() == __version__


def test_list_names_the_registered_classes_and_the_ready_configs(capsys):
    assert main(['list']) == 0
    out = capsys.readouterr().out
    for section in ('envs:', 'policies:', 'models:', 'players:', 'leagues:', 'bots:', 'configs:'):
        assert section in out.splitlines()
    assert any(line.split()[:1] == ['connect_four'] and 'Connect four' in line for line in out.splitlines())
    assert any(line.split()[:1] == ['naive_sp'] for line in out.splitlines())
    assert main(['list', 'configs']) == 0
    configs = capsys.readouterr().out.splitlines()
    demo = [line for line in configs if 'connect_four_demo.py' in line]
    assert len(demo) == 1 and 'make demo' in demo[0] and os.path.isfile(demo[0].split()[0])
    assert all(section not in configs for section in ('envs:', 'bots:'))


def test_set_and_the_budgets_are_recorded_in_the_runs_config(tmp_path, capsys):
    path = write_config(tmp_path / 'cfg.py', cartpole(tmp_path / 'run', steps=1000))
    assert main(['train', path, '--set', 'policy.learn.lr=1e-3', '--set', 'policy.model.hidden_sizes=[4]',
                 '--max-env-steps', '64', '--max-wall-seconds', '600']) == 0
    capsys.readouterr()
    saved = json.load(open(tmp_path / 'run' / 'config.json'))
    assert saved['policy']['learn']['lr'] == 1e-3 and saved['policy']['model']['hidden_sizes'] == [4]
    assert saved['train']['max_env_steps'] == 64 and saved['train']['max_wall_seconds'] == 600.0


def test_a_wrong_set_is_the_usual_one_line_config_error(tmp_path, capsys):
    path = write_config(tmp_path / 'cfg.py', cartpole(tmp_path / 'run'))
    assert main(['train', path, '--set', 'policy.learn.lrr=1e-3']) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown key 'lrr'" in err[0] and "Did you mean 'lr'" in err[0]
    assert main(['train', path, '--set', 'train.max_env_steps=many']) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and '"train.max_env_steps": expected int' in err[0]
    assert not os.path.exists(tmp_path / 'run' / 'ckpt')


def test_the_resume_hint_repeats_every_override():
    args = cli._build_parser().parse_args(['train', 'my cfg.py', '--exp-name', 'runs/x', '--max-env-steps', '5000',
                                           '--max-wall-seconds', '90', '--set', 'policy.learn.lr=3e-4',
                                           '--set', 'env.id=CartPole-v1', '--set', "exp_name='123'",
                                           '--mode', 'parallel'])
    hint = cli.resume_command(args)
    assert hint == ("sparring train 'my cfg.py' --mode parallel --resume --exp-name runs/x --max-env-steps 5000 "
                    "--max-wall-seconds 90 --set policy.learn.lr=0.0003 --set env.id=CartPole-v1 --set "
                    + shlex.quote("exp_name='123'"))  # the string '123', not the number it would read as bare
    again = cli._build_parser().parse_args(shlex.split(hint)[1:])
    assert cli.train_overrides(again) == cli.train_overrides(args)


def test_max_wall_seconds_stops_collection_with_a_checkpoint(tmp_path, capsys):
    path = write_config(tmp_path / 'cfg.py', cartpole(tmp_path / 'run', steps=1_000_000))
    assert main(['train', path, '--max-wall-seconds', '1e-6']) == 0
    printed = capsys.readouterr().out
    summary = json.loads(printed[printed.index('{\n'):])
    assert summary['env_steps'] == 32  # one round, then the budget is found spent
    log = (tmp_path / 'run' / 'log.txt').read_text()
    assert 'time budget of ' in log and 'collection stops' in log, log
    assert os.path.exists(summary['checkpoint'])
    assert json.load(open(tmp_path / 'run' / 'config.json'))['train']['max_wall_seconds'] == 1e-6


def test_the_device_is_said_once_and_serial_runs_log_return_and_speed(tmp_path, monkeypatch):
    logged = []
    monkeypatch.setattr(RunLogger, 'scalars', lambda self, values, step, prefix='': logged.append(
        (prefix, dict(values), step)))
    from sparring.framework import serial_pipeline
    config = cartpole(tmp_path / 'run')
    config['policy']['device'] = 'auto'
    monkeypatch.setattr('sparring.policy.device.cuda_available', lambda: False)
    serial_pipeline(config)
    log = (tmp_path / 'run' / 'log.txt').read_text()
    assert log.count('device: cpu (auto: no CUDA)') == 1
    run = [(values, step) for prefix, values, step in logged if prefix == 'run/']
    assert [step for _, step in run] == [32, 64]
    assert all(set(values) == {'episode_return', 'env_steps_per_second'} for values, _ in run)
    assert run[-1][0]['env_steps_per_second'] > 0


def test_evaluation_rates_are_labelled():
    report = {'random': dict(win=0.86, draw=0.06, loss=0.08)}
    assert format_outcome_rates(report) == 'random:w0.86/d0.06/l0.08'


def test_exit_status_follows_the_shell():
    assert exit_status(signal.SIGINT) == 130 and exit_status(signal.SIGTERM) == 143


@pytest.mark.slow
def test_sigterm_ends_train_with_143_after_a_clean_stop(tmp_path):
    path = write_config(tmp_path / 'cfg.py', cartpole(tmp_path / 'run', steps=10_000_000))
    process = subprocess.Popen([sys.executable, '-m', 'sparring', 'train', path, '--set', 'policy.learn.lr=2e-4'],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = tmp_path / 'run' / 'log.txt'
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not log.exists() or log.read_text().count('it=') < 3):
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 143, (out, err)
    assert 'interrupted after' in log.read_text() and os.listdir(tmp_path / 'run' / 'ckpt')
    assert f'continue with: sparring train {path} --mode serial --resume --set policy.learn.lr=0.0002' in err


def test_the_default_cpu_device_is_not_announced(tmp_path):
    from sparring.framework import serial_pipeline
    serial_pipeline(cartpole(tmp_path / 'run', steps=32))
    assert 'device:' not in (tmp_path / 'run' / 'log.txt').read_text()


def test_the_device_line_says_what_auto_chose(monkeypatch):
    from sparring.worker.logger import device_line
    policy = dict(device='auto', collect=dict(device='cpu'))
    monkeypatch.setattr('sparring.policy.device.cuda_available', lambda: True)
    monkeypatch.setattr('sparring.policy.device.cuda_device_count', lambda: 1)
    assert device_line(policy) == 'device: cuda (auto: CUDA available); acting on cpu (policy.collect.device)'
    monkeypatch.setattr('sparring.policy.device.cuda_available', lambda: False)
    assert device_line(policy) == 'device: cpu (auto: no CUDA)'
    assert device_line(dict(device='cpu', collect=dict(device='cpu'))) is None


def test_a_resumed_run_records_the_budget_it_goes_on_with(tmp_path, capsys):
    path = write_config(tmp_path / 'cfg.py', cartpole(tmp_path / 'run'))
    assert main(['train', path, '--max-env-steps', '32']) == 0
    assert main(['train', path, '--resume', '--max-env-steps', '64', '--set', 'policy.learn.lr=1e-3']) == 0
    err = capsys.readouterr().err.strip().splitlines()
    expected = (f'sparring train: warning: --resume continues {tmp_path / "run" / "config.json"} with changed '
                f'policy.learn.lr, train.max_env_steps')
    assert err == [expected]  # one line, as errors are
    saved = json.load(open(tmp_path / 'run' / 'config.json'))
    assert saved['train']['max_env_steps'] == 64 and saved['policy']['learn']['lr'] == 1e-3
