"""``benchmarks/long_run.py --smoke``: the long-run driver and the capacity measurement run end to end in seconds,
every resume brings back exactly the env steps driven, and the record goes to $SPARRING_RESULTS_DIR, stamped."""
import importlib
import json
import os

import pytest

pytestmark = pytest.mark.slow  # resumes in fresh interpreters and a commander process over the real transport

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'benchmarks',
                      'long_run.py')


def test_the_smoke_runs_and_its_figures_hold_together(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(os.path.dirname(SCRIPT))
    long_run = importlib.import_module('long_run')  # by name: the commander's process imports it the same way
    monkeypatch.setenv('SPARRING_RESULTS_DIR', str(tmp_path))
    result = long_run.main(['--smoke'])
    rows = result['resume']
    assert [row['env_steps'] for row in rows] == sorted(row['env_steps'] for row in rows) and len(rows) == 3
    for row in rows:
        assert row['resumed_env_steps'] == row['env_steps'] and row['resume_seconds'] > 0
        assert row['resume_peak_rss_mb'] >= row['rss_before_mb'] > 0
        assert 0 < row['journal_bytes_read_at_resume'] <= row['journal_bytes'] <= row['journal_bytes_written'] + 64
    assert result['resume_at_1e9_extrapolated']['env_steps'] == 10 ** 9
    (capacity,) = result['capacity']
    assert capacity['collectors'] == 10 and capacity['chunk_reports_per_second'] > 0
    assert capacity['reply_p99_ms'] >= capacity['reply_p50_ms'] > 0
    with open(tmp_path / 'long_run.json') as f:
        stamps = json.load(f)['_stamps']
    assert set(stamps) == set(result) and all('--smoke' in stamp['command'] for stamp in stamps.values())
