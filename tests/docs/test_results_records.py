"""The benchmark records are stamped, and the records page shows every entry with its stamp."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'docs', 'gen'))
sys.path.insert(0, os.path.join(ROOT, 'benchmarks'))

import results_file  # noqa: E402  (benchmarks/ and docs/gen are not packages)
import results_records  # noqa: E402


def test_every_committed_entry_has_a_complete_stamp():
    assert results_records.unstamped(results_records.load()) == []
    assert results_records.STAMPS == results_file.STAMPS and results_records.STAMP_FIELDS == results_file.STAMP_FIELDS


def test_the_records_page_shows_every_entry_with_its_stamp():
    page = results_records.render()
    for name, record in results_records.load().items():
        assert f'## `{name}.json`' in page
        section = page.split(f'## `{name}.json`')[1].split('\n## ')[0]
        for key in results_file.entries(record):
            stamp = results_records.stamp_of(record, key)
            row = next(line for line in section.splitlines() if line.startswith(f'| {results_records._code(key)} |'))
            assert results_records._short(stamp['commit']) in row and results_records._text(stamp['date']) in row


def test_merge_results_stamps_what_it_writes_and_keeps_the_other_entries(tmp_path, monkeypatch):
    monkeypatch.setenv('SPARRING_RESULTS_DIR', str(tmp_path))
    results_file.merge_results('bench', {'first': {'x': 1}}, command='python benchmarks/bench.py --a')
    monkeypatch.setattr(sys, 'argv', ['benchmarks/bench.py', '--b'])
    results_file.merge_results('bench', {'second': 2})
    with open(tmp_path / 'bench.json') as f:
        record = json.load(f)
    assert results_file.entries(record) == {'first': {'x': 1}, 'second': 2}
    stamps = record[results_file.STAMPS]
    assert set(stamps) == {'first', 'second'}
    assert stamps['first']['command'] == 'python benchmarks/bench.py --a'
    assert stamps['second']['command'].endswith('benchmarks/bench.py --b')  # sys.argv of this process
    head = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if head:
        assert stamps['first']['commit'].split('+')[0] == head
    for stamp in stamps.values():
        assert set(results_file.STAMP_FIELDS) <= set(stamp) and len(stamp['load_average']) == 3
    assert not os.path.exists(os.path.join(results_file.RESULTS_DIR, 'bench.json'))


def test_an_unstamped_entry_fails_the_page_naming_it(tmp_path):
    with open(tmp_path / 'bench.json', 'w') as f:
        json.dump({'run': 1, results_file.STAMPS: {}}, f)
    with pytest.raises(results_records.UnstampedEntries, match=r'1 record entries .*: bench: run$'):
        results_records.render(str(tmp_path))


def test_an_entry_holding_its_own_stamp_counts_as_stamped(tmp_path):
    import results_file as rf
    with open(tmp_path / 'bench.json', 'w') as f:
        json.dump({'run': dict(rf.stamp('python benchmarks/bench.py'), figure=1)}, f)
    page = results_records.render(str(tmp_path))
    assert '| <code>run</code> |' in page and 'python benchmarks/bench.py' in page


def test_a_record_that_is_one_stamped_run_stamps_all_its_entries(tmp_path):
    with open(tmp_path / 'bench.json', 'w') as f:
        json.dump({'machine': {'cpu_model': 'X', 'load_average': [1, 1, 1]}, 'commit': 'abc', 'date': 'd',
                   'command': 'python benchmarks/bench.py', 'figure': 1}, f)
    page = results_records.render(str(tmp_path))
    assert page.count('python benchmarks/bench.py') == 5  # machine, commit, date, command, figure


def test_a_record_whose_entry_is_the_runs_stamp_stamps_all_its_entries(tmp_path):
    import results_file as rf
    with open(tmp_path / 'bench.json', 'w') as f:
        json.dump({'record': rf.stamp('python benchmarks/bench.py'), 'settings': {'a': 1}, 'figure': [1, 2]}, f)
    page = results_records.render(str(tmp_path))
    assert page.count('python benchmarks/bench.py') == 3


def test_each_results_section_names_a_record_that_exists_and_a_missing_one_fails(tmp_path):
    import re
    with open(os.path.join(ROOT, 'docs', 'results.md')) as f:
        named = re.findall(r'<!-- record: (\w+) -->', f.read())
    assert 'vs_sb3' in named and 'dqn' in named
    for name in named:
        assert results_records.record_line(name).startswith(f'*Record `benchmarks/results/{name}.json`: ')
    with pytest.raises(results_records.UnstampedEntries, match="names the record 'nothing'"):
        results_records.record_line('nothing', str(tmp_path))


def test_a_record_line_links_to_the_records_page_from_any_folder():
    assert '](records.md#vs-sb3)' in results_records.record_line('vs_sb3')
    assert '](../records.md#vs-sb3)' in results_records.record_line('vs_sb3', page='concepts/categories.md')
