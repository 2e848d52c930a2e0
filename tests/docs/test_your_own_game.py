"""The "Your own game" page, as a new user walks it: its game module in a folder of its own, ``check-env``
passes it, a small league trains on it, and from another folder eval, play, export and report use the run.
The same game without its turn flag makes ``check-env`` warn."""
import importlib.util
import os
import re
import subprocess
import sys

import pytest

# The page's blocks, found as the examples' runner finds them (it is a script beside this file, not a package).
_spec = importlib.util.spec_from_file_location('doc_examples', os.path.join(os.path.dirname(__file__), 'doc_examples.py'))
doc_examples = sys.modules.setdefault('doc_examples', importlib.util.module_from_spec(_spec))
if not hasattr(doc_examples, 'blocks_of'):
    _spec.loader.exec_module(doc_examples)
ROOT, blocks_of = doc_examples.ROOT, doc_examples.blocks_of

pytestmark = pytest.mark.docs

PAGE = os.path.join('docs', 'guides', 'your-own-game.md')
TURN_FLAG = 'planes[-1] = float(seat == self.mover)  # whose turn it is'
CONFIG = '''config = dict(
    exp_name='runs/nim', seed=3, import_names=['nim_env'],
    env=dict(type='nim', max_stones=7, max_take=2, collector_env_num=8, evaluator_env_num=4, n_evaluator_episodes=20),
    policy=dict(type='ppo', model=dict(hidden_sizes=[32]), collect=dict(n_steps=8),
                learn=dict(epochs=2, num_minibatches=2, lr=1e-2)),
    league=dict(type='one_vs_one'),
    battle=dict(eval_deterministic=True),  # evaluated against the random bot, the default reference player
    train=dict(max_env_steps=640, eval_every_iters=0, progress_bar=False, tensorboard=False),
)
'''


def _game_module() -> str:
    """The page's Nim class, as the module a user would save it in."""
    with open(os.path.join(ROOT, PAGE)) as f:
        [block] = [b for b in blocks_of(f.read(), PAGE) if 'class NimEnv(BattleEnv)' in b.code]
    assert TURN_FLAG in block.code
    return block.code


def _folder_with_game(path, module: str):
    path.mkdir()
    (path / 'nim_env.py').write_text(module)
    (path / 'nim_config.py').write_text(CONFIG)
    return path


@pytest.fixture
def sparring(tmp_path):
    """``sparring(*args, cwd=...)``: the command line in a fresh process that sees only this checkout."""
    package = tmp_path / 'pkg'
    package.mkdir()
    os.symlink(ROOT, package / 'sparring')
    env = dict(os.environ, PYTHONPATH=str(package), OMP_NUM_THREADS='1', PYTHONUNBUFFERED='1', MPLBACKEND='Agg')

    def run(*args, cwd, spawn=False):
        command = [sys.executable, '-m', 'sparring.framework.cli', *args]
        if spawn:
            pexpect = pytest.importorskip('pexpect')
            return pexpect.spawn(command[0], command[1:], cwd=str(cwd), env=env, encoding='utf-8', timeout=120)
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    return run


@pytest.mark.slow
def test_the_pages_game_is_checked_trained_and_its_run_used_from_another_folder(tmp_path, sparring):
    games = _folder_with_game(tmp_path / 'my games', _game_module())
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()

    checked = sparring('check-env', 'nim_config.py', '--games', '10', cwd=games)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith('check-env nim: passed') and 'warning:' not in checked.stdout

    trained = sparring('train', 'nim_config.py', cwd=games)
    assert trained.returncode == 0, trained.stderr[-3000:]
    run = str(games / 'runs' / 'nim')

    evaluated = sparring('eval', run, '--against', 'bot:random', '--games', '10', cwd=elsewhere)
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    assert 'random' in evaluated.stdout
    exported = sparring('export', run, '--format', 'torchscript', '--out', 'nim.pt', cwd=elsewhere)
    assert exported.returncode == 0 and (elsewhere / 'nim.pt').exists(), exported.stderr[-3000:]
    reported = sparring('report', run, cwd=elsewhere)
    assert reported.returncode == 0 and 'report:' in reported.stdout, reported.stderr[-3000:]

    child = sparring('play', run, '--seat', 'first', cwd=elsewhere, spawn=True)
    prompt = re.compile(r'your move \(([0-9 ]+); q quits\): ')
    for _ in range(2):  # two moves, unless the game ends first
        if child.expect([prompt, r'you win|you lose']) == 1:
            break
        assert re.search(r'\d+ stones left; player_0 to move', child.before)
        child.sendline(child.match.group(1).split()[0])
    else:
        child.expect(prompt)
        child.sendline('q')
        child.expect('you quit the game')
    child.expect(pytest.importorskip('pexpect').EOF)
    child.close()
    assert child.exitstatus in (0, 1)

    os.rename(games, tmp_path / 'moved')  # the module is no longer where the run found it
    lost = sparring('eval', str(tmp_path / 'moved' / 'runs' / 'nim'), '--against', 'bot:random', cwd=elsewhere)
    assert lost.returncode == 2
    assert (f"import_names: module 'nim_env' not found; the run imported it from {games}"
            in lost.stderr), lost.stderr


@pytest.mark.slow
def test_the_game_without_its_turn_flag_makes_check_env_warn(tmp_path, sparring):
    blind = _folder_with_game(tmp_path / 'blind', _game_module().replace(TURN_FLAG, 'pass'))
    checked = sparring('check-env', 'nim_config.py', '--games', '5', cwd=blind)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    [warning] = [line for line in checked.stdout.splitlines() if line.startswith('warning:')]
    assert 'the seat to move and the waiting seat got the same observation' in warning
    assert 'learns their average' in warning
