"""``benchmarks/gpu_check.py`` runs end to end without a GPU (``--smoke``), records a failing section or variant
instead of stopping, and imports nothing beyond the standard library before a section asks for it (the GPU
machine's Python may lack some of sparring's packages)."""
import ast
import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, 'benchmarks', 'gpu_check.py')


def _module():
    sys.path.insert(0, os.path.dirname(SCRIPT))
    spec = importlib.util.spec_from_file_location('gpu_check', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_imports_only_the_standard_library_at_the_top():
    tree = ast.parse(open(SCRIPT).read())
    names = [alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names]
    names += [node.module for node in tree.body if isinstance(node, ast.ImportFrom) and node.module != '__future__']
    assert names and all(name.split('.')[0] in sys.stdlib_module_names for name in names), names


@pytest.mark.slow
def test_smoke_runs_every_default_section_on_the_cpu(tmp_path):
    out = tmp_path / 'gpu_check.json'
    env = dict(os.environ, CUDA_VISIBLE_DEVICES='')
    # A budget no smoke run spends, so a busy machine skips nothing.
    proc = subprocess.run([sys.executable, SCRIPT, '--smoke', '--budget', '600', '--out', str(out)], env=env,
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    gpu_check = _module()
    for section in gpu_check.DEFAULT_SECTIONS:
        assert 'error' not in report[section], (section, report[section])
    ppo = report['ppo_update']
    assert all('error' not in figures and 'skipped' not in figures for figures in ppo.values()), ppo
    assert {name.split(':')[2] for name in ppo} >= {'ready', 'one_by_one', 'fused_adam', 'minibatches_1'}
    assert all(figures['samples_per_second'] > 0 for figures in ppo.values())
    assert all(figures['gradient_steps_per_second'] > 0 for figures in report['sac_update'].values())
    assert set(report['forward_rows']['in_process']['cpu']) == {'1', '64'}
    assert report['search_selfplay']['cpu']['env_steps'] > 0
    assert report['machine']['cuda'] is False and report['devices'] == ['cpu']
    # As it comes back, the report is a stamped record (benchmarks/results_file.py) of the machine it ran on.
    stamps = report.pop('_stamps')
    assert set(stamps) == set(report)
    assert all(s['cpu_model'] == report['machine']['cpu_model'] and s['command'].endswith('--out ' + str(out))
               for s in stamps.values())


def test_a_failing_variant_is_recorded_and_the_next_one_runs(monkeypatch):
    gpu_check = _module()
    real = gpu_check._ppo_update_call

    def call(variant, envs, steps, device):
        if variant == 'fused_adam':
            raise ImportError('no module named fused_thing')
        return real(variant, envs, steps, device)

    monkeypatch.setattr(gpu_check, '_ppo_update_call', call)
    monkeypatch.setattr(gpu_check, 'PPO_VARIANTS', ('ready', 'fused_adam', 'minibatches_1'))
    out = gpu_check.ppo_update(['cpu'], gpu_check.Deadline(60.0), smoke=True)
    assert out['smoke_512:cpu:fused_adam:threads1']['error'] == 'ImportError: no module named fused_thing'
    assert out['smoke_512:cpu:minibatches_1:threads1']['samples_per_second'] > 0


def test_a_spent_budget_skips_what_is_left_with_a_reason():
    gpu_check = _module()
    out = gpu_check.sac_update(['cpu'], gpu_check.Deadline(0.0), smoke=True)
    assert out and all(figures['skipped'].startswith('the section budget had 0 s left') for figures in out.values())

