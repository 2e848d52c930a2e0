"""``sparring play`` through a pseudo-terminal: a person plays tic-tac-toe against a trained player."""
import functools
import os
import re
import sys

import pytest

from sparring.framework.play import play_game

PROMPT = re.compile(r'your move \(([0-9 ]+); q quits\): ')
END = re.compile(r'(you win|you lose|a draw) \(you played (first|second)\)')


try:
    import pexpect  # a test extra: the terminal tests skip without it
except ImportError:
    pexpect = None


def spawn_play(run_dir: str, *extra: str):
    if pexpect is None:
        pytest.skip('pexpect is not installed (pip install sparring[test])')
    env = dict(os.environ, OMP_NUM_THREADS='1', PYTHONUNBUFFERED='1')
    return pexpect.spawn(sys.executable, ['-m', 'sparring.framework.cli', 'play', run_dir, *extra], env=env,
                         encoding='utf-8', timeout=60, dimensions=(40, 120))


@pytest.mark.slow
def test_a_game_in_a_terminal_refuses_bad_moves_and_ends_with_a_result(trained_tictactoe):
    run_dir, _ = trained_tictactoe
    child = spawn_play(run_dir, '--seat', 'first')
    child.expect(PROMPT)
    assert child.match.group(1).split() == [str(c) for c in range(9)]  # an empty board: every cell
    child.sendline('4')
    child.expect(PROMPT)
    child.sendline('4')  # taken by the first move
    child.expect('4 is not a legal move here')
    child.expect(PROMPT)
    child.sendline('middle')
    child.expect("'middle' is not a move")
    child.expect(PROMPT)
    while True:
        legal = child.match.group(1).split()
        assert '4' not in legal
        child.sendline(legal[0])
        if child.expect([PROMPT, END]) == 1:
            break
    assert child.match.group(2) == 'first'
    final_board = [row for row in child.before.splitlines() if row and set(row.strip()) <= set('XO.')][-3:]
    assert len(final_board) == 3 and all(len(row.strip()) == 3 for row in final_board)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.slow
def test_q_quits(trained_tictactoe):
    run_dir, _ = trained_tictactoe
    child = spawn_play(run_dir, '--seat', 'second')
    child.expect(r'plays \d')  # the trained player moves first
    child.expect(PROMPT)
    child.sendline('q')
    child.expect('you quit the game')
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_play_through_callables_draws_the_board_after_every_move(trained_tictactoe, one_torch_thread):
    run_dir, _ = trained_tictactoe
    written = []

    def read(prompt):
        legal = PROMPT.match(prompt).group(1).split()
        return legal[-1]

    outcome = play_game(run_dir, seat='second', read=read, write=written.append)
    assert outcome in ('win', 'draw', 'loss')
    boards = [w for w in written if w.count('\n') >= 3 and set(w.splitlines()[0]) <= set('XO.')]
    moves = [w for w in written if ' plays ' in w]
    assert len(boards) >= 2 * len(moves) - 1  # drawn before every move and at the end
    assert written[-1].startswith(('you win', 'you lose', 'a draw'))


def test_quitting_with_q_exits_0(trained_tictactoe, monkeypatch, capsys, one_torch_thread):
    from sparring.framework.cli import main
    run_dir, _ = trained_tictactoe
    from sparring.framework import play
    monkeypatch.setattr(play, 'play_game', functools.partial(play.play_game, read=lambda prompt: 'q'))
    assert main(['play', run_dir]) == 0
    assert 'you quit the game' in capsys.readouterr().out
