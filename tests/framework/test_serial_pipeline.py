"""The serial pipeline end to end on CartPole: outputs, checkpoints, resume and the CLI."""
import json
import os

import pytest
import torch

from sparring.config.schema import ConfigError

from sparring.framework import serial_pipeline
from sparring.worker.checkpoint import CheckpointManager
from sparring.framework.cli import load_config_file, main


def _config(exp_name, max_env_steps=512, **train):
    return dict(
        exp_name=str(exp_name),
        env=dict(type='cartpole', collector_env_num=4, evaluator_env_num=2, n_evaluator_episodes=2),
        policy=dict(type='ppo', collect=dict(n_steps=32), learn=dict(epochs=2, num_minibatches=2)),
        train=dict(dict(max_env_steps=max_env_steps, eval_every_iters=2, checkpoint_every_iters=2,
                        progress_bar=False), **train),
    )


def test_run_writes_config_log_tensorboard_and_checkpoint(tmp_path):
    summary = serial_pipeline(_config(tmp_path / 'run'), seed=3)
    assert summary['env_steps'] == 512 and summary['train_iter'] == 4  # 4 envs x 32 steps per iteration
    exp = tmp_path / 'run'
    assert json.load(open(exp / 'config.json'))['seed'] == 3
    lines = open(exp / 'log.txt').read().splitlines()
    # the discount horizon first (CartPole steps are its tau = 0.02 s), then one line per iteration
    assert lines[0] == 'discount horizon: gamma 0.99 -> 100 steps = 2 game seconds (0.02 s per step)'
    assert lines[1].startswith('it=1 steps=128') and any('eval=' in line for line in lines)
    assert os.listdir(exp / 'tb')
    state = CheckpointManager.load(summary['checkpoint'])
    assert state['learner']['train_iter'] == 4 and state['collector']['env_steps'] == 512


@pytest.mark.slow
def test_same_seed_same_parameters(tmp_path):
    a = serial_pipeline(_config(tmp_path / 'a', tensorboard=False), seed=7)
    b = serial_pipeline(_config(tmp_path / 'b', tensorboard=False), seed=7)
    pa = CheckpointManager.load(a['checkpoint'])['learner']['policy']['params']
    pb = CheckpointManager.load(b['checkpoint'])['learner']['policy']['params']
    assert all(torch.equal(pa[k], pb[k]) for k in pa)


@pytest.mark.slow
def test_resume_continues_with_the_stopped_runs_counters_and_parameters(tmp_path):
    exp = tmp_path / 'resumable'
    first = serial_pipeline(_config(exp, max_env_steps=512, tensorboard=False), seed=1)
    stopped = CheckpointManager.load(first['checkpoint'])

    # Resuming with the same budget trains nothing: what is saved again is exactly what stopped.
    again = serial_pipeline(_config(exp, max_env_steps=512, tensorboard=False), seed=1, resume=True)
    same = CheckpointManager.load(again['checkpoint'])
    assert same['learner']['train_iter'] == stopped['learner']['train_iter'] == 4
    assert same['collector']['env_steps'] == stopped['collector']['env_steps'] == 512
    for key, tensor in stopped['learner']['policy']['params'].items():
        assert torch.equal(tensor, same['learner']['policy']['params'][key])
    assert same['learner']['policy']['version'] == stopped['learner']['policy']['version']

    # What shaped the player cannot change on resume: refused, with the reason and what may change.
    changed = _config(exp, max_env_steps=512, tensorboard=False)
    changed['policy']['model'] = dict(hidden_sizes=[7])
    with pytest.raises(ConfigError, match=r'differs from the saved one .* at policy\.model\.hidden_sizes.*may change'):
        serial_pipeline(changed, seed=1, resume=True)
    # A budget, the evaluation or the learning rate may, and the run takes the new values and says so.
    faster = _config(exp, max_env_steps=640, tensorboard=False)
    faster['policy']['learn']['lr'] = 5e-4
    with pytest.warns(UserWarning, match=r'with changed .*policy\.learn\.lr'):
        taken = serial_pipeline(faster, seed=1, resume=True)
    assert taken['env_steps'] == 640
    log = (exp / 'log.txt').read_text()
    assert 'resumed from' in log and 'at 512 env steps' in log

    # A larger budget continues counting from there, with the optimiser state carried over.
    more = serial_pipeline(_config(exp, tensorboard=False), seed=1, resume=True, max_env_steps=1024)
    assert more['env_steps'] == 1024 and more['train_iter'] == 8
    resumed = CheckpointManager.load(more['checkpoint'])
    assert resumed['learner']['policy']['version'] == 8
    assert resumed['learner']['policy']['optimizer']['state'][0]['step'].item() > \
        stopped['learner']['policy']['optimizer']['state'][0]['step'].item()


def test_resume_without_a_run_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match='no compiled config'):
        serial_pipeline(_config(tmp_path / 'never_ran'), resume=True)


def test_stop_value_ends_the_run_early(tmp_path):
    cfg = _config(tmp_path / 'stop', max_env_steps=100_000, tensorboard=False)
    cfg['env']['stop_value'] = 5.0  # any policy balances CartPole for 5 steps
    summary = serial_pipeline(cfg, seed=0)
    assert summary['reached_stop_value'] and summary['env_steps'] == 256  # first evaluation, iteration 2


def test_cli_train_and_config_file_errors(tmp_path, capsys):
    path = tmp_path / 'cfg.py'
    path.write_text(f'config = {_config(tmp_path / "cli", tensorboard=False)!r}\n')
    assert main(['train', str(path), '--seed', '2', '--max-env-steps', '256']) == 0
    printed = capsys.readouterr().out
    summary = json.loads(printed[printed.index('{\n'):])
    assert summary['env_steps'] == 256
    assert json.load(open(tmp_path / 'cli' / 'config.json'))['seed'] == 2
    bad = tmp_path / 'bad.py'
    bad.write_text('settings = {}\n')
    with pytest.raises(ValueError, match='defines none of config, main_config'):
        load_config_file(str(bad))
    with pytest.raises(FileNotFoundError):
        load_config_file(str(tmp_path / 'missing.py'))


def test_a_new_run_refuses_a_directory_holding_an_earlier_run(tmp_path):
    from sparring.framework.serial import prepare_config
    config = dict(exp_name=str(tmp_path / 'run'), env=dict(type='gym', id='CartPole-v1'))
    prepare_config(config)
    os.makedirs(tmp_path / 'run' / 'ckpt')
    (tmp_path / 'run' / 'ckpt' / 'iter_00000003.pt').write_bytes(b'')
    with pytest.raises(FileExistsError, match='--resume'):
        prepare_config(config)
