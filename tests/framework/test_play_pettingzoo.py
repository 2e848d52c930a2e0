"""``sparring play`` through a pseudo-terminal on a PettingZoo classic game (tic-tac-toe through the adapter,
which draws its text board): a run of a few seconds' training, two moves that change the board, then quit."""
import os
import re
import sys

import pytest
import torch

pytest.importorskip('pettingzoo.classic.tictactoe.tictactoe', reason='PettingZoo classic games are not installed')
pexpect = pytest.importorskip('pexpect', reason='pexpect is not installed (pip install sparring[test])')

PROMPT = re.compile(r'your move \(([0-9 ]+); q quits\): ')


@pytest.fixture(scope='module')
def pettingzoo_run(tmp_path_factory):
    """A league trained for two iterations on PettingZoo's tic-tac-toe: enough for a player to play."""
    from sparring.framework import serial_pipeline
    run_dir = str(tmp_path_factory.mktemp('runs') / 'pz_tictactoe')
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        serial_pipeline(dict(
            exp_name=run_dir, seed=2,
            env=dict(type='pettingzoo', env='classic.tictactoe_v3', collector_env_num=2, evaluator_env_num=2,
                     n_evaluator_episodes=2),
            policy=dict(type='ppo', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8),
                        learn=dict(epochs=1, num_minibatches=1)),
            league=dict(type='one_vs_one'),
            train=dict(max_env_steps=32, eval_every_iters=0, checkpoint_every_iters=0, progress_bar=False,
                       tensorboard=False)))
    finally:
        torch.set_num_threads(before)
    return run_dir


def _boards(text: str):
    """The tic-tac-toe boards drawn in ``text``, each as its nine cells in move order."""
    rows = [row.strip() for row in text.splitlines() if re.fullmatch(r'[XO.]{3}', row.strip())]
    return [''.join(rows[i:i + 3]) for i in range(0, len(rows) - 2, 3)]


@pytest.mark.slow
def test_two_moves_on_a_pettingzoo_board_then_quit(pettingzoo_run):
    env = dict(os.environ, OMP_NUM_THREADS='1', PYTHONUNBUFFERED='1')
    child = pexpect.spawn(sys.executable, ['-m', 'sparring.framework.cli', 'play', pettingzoo_run, '--seat', 'first'],
                          env=env, encoding='utf-8', timeout=120, dimensions=(40, 120))
    child.expect(PROMPT)
    assert _boards(child.before) == ['.' * 9]  # an empty board, with how its cells are numbered
    assert 'cells numbered row by row' in child.before
    assert child.match.group(1).split() == [str(c) for c in range(9)]
    board = '.' * 9
    for move in ('4', None):  # the centre, then the first cell still free
        move = move or child.match.group(1).split()[0]
        child.sendline(move)
        child.expect(PROMPT)
        mine, theirs = _boards(child.before)  # after my move, and after the trained player's answer
        expected = board[:int(move)] + 'X' + board[int(move) + 1:]
        assert mine == expected
        answer = int(re.search(r'naive_sp_0 plays (\d)', child.before).group(1))
        assert expected[answer] == '.' and theirs == expected[:answer] + 'O' + expected[answer + 1:]
        assert move not in child.match.group(1).split() and str(answer) not in child.match.group(1).split()
        board = theirs
    child.sendline('q')
    child.expect('you quit the game')
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0  # quitting is a normal end of a game
