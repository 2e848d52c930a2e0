"""Seeded serial runs reproduce their recorded numbers bit for bit (see ``golden_runs.py``)."""
import importlib.util
import json
import os

import numpy as np
import pytest

_spec = importlib.util.spec_from_file_location('golden_runs', os.path.join(os.path.dirname(__file__), 'golden_runs.py'))
golden_runs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden_runs)
CASES, TEXT_KEY, golden_path, run_case = golden_runs.CASES, golden_runs.TEXT_KEY, golden_runs.golden_path, golden_runs.run_case


def _text(arrays) -> dict:
    return json.loads(bytes(arrays[TEXT_KEY]).decode('utf-8'))


@pytest.mark.parametrize('name', sorted(CASES))
def test_a_seeded_run_reproduces_its_recording(name, tmp_path):
    recorded = np.load(golden_path(name))
    now = run_case(name, str(tmp_path))
    # Every recorded number must come out again; a later version may add records (a new league field).
    missing = sorted(set(recorded.files) - set(now))
    assert not missing, f'{len(missing)} recorded value(s) are gone, e.g. {missing[:5]}'
    text_now, text_then = _text(now), _text(recorded)
    assert {key: text_now.get(key) for key in text_then} == text_then
    differ = [key for key in recorded.files if key != TEXT_KEY
              and not (now[key].shape == recorded[key].shape and now[key].dtype == recorded[key].dtype
                       and np.array_equal(now[key], recorded[key], equal_nan=True))]
    assert not differ, f'{len(differ)} record(s) differ, e.g. {differ[:5]}'
