"""A run trained on a GPU is used on a machine without one: its stored CUDA devices give way to the CPU.

Found by ``benchmarks/gpu_check.py`` on an H200: ``sparring eval`` of a run whose config says
``policy.collect.device='cuda'`` stopped on a CPU-only process with a ConfigError. The test writes
those keys into a CPU run's config, as a CUDA run stores them, and uses the run here.
"""
import json
import os
import shutil

import pytest
from easydict import EasyDict

from sparring.config.compile import CONFIG_FILENAME
from sparring.framework.evaluate_player import evaluate_player
from sparring.framework.player_loader import TrainedRun
from sparring.policy import device as device_module
from sparring.policy.device import devices_usable_here


def _as_if_trained_on_cuda(run_dir, tmp_path):
    copy = str(tmp_path / 'trained_on_cuda')
    shutil.copytree(run_dir, copy)
    path = os.path.join(copy, CONFIG_FILENAME)
    with open(path) as f:
        cfg = json.load(f)
    cfg['policy']['device'] = 'cuda'
    cfg['policy']['collect']['device'] = 'cuda:0'
    with open(path, 'w') as f:
        json.dump(cfg, f)
    return copy


def test_a_cuda_run_is_evaluated_on_the_cpu(trained_tictactoe, tmp_path, one_torch_thread):
    if device_module.cuda_available():
        pytest.skip('this machine has CUDA: the stored devices are usable as they are')
    run_dir, _ = trained_tictactoe
    cuda_run = _as_if_trained_on_cuda(run_dir, tmp_path)
    run = TrainedRun(cuda_run)
    assert run.cfg.policy.device == 'cpu' and run.cfg.policy.collect.device == 'cpu'
    assert [note.split('=')[0] for note in run.device_notes] == ['policy.device', 'policy.collect.device']
    here = evaluate_player(cuda_run, ['bot:random'], games=6, seed=3)['opponents']['bot:random']
    there = evaluate_player(run_dir, ['bot:random'], games=6, seed=3)['opponents']['bot:random']
    assert here == there  # the same parameters, acting the same on the CPU


def test_usable_devices_are_kept(monkeypatch):
    cfg = EasyDict(device='cuda', collect=dict(device='auto'))
    monkeypatch.setattr(device_module, 'cuda_available', lambda: True)
    monkeypatch.setattr(device_module, 'cuda_device_count', lambda: 1)
    assert devices_usable_here(cfg) == [] and cfg.device == 'cuda' and cfg.collect.device == 'auto'
    monkeypatch.setattr(device_module, 'cuda_available', lambda: False)
    notes = devices_usable_here(cfg)
    assert cfg.device == 'cpu' and cfg.collect.device == 'auto' and len(notes) == 1
    assert 'policy.device=' in notes[0] and 'using the CPU' in notes[0]
