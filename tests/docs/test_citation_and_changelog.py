"""CITATION.cff and CHANGELOG.md name the version the package reports."""
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_citation_file_is_valid_and_names_the_package_version():
    yaml = pytest.importorskip('yaml')
    import sparring
    with open(os.path.join(ROOT, 'CITATION.cff')) as f:
        citation = yaml.safe_load(f)
    assert citation['cff-version'] == '1.2.0'
    assert {'message', 'title', 'authors', 'version'} <= set(citation)
    assert citation['version'] == sparring.__version__


def test_the_changelog_has_a_section_for_the_package_version():
    import sparring
    with open(os.path.join(ROOT, 'CHANGELOG.md')) as f:
        headings = [line.strip() for line in f if line.startswith('## ')]
    assert f'## {sparring.__version__}' in headings
