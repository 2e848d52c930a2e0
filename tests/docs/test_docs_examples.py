"""Every Python example of README.md and docs/ runs: one test per page, its blocks in order in one
namespace, in a fresh process and a temporary working directory, with this checkout importable as
``sparring``. A display-only block is marked ``<!-- docs: skip -->`` on the line before its fence."""
import importlib.util
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.docs

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location('doc_examples', os.path.join(HERE, 'doc_examples.py'))
doc_examples = importlib.util.module_from_spec(spec)
sys.modules.setdefault('doc_examples', doc_examples)  # dataclasses look their module up there
spec.loader.exec_module(doc_examples)

ROOT = doc_examples.ROOT
PAGE_TIMEOUT_SECONDS = 600  # a page's examples use budgets of seconds; this only stops a hung one


def _runnable(page: str) -> int:
    with open(os.path.join(ROOT, page)) as f:
        return sum(not b.skipped for b in doc_examples.blocks_of(f.read(), page))


PAGES = [page for page in doc_examples.doc_pages() if _runnable(page)]


@pytest.fixture(scope='module')
def package_dir(tmp_path_factory):
    """A folder holding ``sparring -> this checkout``, for the example's PYTHONPATH."""
    folder = tmp_path_factory.mktemp('pkg')
    os.symlink(ROOT, folder / 'sparring')
    return str(folder)


@pytest.mark.parametrize('page', PAGES)
@pytest.mark.slow
def test_page_examples_run(page, tmp_path, package_dir):
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([package_dir] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p])
    env.setdefault('MPLBACKEND', 'Agg')
    done = subprocess.run([sys.executable, os.path.join(HERE, 'doc_examples.py'), os.path.join(ROOT, page)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=PAGE_TIMEOUT_SECONDS)
    assert done.returncode == 0, f'{page}:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}'


# -- the collector itself --------------------------------------------------------------------------

PAGE = '''# A page

```python
x = 1
```

<!-- docs: skip -->
```python
x = undefined_name
```

```bash
echo not python
```

1. In a list:

    ```python
    y = x + 1
    ```

````python
z = y * 10  # a longer fence holding ``` inside
s = """
```
"""
````
'''


def test_blocks_are_found_in_order_with_their_skip_mark():
    blocks = doc_examples.blocks_of(PAGE, 'page.md')
    assert [b.code.splitlines()[0] for b in blocks] == ['x = 1', 'x = undefined_name', 'y = x + 1',
                                                        'z = y * 10  # a longer fence holding ``` inside']
    assert [b.skipped for b in blocks] == [False, True, False, False]
    assert [b.line for b in blocks] == [4, 9, 19, 23]


def test_a_page_runs_in_one_namespace_and_skips_marked_blocks(tmp_path, capsys):
    page = tmp_path / 'page.md'
    page.write_text(PAGE)
    assert doc_examples.run_page(str(page)) == 0
    assert '3 blocks ran' in capsys.readouterr().out


def test_a_failing_block_names_the_page_and_its_line(tmp_path, capsys):
    page = tmp_path / 'broken.md'
    page.write_text('# Broken\n\n```python\nok = 1\n```\n\n```python\n1 / 0\n```\n')
    assert doc_examples.run_page(str(page)) == 1
    err = capsys.readouterr().err
    assert 'ZeroDivisionError' in err
    assert f'docs example failed: {page}, the block at line 8' in err


def test_every_page_with_examples_is_collected():
    pages = doc_examples.doc_pages()
    assert 'README.md' in pages
    assert os.path.join('docs', 'getting-started.md') in pages
    assert os.path.join('docs', 'getting-started.md') in PAGES  # it has runnable examples
