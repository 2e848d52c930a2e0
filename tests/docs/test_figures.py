"""The site's figures: each draws from the committed benchmark records, each is shown on a page, and every
figure a page links to is one the build makes."""
import importlib.util
import json
import os
import re
import sys

import pytest

pytest.importorskip('matplotlib')

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, 'docs')
sys.path.insert(0, os.path.join(DOCS, 'gen'))

import example_run  # noqa: E402  (docs/gen is not a package)
import figures  # noqa: E402

FIGURE_LINK = re.compile(r'\]\((?:\.\./)*figures/([^)#]+)\)')


def _page_links():
    links = {}
    for folder, _, names in os.walk(DOCS):
        for name in names:
            if name.endswith('.md'):
                path = os.path.join(folder, name)
                with open(path) as f:
                    for target in FIGURE_LINK.findall(f.read()):
                        links.setdefault(target, []).append(os.path.relpath(path, DOCS))
    return links


@pytest.fixture(scope='module')
def rendered():
    return figures.render_all()


def test_every_figure_draws_from_the_committed_records(rendered):
    assert set(rendered) == set(figures.FIGURES)
    for name, svg in rendered.items():
        assert '<svg' in svg and '</svg>' in svg, name


def test_a_figure_is_the_same_file_for_the_same_records(rendered):
    assert figures.render_all() == rendered


def test_every_figure_is_shown_on_a_page_and_every_link_is_drawn():
    links = _page_links()
    drawn = set(figures.FIGURES) | {f'{example_run_folder()}/{name}' for name in EXAMPLE_FILES}
    assert set(figures.FIGURES) <= set(links), sorted(set(figures.FIGURES) - set(links))
    assert set(links) <= drawn, {k: v for k, v in links.items() if k not in drawn}


def test_a_record_without_the_figures_entry_fails_naming_the_figure(tmp_path):
    with open(tmp_path / 'vs_sb3.json', 'w') as f:
        json.dump({'pendulum': {}}, f)
    with pytest.raises(figures.FigureDataError, match=r"ppo-cartpole-vs-sb3.svg: its record lacks 'cartpole'"):
        figures.render('ppo-cartpole-vs-sb3.svg', figures.load_records(str(tmp_path)))


EXAMPLE_FILES = ('report.html', 'ratings.svg', 'payoff.svg') + example_run.REPORT_CHARTS


def example_run_folder():
    """The folder the docs hook puts the example run's files in (the hook is loaded by path: its module name
    is the same as docs/gen's figures)."""
    spec = importlib.util.spec_from_file_location('figures_hook', os.path.join(DOCS, 'hooks', 'figures.py'))
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return f'{hook.FOLDER}/{hook.EXAMPLE}'.split('/', 1)[1]


def test_the_example_run_is_drawn_again_from_its_saved_state():
    out = example_run.render_example()
    assert set(out) == set(EXAMPLE_FILES)
    assert example_run.RUN_NAME in out['report.html'] and '/tmp' not in out['report.html']
    for name in EXAMPLE_FILES[1:]:
        assert out[name].startswith('<?xml') and '</svg>' in out[name], name


def test_the_kuhn3_figure_draws_every_600_second_entry_and_no_other(tmp_path):
    with open(os.path.join(ROOT, 'benchmarks', 'results', 'kuhn3.json')) as f:
        record = json.load(f)
    entry = record['seed_0_600s']
    with open(tmp_path / 'kuhn3.json', 'w') as f:
        json.dump({'seed_0_600s': entry, 'seed_1_600s': entry, 'seed_0_120s': entry}, f)
    fig = figures.FIGURES['kuhn3-nashconv.svg'](figures.load_records(str(tmp_path)))
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert 'OpenSpiel CFR+, seed 0' in labels and 'OpenSpiel CFR+, seed 1' in labels
    assert not [label for label in labels if '120s' in label or label.endswith('seed 0 120s')]
    assert len([label for label in labels if label.startswith('league')]) == 6  # three measures, two seeds
