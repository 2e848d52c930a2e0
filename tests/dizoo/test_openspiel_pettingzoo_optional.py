"""OpenSpiel and PettingZoo are optional: without them sparring.dizoo imports, their configs compile, and building
an env says which extra to install. Runs in a fresh interpreter where both packages are blocked."""
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # a fresh interpreter importing all of dizoo

SCRIPT = textwrap.dedent('''
    import sys
    for name in ('pyspiel', 'open_spiel', 'pettingzoo'):
        sys.modules[name] = None  # "import name" now raises ImportError, as if it were not installed
    import sparring.dizoo
    from sparring.config.compile import compile_config
    from sparring.config.registry import BOT_REGISTRY
    from sparring.worker.env.battle import make_battle_env
    assert 'openspiel_mcts' in BOT_REGISTRY
    for env in (dict(type='openspiel', game='kuhn_poker'), dict(type='pettingzoo', env='classic.connect_four_v3')):
        cfg = compile_config(dict(env=env), save=False)
        try:
            make_battle_env(cfg.env, 1)
        except ImportError as err:
            print(err)
        else:
            print('built without the package')
''')


def test_dizoo_works_without_openspiel_and_pettingzoo():
    out = subprocess.run([sys.executable, '-c', SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2, out.stdout
    assert 'pip install sparring[openspiel]' in lines[0]
    assert 'pip install sparring[pettingzoo]' in lines[1]
