"""The sample output on the getting-started page is what its first config prints: the same iterations, env
steps, evaluations, budget line and checkpoint (the figures that depend on the machine, such as ``sps``, and
the losses, which differ in the last digits between CPUs, are left out of the comparison)."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, 'docs', 'getting-started.md')


def _block_after(text: str, heading: str, language: str) -> str:
    rest = text[text.index(heading):]
    start = rest.index(f'```{language}\n') + len(f'```{language}\n')
    return rest[start:rest.index('```', start)]


def skeleton(line: str) -> str:
    """What of a log line a run on any machine repeats."""
    line = line.strip()
    match = re.match(r'(it=\d+ steps=\d+) ', line)
    if match:
        return match.group(1)
    match = re.match(r'(eval agent \(iteration \d+\)):', line)
    if match:
        return match.group(1)
    return line


@pytest.mark.slow
def test_the_sample_output_is_what_the_first_config_prints(tmp_path):
    with open(PAGE) as f:
        page = f.read()
    code = _block_after(page, '## A first config and one call', 'python')
    sample = _block_after(page, '### Log lines', 'text')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, '-c', code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = [skeleton(line) for line in (proc.stdout + proc.stderr).splitlines()]
    expected = [skeleton(line) for line in sample.splitlines() if line.strip() and line.strip() != '...']
    position = 0
    for line in expected:
        assert line in printed[position:], f'the page shows {line!r}; the run printed:\n' + '\n'.join(printed)
        position = printed.index(line, position) + 1
