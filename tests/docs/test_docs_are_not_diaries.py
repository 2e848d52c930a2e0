"""The docs are written for a reader who was not there: no page names a commit, a work session or an issue
number, and no guide runs past 3,000 words (a longer one is a how-to and a results page in one)."""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, 'docs')
GUIDE_WORDS = 3000

# What a lab notebook says and a product page does not. A commit hash: 7 to 40 hex digits holding a letter and
# a digit (so neither a number nor a word). Sessions and issues: numbered, or "the earlier session".
DIARY = [
    ('a commit hash', re.compile(r'\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b')),
    ('a numbered session', re.compile(r'\bsessions? \d+', re.I)),
    ('a work session', re.compile(r'\b(?:earlier|previous|this|last|next|another|that) session\b', re.I)),
    ('an issue number', re.compile(r'\bissues? #?\d+|(?<![\w/&])#\d+\b', re.I)),
    ("the issue's wording", re.compile(r"\bthe issue(?:'s)?\b", re.I)),
]


def pages():
    out = [os.path.join(ROOT, 'README.md'), os.path.join(ROOT, 'CHANGELOG.md')]
    for folder, _, names in os.walk(DOCS):
        out += [os.path.join(folder, n) for n in sorted(names) if n.endswith('.md')]
    return [p for p in out if os.path.exists(p)]


def diary_lines(text):
    """``(line number, what, matched text)`` of each diary mark in ``text``."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in DIARY:
            for match in pattern.finditer(line):
                found.append((number, what, match.group(0)))
    return found


@pytest.mark.parametrize('path', pages(), ids=lambda p: os.path.relpath(p, ROOT))
def test_no_page_names_a_commit_a_session_or_an_issue(path):
    with open(path) as f:
        found = diary_lines(f.read())
    assert not found, '\n'.join(f'{os.path.relpath(path, ROOT)}:{n}: {what} ({text!r})' for n, what, text in found)


@pytest.mark.parametrize('path', [p for p in pages() if os.sep + 'guides' + os.sep in p],
                         ids=lambda p: os.path.relpath(p, ROOT))
def test_no_guide_is_longer_than_3000_words(path):
    with open(path) as f:
        words = len(f.read().split())
    assert words <= GUIDE_WORDS, f'{os.path.relpath(path, ROOT)}: {words} words; a guide holds at most {GUIDE_WORDS}'


def test_the_patterns_catch_a_diary_and_spare_a_product_page():
    diary = ('measured at commit a981593 in session 14; the earlier session saw 12 s (issue #27, see #33), '
             "against the issue's target")
    assert [what for _, what, _ in diary_lines(diary)] == [
        'a commit hash', 'a numbered session', 'a work session', 'an issue number', 'an issue number',
        "the issue's wording"]
    product = ('a session of the commander (heartbeats, 600 s); 1,766 positions; colour #3f51b5; '
               'sha 0123456 and deadbeef; see [the guide](guides/sac.md#measured)')
    assert diary_lines(product) == []
