"""The results page's tables come from the benchmark records: every table renders from the committed records, the
page holds a marker for each and no table written by hand, and a table shows what its record says."""
import json
import os
import re
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'docs', 'gen'))
sys.path.insert(0, os.path.join(ROOT, 'docs', 'hooks'))

import results_tables  # noqa: E402  (docs/gen is not a package)

PAGE = os.path.join(ROOT, 'docs', 'results.md')
PAGES = [PAGE, os.path.join(ROOT, 'docs', 'perfect-play-levers.md')]  # the pages whose tables come from records


def page_markers():
    out = []
    for path in PAGES:
        with open(path) as f:
            out += re.findall(r'^<!-- table: (\w+) -->$', f.read(), re.M)
    return out


@pytest.mark.parametrize('name', sorted(results_tables.TABLES))
def test_every_table_renders_from_the_committed_records(name):
    lines = results_tables.render(name).splitlines()
    assert lines[0].startswith('| ') and set(lines[1]) <= set('|-') and len(lines) >= 3
    widths = {line.count(' | ') for line in lines if not line.startswith('|---')}
    assert len(widths) == 1, f'{name}: rows of different widths'
    assert 'None' not in '\n'.join(lines) and 'nan' not in '\n'.join(lines).lower().split()


def test_every_table_is_on_the_page_once_and_every_marker_has_a_table():
    markers = page_markers()
    assert sorted(markers) == sorted(results_tables.TABLES), (
        f'on the page without a table: {set(markers) - set(results_tables.TABLES)}; '
        f'tables not on the page: {set(results_tables.TABLES) - set(markers)}')


@pytest.mark.parametrize('path', PAGES, ids=os.path.basename)
def test_the_results_pages_hold_no_table_written_by_hand(path):
    with open(path) as f:
        hand = [line for line in f if line.startswith('|')]
    assert not hand, f'{os.path.relpath(path, ROOT)} has table lines written by hand (make them a table function): {hand[:3]}'


def test_a_table_shows_what_its_record_says(tmp_path):
    shutil.copy(os.path.join(results_tables.RESULTS_DIR, 'league_ops.json'), tmp_path)
    before = results_tables.render('league_ops', results_tables.Records(str(tmp_path)))
    assert '| `finish_job`, 1 game | 255k calls/s | 289k |' in before
    path = tmp_path / 'league_ops.json'
    record = json.loads(path.read_text())
    record['finish_job_per_second']['episodes_1']['median'] = 123_456
    path.write_text(json.dumps(record))
    after = results_tables.render('league_ops', results_tables.Records(str(tmp_path)))
    assert '| `finish_job`, 1 game | 123k calls/s | 289k |' in after


def test_a_missing_record_or_entry_is_named(tmp_path):
    with pytest.raises(results_tables.MissingFigure, match=r'benchmarks/results has no league_ops\.json'):
        results_tables.render('league_ops', results_tables.Records(str(tmp_path)))
    (tmp_path / 'league_ops.json').write_text(json.dumps({'finish_job_per_second': {}}))
    with pytest.raises(results_tables.MissingFigure,
                       match=r"reads 'get_job_info_per_second' of benchmarks/results/league_ops\.json"):
        results_tables.render('league_ops', results_tables.Records(str(tmp_path)))
    (tmp_path / 'league_ops.json').write_text(json.dumps({'finish_job_per_second': {}, 'get_job_info_per_second': {}}))
    with pytest.raises(results_tables.MissingFigure, match=r"the results table 'league_ops' .* found no 'episodes_1'"):
        results_tables.render('league_ops', results_tables.Records(str(tmp_path)))
    with pytest.raises(results_tables.MissingFigure, match="no_such_table"):
        results_tables.render('no_such_table')


def test_the_docs_hook_fills_the_markers_in():
    import reference
    markdown = 'Before `<!-- table: name -->`.\n\n<!-- table: league_ops_size -->\n\nAfter.\n'
    out = reference.on_page_markdown(markdown, None, None, None)
    assert '<!-- table: league_ops_size -->' not in out and '| alphastar, 4 active and 1,000 historical players |' in out
    assert out.startswith('Before `<!-- table: name -->`.')  # quoted inside a line: left as it is


def test_formatting_by_hand():
    assert results_tables.pct(0.994) == '99.4 %' and results_tables.pct(1.0) == '100 %'
    assert results_tables.short(216_873) == '217k' and results_tables.short(7_568) == '7.6k'
    assert results_tables.short(15_067_136) == '15.1M' and results_tables.sig3(44_975) == '45.0k'
    assert results_tables.wdl(dict(win=0.065, draw=0.91, loss=0.025)) == '6.5 / 91 / 2.5 %'
    assert results_tables.span([1.34, 1.26]) == '1.3' and results_tables.span([0.6, 1.4]) == '0.6-1.4'


def test_no_generated_table_names_a_commit_a_session_or_an_issue():
    import importlib.util
    spec = importlib.util.spec_from_file_location('diaries', os.path.join(os.path.dirname(__file__),
                                                                          'test_docs_are_not_diaries.py'))
    diaries = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(diaries)
    found = {name: diaries.diary_lines(results_tables.render(name)) for name in results_tables.TABLES}
    assert not {name: marks for name, marks in found.items() if marks}


def test_every_record_is_shown_on_a_page():
    """A record no table reads and no page names is a measurement nobody can find: each one is read by a results
    table, named with its stamps by a ``<!-- record: NAME -->`` line, or quoted as ``NAME.json`` by a page."""
    records = results_tables.Records()
    for name in results_tables.TABLES:
        results_tables.render(name, records)
    text = ''
    for folder, _, files in os.walk(os.path.join(ROOT, 'docs')):
        for file in files:
            if file.endswith('.md'):
                with open(os.path.join(folder, file)) as f:
                    text += f.read()
    with open(os.path.join(ROOT, 'README.md')) as f:
        text += f.read()
    named = set(re.findall(r'<!-- record: (\w+) -->', text)) | {n for n in records.names() if f'{n}.json' in text}
    unseen = set(records.names()) - set(records.read) - named
    assert not unseen, (f'records in benchmarks/results that no page shows: {sorted(unseen)}; add a line '
                        f'<!-- record: NAME --> where a page quotes its figures (or a table in docs/gen/results_tables.py)')
