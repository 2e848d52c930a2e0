"""Seeded serial runs reproduce their recordings in ``golden/`` on any x86-64 CPU (see ``golden_runs.py``).

What must not drift is checked bit for bit: every text record, every integer (games played, counts,
versions, the league's snapshots, resets and opponent choices, RNG states) and every float that is
configuration rather than arithmetic (the compiled config and its copies in the league state and in
the parameter files). The other floats (parameters, optimiser moments, losses, exploitability) are the
output of matrix kernels whose rounding depends on the CPU: they must lie within ``FLOAT_TOLERANCE``
of the recording, measured as the largest absolute difference over the recorded array's largest
magnitude.

Why 2e-4. The recordings come from an Intel CPU with AVX-512. On an AMD EPYC without AVX-512 (torch
2.13.0+cpu, MKL 2024.2), the worst difference over scale, per run (tic-tac-toe league, rock-paper-
scissors, CartPole), was:

    torch's own choice (AVX2)              4.8e-6   9.6e-6   1.7e-5
    ATEN_CPU_CAPABILITY=avx2               4.8e-6   9.6e-6   1.7e-5   (bit-identical to the line above)
    ONEDNN_MAX_CPU_ISA=AVX2                4.8e-6   9.6e-6   1.7e-5   (bit-identical to the line above)
    ATEN_CPU_CAPABILITY=default            6.3e-6   4.5e-6   5.8e-6
    default + ONEDNN SSE41 + MKL_CBWR      6.5e-6   4.3e-6   1.0e-5

(largest absolute differences 4e-7 to 1.3e-6; per element, entries near zero reach 1.4 % relative,
which is why the test divides by the array's scale and not by each entry). Integers and text were
identical in every setting. The tolerance is 12 times the worst drift. A real change of behaviour in
the same runs lands far above it even with the config records set aside (worst difference over scale,
per run as above):

    learning rate 1 % higher               3.6e-2   6.8e-2   1.7e-2
    value-loss coefficient 1 % higher      1.2e-2   2.4e-2   2.0e-2
    max_grad_norm 1 % higher               2.0e-2   7.5e-2   2.0e-2
    learning rate 0.1 % higher             3.6e-3   6.8e-3   1.7e-3
    value-loss coefficient 0.1 % higher    1.2e-3   2.4e-3   2.0e-3
    Adam's beta2 0.999 -> 0.9985 in code   0.50     0.50     0.49

Each exceeds the tolerance in every run; run through this test, the value loss scaled by 1.001
inside policy/ppo.py (no config shows it) fails with 14 CartPole arrays beyond it. What stays below
it is a change as small as the CPU's own rounding: an entropy coefficient of 1e-4 instead of 0 moves
CartPole's floats by 3.7e-5 only (its config record still fails). Across machines such effects
cannot be told from rounding; on one machine, ``benchmarks/golden.py`` records and compares every
value bit for bit.
"""
import types

import numpy as np
import pytest
from tests.scripts import load_script

golden_runs = load_script('tests/framework/golden_runs.py', 'golden_runs')
golden_tool = load_script('benchmarks/golden.py', 'golden_tool')

FLOAT_TOLERANCE = 2e-4  # largest |now - recorded| / largest |recorded| per float array; see the module docstring


def is_configuration(key: str) -> bool:
    """Floats copied from the config (the compiled config, the league's and each parameter file's copy)."""
    parts = key.split('.')
    return parts[0] == 'config' or 'config' in parts or 'policy_cfg' in parts


def beyond_tolerance(found) -> list:
    """The differences a change of CPU cannot explain."""
    return [d for d in found if not (d.reason == 'values' and d.floating and not is_configuration(d.key)
                                     and d.max_rel <= FLOAT_TOLERANCE)]


@pytest.fixture(scope='module', params=sorted(golden_runs.CASES))
def case(request, tmp_path_factory):
    """``(name, the run now, its recording)``: each seeded run once for the tests below."""
    name = request.param
    now = golden_runs.run_case(name, str(tmp_path_factory.mktemp(name)))
    return name, now, golden_runs.load(golden_runs.golden_path(name))


@pytest.mark.slow  # each case trains a small run
def test_every_recorded_value_comes_out_again_within_tolerance(case):
    name, now, recorded = case
    found = golden_runs.differences(now, recorded)
    wrong = beyond_tolerance(found)
    assert not wrong, (f'{name}: {len(wrong)} of {len(recorded)} recorded values differ beyond what a CPU explains '
                       f'(text and integers exactly, floats within {FLOAT_TOLERANCE} of scale), e.g.\n'
                       + '\n'.join(d.describe() for d in wrong[:10]))


def test_the_comparison_rejects_a_changed_integer_text_or_config_and_a_drifted_float():
    text = golden_runs.TEXT_KEY
    recorded = {'games': np.array([3, 4]), 'weight': np.array([0.5, -1.0, 1e-9], dtype=np.float32),
                'config.policy.learn.lr': np.array(1e-3), 'nan': np.array([np.nan, 1.0]),
                text: np.frombuffer(b'{"phase": "main"}', dtype=np.uint8)}
    same = dict(recorded, extra=np.array(1))  # a value only the new run has is no difference
    assert golden_runs.differences(same, recorded) == []

    drifted = dict(recorded, weight=np.array([0.5 + 4e-6, -1.0, 2e-9], dtype=np.float32))
    (difference,) = golden_runs.differences(drifted, recorded)
    # Divided by the array's scale (1.0), not by the tiny entry that doubled.
    assert difference.key == 'weight' and difference.floating and difference.max_rel == pytest.approx(4e-6, rel=0.01)
    assert beyond_tolerance([difference]) == []

    changed = dict(recorded, games=np.array([3, 5]), weight=np.array([0.51, -1.0, 1e-9], dtype=np.float32),
                   nan=np.array([0.0, 1.0]), **{'config.policy.learn.lr': np.array(1.0001e-3),
                                                text: np.frombuffer(b'{"phase": "reset"}', dtype=np.uint8)})
    found = golden_runs.differences(changed, recorded)
    assert sorted(d.key for d in beyond_tolerance(found)) == [
        f'{text}.phase', 'config.policy.learn.lr', 'games', 'nan', 'weight']
    assert {d.key: d.max_rel for d in found}['nan'] == np.inf  # a NaN that appeared is never within tolerance

    gone = {k: v for k, v in recorded.items() if k != 'games'}
    assert [(d.key, d.reason) for d in golden_runs.differences(gone, recorded)] == [('games', 'missing')]
    assert [(d.key, d.reason) for d in golden_runs.differences(dict(recorded, games=np.array([3.0, 4.0])),
                                                               recorded)] == [('games', 'dtype')]


def test_is_configuration_names_the_config_copies_only():
    assert is_configuration('config.policy.learn.lr')
    assert is_configuration('checkpoint.league_state.config.rating.k_factor')
    assert is_configuration('params.init.pt.policy_cfg.learn.value_coef')
    assert not is_configuration('checkpoint.learner.policy.optimizer.state.3.exp_avg')
    assert not is_configuration('summary.exact.meta_exploitability')


def test_the_refactor_tool_passes_identical_runs_and_prints_each_difference(tmp_path, capsys):
    recorded = {'games': np.array([3, 4]), 'weight': np.array([0.5, -1.0], dtype=np.float32),
                golden_runs.TEXT_KEY: np.frombuffer(b'{}', dtype=np.uint8)}
    np.savez_compressed(golden_runs.golden_path('cartpole', str(tmp_path)), **recorded)
    # The module with its seeded run replaced by a canned record: the tool's logic without a run's minutes.
    rerun = types.SimpleNamespace(**vars(golden_runs))
    rerun.run_case = lambda name, workdir: dict(recorded)
    assert golden_tool.compare(rerun, str(tmp_path), None) == 0
    assert capsys.readouterr().out.splitlines()[-1] == 'IDENTICAL'

    # A float off by one unit in the last place is a difference to this tool: it is exact, unlike the test.
    rerun.run_case = lambda name, workdir: dict(recorded, weight=np.array([np.nextafter(np.float32(0.5), 1),
                                                                           -1.0], dtype=np.float32))
    assert golden_tool.compare(rerun, str(tmp_path), None) == 1
    out = capsys.readouterr().out
    assert '  cartpole weight: max abs diff 5.96e-08' in out and out.splitlines()[-1] == 'DIFFERENT: cartpole'


def test_the_refactor_tool_names_a_directory_without_recordings(tmp_path):
    with pytest.raises(SystemExit, match='holds no recording'):
        golden_tool.main(['compare', str(tmp_path)])
    with pytest.raises(SystemExit, match='is not a directory'):
        golden_tool.main(['compare', str(tmp_path / 'absent')])
