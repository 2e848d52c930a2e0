"""Ctrl-C and SIGTERM stop a run after saving it; a resumed copy writes where it was told."""
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from sparring.framework import serial_pipeline
from sparring.framework.interrupts import shielded, terminate_as_interrupt
from sparring.worker.checkpoint import CheckpointManager


def _cartpole(exp, steps=512, checkpoint_every=0):
    return dict(exp_name=str(exp), env=dict(type='gym', id='CartPole-v1', collector_env_num=2, evaluator_env_num=1,
                                            n_evaluator_episodes=1),
                policy=dict(type='ppo', model=dict(hidden_sizes=[16]), collect=dict(n_steps=16),
                            learn=dict(epochs=1, num_minibatches=1)),
                train=dict(max_env_steps=steps, eval_every_iters=0, checkpoint_every_iters=checkpoint_every,
                           progress_bar=False, tensorboard=False))


def test_resume_writes_into_the_directory_given_not_the_one_the_run_was_copied_from(tmp_path):
    first = serial_pipeline(_cartpole(tmp_path / 'a', steps=64))
    shutil.copytree(tmp_path / 'a', tmp_path / 'b')
    before = sorted(os.listdir(tmp_path / 'a' / 'ckpt'))
    resumed = serial_pipeline(_cartpole(tmp_path / 'a', steps=64), exp_name=str(tmp_path / 'b'), resume=True,
                              max_env_steps=128)
    assert resumed['exp_dir'] == str(tmp_path / 'b') and resumed['checkpoint'].startswith(str(tmp_path / 'b'))
    assert sorted(os.listdir(tmp_path / 'a' / 'ckpt')) == before and first['env_steps'] == 64
    assert resumed['env_steps'] == 128


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM])
@pytest.mark.slow
def test_a_serial_run_stopped_by_a_signal_saves_what_it_did(tmp_path, sig):
    exp = tmp_path / 'run'
    script = textwrap.dedent(f'''
        from sparring.framework import serial_pipeline
        config = {_cartpole(exp, steps=10_000_000)!r}
        serial_pipeline(config)
    ''')
    process = subprocess.Popen([sys.executable, '-c', script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    log = exp / 'log.txt'
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not log.exists() or log.read_text().count('it=') < 3):
        time.sleep(0.2)
    assert log.exists(), process.stdout.read().decode()
    process.send_signal(sig)
    output = process.communicate(timeout=60)[0].decode()
    assert process.returncode != 0 and 'KeyboardInterrupt' in output
    text = log.read_text()
    assert 'interrupted after' in text and 'resume=True (--resume) continues' in text
    state = CheckpointManager(str(exp)).load_latest()  # no periodic checkpoint: this one is the interrupt's
    assert state['learner']['train_iter'] >= 3
    resumed = serial_pipeline(_cartpole(exp), resume=True, max_env_steps=state['collector']['env_steps'] + 32)
    assert resumed['env_steps'] == state['collector']['env_steps'] + 32


def test_a_signal_while_shielded_waits_until_the_save_is_done():
    with terminate_as_interrupt():
        with shielded() as came:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            saved = True  # reached: the signal did not interrupt
        assert saved and came == [signal.SIGTERM]
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1.0)


def test_a_signal_whose_interrupt_was_lost_still_stops_the_loop_at_its_next_step():
    from sparring.framework.interrupts import raise_if_stopped
    with terminate_as_interrupt():
        raise_if_stopped()  # nothing came yet
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        except KeyboardInterrupt:
            pass  # swallowed, as a finaliser running at that moment would
        with pytest.raises(KeyboardInterrupt, match='signal 2'):
            raise_if_stopped()
    raise_if_stopped()  # outside, the noted signal is forgotten
