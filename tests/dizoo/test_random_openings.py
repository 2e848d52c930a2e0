"""Random openings of the line games (``env.random_opening_plies``): seeded, legal, never a finished start, training only."""

import numpy as np
import pytest

from sparring.config.schema import ConfigError
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.worker.env.battle import make_battle_env

C4 = BoardGeometry(6, 7, 4, gravity=True)


def openings(seed: int, plies=(0, 20), num_envs: int = 64, game: str = 'connect_four'):
    """The starts of ``num_envs`` fresh training games: the env after reset."""
    env = make_battle_env(dict(type=game, random_opening_plies=list(plies)), num_envs, seed, training=True)
    env.reset(seed=seed)
    return env


def stone_counts(stones: np.ndarray) -> np.ndarray:
    return np.array([[bin(int(s)).count('1') for s in row] for row in stones])


def test_the_same_seed_gives_the_same_openings_and_another_seed_others():
    a, b, c = openings(5), openings(5), openings(6)
    np.testing.assert_array_equal(a.stones, b.stones)
    np.testing.assert_array_equal(a.mover, b.mover)
    assert (a.stones != c.stones).any()
    # The games that start after a finished one draw their openings from the same stream too.
    for env in (a, b):
        actions = np.zeros((64, 2), np.int64)
        for _ in range(30):
            step = env.step(actions)
            actions[:] = step.action_mask.argmax(axis=2)  # the first legal column of whoever moves
    np.testing.assert_array_equal(a.stones, b.stones)


def test_openings_are_legal_random_plies_of_the_drawn_lengths():
    env = openings(7, plies=(3, 12), num_envs=400)
    counts = stone_counts(env.stones)
    plies = counts.sum(axis=1)
    assert plies.min() >= 3 and plies.max() <= 12
    assert len(set(plies)) > 5  # k is drawn per game, not once for all
    # Seat 0 moved first and the seats alternated: seat 0 has as many stones as seat 1, or one more, and
    # the seat to move is the one with fewer.
    np.testing.assert_array_equal(counts[:, 0] - counts[:, 1], env.mover)
    # Gravity: every stone lies on the floor or on another stone, and the seats never share a cell.
    occupied = env.stones[:, 0] | env.stones[:, 1]
    assert not (env.stones[:, 0] & env.stones[:, 1]).any()
    floor = np.uint64(sum(1 << (c * C4.column_bits) for c in range(C4.cols)))
    assert not (occupied & ~((occupied << np.uint64(1)) | floor)).any()


def test_an_opening_never_hands_over_a_finished_game():
    env = openings(11, plies=(30, 41), num_envs=300)  # deep openings: lines and full boards are near
    step = env.reset(seed=11)
    occupied = env.stones[:, 0] | env.stones[:, 1]
    assert not C4.has_line(env.stones[:, 0]).any() and not C4.has_line(env.stones[:, 1]).any()
    assert (occupied != C4.full_board).all()
    movers = step.action_mask[np.arange(300), env.mover]
    assert movers.any(axis=1).all()  # the seat to move has a legal move
    assert not step.action_mask[np.arange(300), 1 - env.mover].any()


def test_tictactoe_openings_keep_the_same_rules():
    env = openings(3, plies=(0, 8), num_envs=200, game='tictactoe')
    tic = BoardGeometry(3, 3, 3, gravity=False)
    assert not tic.has_line(env.stones[:, 0]).any() and not tic.has_line(env.stones[:, 1]).any()
    counts = stone_counts(env.stones)
    np.testing.assert_array_equal(counts[:, 0] - counts[:, 1], env.mover)


def test_evaluation_envs_start_from_the_empty_board():
    env = make_battle_env(dict(type='connect_four', random_opening_plies=[4, 10]), 16, 0)  # not training
    env.reset(seed=0)
    assert env.cfg.random_opening_plies is None
    assert not env.stones.any() and not env.mover.any()


def test_without_the_option_every_game_starts_empty():
    env = make_battle_env(dict(type='connect_four'), 16, 0, training=True)
    env.reset(seed=0)
    assert not env.stones.any()


@pytest.mark.parametrize('plies, expected', [
    ([5, 2], r'0 <= lo <= hi, got \[5, 2\]'),
    ([-1, 3], r'0 <= lo <= hi'),
    ([1.5, 3], r'of ints'),
    (4, r'\[lo, hi\]'),
    ([0, 42], r'"env.random_opening_plies": \[0, 42\] would fill the 6x7 board; expected hi < 42'),
])
def test_a_bad_ply_range_is_rejected_by_name(plies, expected):
    with pytest.raises(ConfigError, match=expected):
        make_battle_env(dict(type='connect_four', random_opening_plies=plies), 1, 0, training=True)


def _tactic_share(env) -> np.ndarray:
    rows = np.arange(env.num_envs)
    return C4.tactic_moves(env.stones[rows, env.mover], env.stones[rows, 1 - env.mover]).any(axis=1)


def test_tactical_openings_leave_a_win_or_one_block_in_their_share_of_games():
    def starts(share, seed=0):
        env = make_battle_env(dict(type='connect_four', random_opening_plies=[0, 30], tactical_openings=share),
                              2000, seed, training=True)
        env.reset(seed=seed)
        return env
    plain, half, every = starts(0.0), starts(0.5), starts(1.0)
    # Openings alone leave a tactic in about half the starts; drawn again for a share, in that share as well.
    assert 0.4 < _tactic_share(plain).mean() < 0.65
    assert _tactic_share(half).mean() > _tactic_share(plain).mean() + 0.15
    assert _tactic_share(every).mean() > 0.99
    # Still legal random openings that never hand over a finished game, seeded like the rest.
    assert not C4.has_line(every.stones[:, 0]).any() and not C4.has_line(every.stones[:, 1]).any()
    np.testing.assert_array_equal(stone_counts(every.stones)[:, 0] - stone_counts(every.stones)[:, 1], every.mover)
    np.testing.assert_array_equal(starts(1.0).stones, every.stones)
    # Off, the random stream is the openings' own: the same starts as without the key.
    np.testing.assert_array_equal(plain.stones, openings(0, plies=(0, 30), num_envs=2000).stones)


def test_tactical_openings_need_openings_and_stay_out_of_evaluation():
    with pytest.raises(ConfigError, match=r'"env.tactical_openings": 0.5 .* env.random_opening_plies is None'):
        make_battle_env(dict(type='connect_four', tactical_openings=0.5), 1, 0, training=True)
    with pytest.raises(ConfigError, match='tactical_openings'):
        make_battle_env(dict(type='connect_four', random_opening_plies=[0, 8], tactical_openings=1.5), 1, 0,
                        training=True)
    env = make_battle_env(dict(type='connect_four', random_opening_plies=[4, 10], tactical_openings=1.0), 16, 0)
    env.reset(seed=0)
    assert not env.stones.any()
