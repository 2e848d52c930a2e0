"""The contributing page's table of ``framework/`` modules names every module there, and no other."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_framework_table_lists_every_module_once():
    with open(os.path.join(ROOT, 'docs', 'contributing.md')) as f:
        page = f.read()
    section = page.split('### The modules of `framework/`', 1)[1].split('\n## ', 1)[0]
    listed = re.findall(r'^\| `([a-z_]+\.py)` \|', section, flags=re.M)
    present = sorted(name for name in os.listdir(os.path.join(ROOT, 'framework'))
                     if name.endswith('.py') and name != '__init__.py')
    assert len(listed) == len(set(listed)), 'a module is listed twice'
    assert sorted(listed) == present, (f'listed but gone: {sorted(set(listed) - set(present))}; '
                                       f'not listed: {sorted(set(present) - set(listed))}')
