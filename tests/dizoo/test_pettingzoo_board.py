"""PettingZoo classic games draw a text board for ``sparring play``; an env that gives no text is refused first."""
import pytest
from easydict import EasyDict

from sparring.config.schema import ConfigError
from sparring.framework.play import _table
from sparring.worker.env.battle import make_battle_env

pytest.importorskip('pettingzoo')
pytest.importorskip('pettingzoo.classic.connect_four.connect_four')


def _game(name):
    env = make_battle_env(dict(type='pettingzoo', env=name), 1, 0)
    game = env.envs[0]
    game.reset(seed=0)
    return env, game


def test_connect_four_is_drawn_from_its_observation_with_the_move_numbers():
    env, game = _game('classic.connect_four_v3')
    game.step({'player_0': 3, 'player_1': 0})
    game.step({'player_0': 0, 'player_1': 3})
    rows = game.render().splitlines()
    assert rows[4:] == ['...O...', '...X...', '0123456   (moves: column numbers)',
                        'X: player_0, O: player_1; X (player_0) to move']
    env.close()


def test_tictactoe_cells_are_numbered_as_its_actions():
    env, game = _game('classic.tictactoe_v3')
    game.step({'player_1': 5, 'player_2': 0})
    assert game.render().splitlines()[:4] == ['...', '..X', '...',
                                              '(moves: cells numbered row by row, 0 at the top left to 8)']
    env.close()


def test_play_shows_connect_four_and_refuses_an_env_without_a_text_board_before_the_game():
    table = _table(EasyDict(env=dict(type='pettingzoo', env='classic.connect_four_v3')), 0)
    assert table.board().splitlines()[0] == '.......'
    table.game.close()
    with pytest.raises(ConfigError, match=r"^play: env 'pettingzoo' cannot draw its board as text: render\(\) "
                                          r"returned None; expected a str"):
        _table(EasyDict(env=dict(type='pettingzoo', env='classic.leduc_holdem_v4')), 0)
