"""Tic-tac-toe and connect four: rules, masks, perspective, automatic reset, and their bots' strength."""

import numpy as np
import pytest

from sparring.config.schema import ConfigError
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.config.registry import BOT_REGISTRY
from sparring.worker.env.battle import make_battle_env
from sparring.worker.env.errors import EnvError


def play_moves(game: str, moves, **cfg):
    """Play ``moves`` (seat 0 first, alternating) in one game; returns every step."""
    env = make_battle_env(dict(type=game, **cfg), 1, 0)
    steps = [env.reset()]
    for i, move in enumerate(moves):
        actions = np.zeros((1, 2), np.int64)
        actions[0, i % 2] = move
        steps.append(env.step(actions))
    return env, steps


def has_line_brute_force(planes, k: int):
    """Whether each plane ``[..., rows, cols]`` holds k in a row, by sliding windows (independent of bitboards)."""
    planes = np.asarray(planes) > 0.5
    batch = planes.reshape((-1,) + planes.shape[-2:])
    rows, cols = batch.shape[1:]
    found = np.zeros(len(batch), bool)
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        row_span, col_span = rows - (k - 1) * dr, cols - (k - 1) * abs(dc)
        if row_span <= 0 or col_span <= 0:
            continue
        run = np.ones((len(batch), row_span, col_span), bool)
        for i in range(k):
            # Cell i of a line starting at (r, c) is (r + i*dr, c + i*dc); a falling line starts at c >= k-1.
            r0, c0 = i * dr, (i * dc if dc >= 0 else k - 1 - i)
            run &= batch[:, r0:r0 + row_span, c0:c0 + col_span]
        found |= run.any(axis=(1, 2))
    return found.reshape(planes.shape[:-2])


# Cells are r * 3 + c, row 0 at the top; seat 0's moves are the even positions.
TICTACTOE_WINS = {
    'top row': [0, 3, 1, 4, 2],
    'middle row': [3, 0, 4, 1, 5],
    'left column': [0, 1, 3, 2, 6],
    'right column': [2, 0, 5, 1, 8],
    'main diagonal': [0, 1, 4, 2, 8],
    'anti diagonal': [2, 0, 4, 1, 6],
}
# Columns; the winner's stones are listed first (seat 0), row 0 is the bottom.
CONNECT_FOUR_WINS = {
    'vertical': [3, 4, 3, 4, 3, 4, 3],
    'horizontal': [0, 0, 1, 1, 2, 2, 3],
    'rising diagonal': [0, 1, 1, 2, 2, 3, 2, 3, 3, 6, 3],
    'falling diagonal': [6, 5, 5, 4, 4, 3, 4, 3, 3, 0, 3],
}


@pytest.mark.parametrize('game, moves', [('tictactoe', m) for m in TICTACTOE_WINS.values()]
                         + [('connect_four', m) for m in CONNECT_FOUR_WINS.values()],
                         ids=[f'tictactoe-{n}' for n in TICTACTOE_WINS] + [f'connect_four-{n}' for n in CONNECT_FOUR_WINS])
def test_a_line_wins_on_the_last_move_only(game, moves):
    _, steps = play_moves(game, moves)
    for step in steps[1:-1]:
        assert not step.terminated[0] and not step.reward.any()
    last = steps[-1]
    assert last.terminated[0] and not last.truncated[0]
    assert last.reward.tolist() == [[1.0, -1.0]] and last.result.tolist() == [[1, -1]]
    own_stones = last.final_obs[0, 0, 0]
    assert has_line_brute_force(own_stones, 4 if game == 'connect_four' else 3)


def test_seat_1_can_win_and_gets_the_win():
    _, steps = play_moves('tictactoe', [0, 3, 1, 4, 8, 5])
    assert steps[-1].result.tolist() == [[-1, 1]] and steps[-1].reward.tolist() == [[-1.0, 1.0]]


def test_a_full_board_without_a_line_is_a_draw():
    _, steps = play_moves('tictactoe', [0, 1, 2, 4, 3, 5, 7, 6, 8])
    last = steps[-1]
    assert last.terminated[0] and last.result.tolist() == [[0, 0]] and last.reward.tolist() == [[0.0, 0.0]]
    assert not any(s.terminated[0] for s in steps[1:-1])


def test_finished_games_restart_with_seat_0_on_an_empty_board():
    env, steps = play_moves('connect_four', CONNECT_FOUR_WINS['vertical'])
    last = steps[-1]
    assert last.final_obs[0, 0, 0].sum() == 4 and last.final_obs[0, 1, 0].sum() == 3
    assert not last.obs[0, :, :2].any()
    assert last.to_move.tolist() == [[True, False]]
    assert last.obs[0, 0, 2].all() and not last.obs[0, 1, 2].any()
    assert last.action_mask[0, 0].all() and not last.action_mask[0, 1].any()
    # The final position is what the last mover saw, not the fresh one.
    assert not np.array_equal(last.final_obs, last.obs)


def test_illegal_moves_raise_and_name_env_seat_action_and_legal_actions():
    env, _ = play_moves('tictactoe', [4])
    with pytest.raises(EnvError, match=r"env 0, seat 1 \(player_1\) played illegal action 4; legal actions there: "
                                       r"\[0, 1, 2, 3, 5, 6, 7, 8\]"):
        env.step(np.array([[0, 4]]))
    with pytest.raises(EnvError, match='out of range action 9'):
        env.step(np.array([[0, 9]]))
    env, _ = play_moves('connect_four', [0] * 6)
    with pytest.raises(EnvError, match=r'illegal action 0; legal actions there: \[1, 2, 3, 4, 5, 6\]'):
        env.step(np.array([[0, 0]]))


def test_a_rejected_action_leaves_the_game_unchanged():
    env, steps = play_moves('tictactoe', [4])
    with pytest.raises(EnvError):
        env.step(np.array([[0, 4]]))
    after = env.step(np.array([[0, 0]]))
    assert after.obs[0, 0, 0].sum() == 1 and after.obs[0, 0, 1].sum() == 1


def test_actions_of_the_seat_not_to_move_are_ignored_even_out_of_range():
    env = make_battle_env(dict(type='tictactoe'), 2, 0)
    env.reset()
    step = env.step(np.array([[4, 123], [0, -5]]))
    assert step.obs[:, 1, 1].reshape(2, 9).argmax(axis=1).tolist() == [4, 0]


def test_wrong_action_shape_or_dtype_raises():
    env = make_battle_env(dict(type='connect_four'), 3, 0)
    env.reset()
    with pytest.raises(EnvError, match=r'shape \(3,\); expected shape \(3, 2\)'):
        env.step(np.zeros(3, np.int64))
    with pytest.raises(EnvError, match='dtype float64; expected integers'):
        env.step(np.zeros((3, 2)))


@pytest.mark.parametrize('game, k', [('tictactoe', 3), ('connect_four', 4)])
def test_random_play_masks_results_and_perspective_match_an_independent_check(game, k, random_actions):
    """Every step of random play is checked against brute-force rules read from the observations."""
    B = 64
    env = make_battle_env(dict(type=game), B, 0)
    gravity = game == 'connect_four'
    rng = np.random.default_rng(1)
    step = env.reset()
    endings = 0
    for _ in range(120):
        assert (step.to_move.sum(axis=1) == 1).all()
        assert not step.action_mask[~step.to_move].any()  # the seat not to move has an all-False row
        mover = step.to_move.argmax(axis=1)
        board = step.obs[np.arange(B), mover, :2].sum(axis=1)  # occupied cells [B, rows, cols]
        free = board[:, 0, :] == 0 if gravity else (board == 0).reshape(B, -1)
        np.testing.assert_array_equal(step.action_mask[np.arange(B), mover], free)
        # Seat 1 sees seat 0's planes swapped; the to-move plane follows to_move.
        np.testing.assert_array_equal(step.obs[:, 1, 0], step.obs[:, 0, 1])
        np.testing.assert_array_equal(step.obs[:, 1, 1], step.obs[:, 0, 0])
        np.testing.assert_array_equal(step.obs[:, :, 2, 0, 0], step.to_move)

        step = env.step(random_actions(step, rng))
        assert (step.result[:, 0] == -step.result[:, 1]).all() and (step.reward[:, 0] == -step.reward[:, 1]).all()
        assert not step.result[~step.terminated].any() and not step.truncated.any()
        last_mover_view = step.final_obs[np.arange(B), mover]  # [B, 3, rows, cols]
        won = has_line_brute_force(last_mover_view[:, 0], k)
        full = (last_mover_view[:, 0] + last_mover_view[:, 1]).reshape(B, -1).all(axis=1)
        assert not has_line_brute_force(last_mover_view[:, 1], k).any()  # only the mover can have made a line
        np.testing.assert_array_equal(step.terminated, won | full)
        np.testing.assert_array_equal(step.result[np.arange(B), mover], won.astype(np.int8))
        endings += int(step.terminated.sum())
    assert endings > 200


def test_same_seed_same_games_and_reset_restarts_every_game(random_actions):
    def trajectory(seed):
        env = make_battle_env(dict(type='connect_four'), 8, seed)
        rng = np.random.default_rng(seed)
        step = env.reset()
        obs = []
        for _ in range(30):
            step = env.step(random_actions(step, rng))
            obs.append(step.obs)
        assert not env.reset().obs[:, :, :2].any()
        return np.stack(obs)

    np.testing.assert_array_equal(trajectory(3), trajectory(3))


def test_board_options_configure_the_game():
    _, steps = play_moves('connect_four', [0, 0, 1, 1, 2], rows=4, cols=5, win_length=3)
    assert steps[0].obs.shape == (1, 2, 3, 4, 5) and steps[-1].result.tolist() == [[1, -1]]


def test_has_line_on_python_ints_and_arrays_matches_brute_force():
    rng = np.random.default_rng(0)
    for rows, cols, k in ((3, 3, 3), (6, 7, 4), (4, 5, 3), (5, 5, 5)):
        g = BoardGeometry(rows, cols, k, gravity=False)
        planes = rng.random((300, rows, cols)) < 0.45
        arrays = g.stones_from_plane(planes.astype(np.float32))
        vectorised = g.has_line(arrays)
        expected = has_line_brute_force(planes, k)
        assert 0 < expected.sum() < len(expected)
        np.testing.assert_array_equal(vectorised, expected)
        assert [g.has_line(int(stones)) for stones in arrays] == expected.tolist()
        np.testing.assert_array_equal(g.planes(arrays) > 0.5, planes)


def test_geometry_rejects_boards_that_do_not_fit():
    with pytest.raises(ValueError, match='at most 64'):
        BoardGeometry(8, 8, 4, gravity=True)
    with pytest.raises(ValueError, match='win_length 5 cannot fit'):
        BoardGeometry(3, 3, 5, gravity=False)


# -- bots ----------------------------------------------------------------------------------------

def make_bot(name, game, cfg=None, seed=0):
    env = make_battle_env(dict(type=game), 1, 0)
    return BOT_REGISTRY.get(name)(cfg or {}, env.observation_space, env.action_space, seed=seed), env


@pytest.mark.parametrize('kind', ['heuristic', 'mcts'])
def test_bots_take_an_immediate_win_before_blocking(kind):
    cfg = {'num_simulations': 400} if kind == 'mcts' else {}
    bot, _ = make_bot(f'connect_four_{kind}', 'connect_four', cfg)
    # Seat 0 has three in column 2 and seat 1 three in column 5: seat 0 to move must win in column 2.
    env, steps = play_moves('connect_four', [2, 5, 2, 5, 2, 5])
    step = steps[-1]
    assert bot.act(step.obs[:, 0], action_mask=step.action_mask[:, 0]).action.tolist() == [2]
    # Seat 1 threatens column 5 and seat 0 has no win: seat 0 must block.
    env, steps = play_moves('connect_four', [0, 5, 2, 5, 0, 5])
    step = steps[-1]
    assert bot.act(step.obs[:, 0], action_mask=step.action_mask[:, 0]).action.tolist() == [5]


def _choices(bot, step, seat, tries=60):
    return {int(bot.act(step.obs[:, seat], action_mask=step.action_mask[:, seat]).action[0]) for _ in range(tries)}


def test_heuristic_options_turn_off_blocking_and_positional_play():
    """``block=false`` still takes a win but leaves threats open; ``positional=false`` plays at random
    where neither a win nor a block is on (graded sparring partners)."""
    win_position = play_moves('connect_four', [2, 5, 2, 5, 2, 5])[1][-1]
    block_position = play_moves('connect_four', [0, 5, 2, 5, 0, 5])[1][-1]
    opening = make_battle_env(dict(type='connect_four'), 1, 0).reset()
    punisher, _ = make_bot('connect_four_heuristic', 'connect_four', dict(positional=False, block=False), seed=1)
    blocker, _ = make_bot('connect_four_heuristic', 'connect_four', dict(positional=False), seed=2)
    positional, _ = make_bot('connect_four_heuristic', 'connect_four', seed=3)
    for bot in (punisher, blocker, positional):
        assert _choices(bot, win_position, 0) == {2}
    assert _choices(blocker, block_position, 0) == {5}
    assert _choices(punisher, block_position, 0) == set(range(7))  # uniformly at random: threats stay open
    assert _choices(blocker, opening, 0) == set(range(7))
    assert _choices(positional, opening, 0) == {3}  # the centre column has most lines through it
    with pytest.raises(ConfigError, match='block'):
        make_bot('connect_four_heuristic', 'connect_four', dict(block='no'))


def test_tictactoe_heuristic_prefers_the_centre_then_a_corner():
    bot, env = make_bot('tictactoe_heuristic', 'tictactoe')
    step = env.reset()
    assert bot.act(step.obs[:, 0], action_mask=step.action_mask[:, 0]).action.tolist() == [4]
    step = env.step(np.array([[4, 0]]))
    replies = {int(bot.act(step.obs[:, 1], action_mask=step.action_mask[:, 1]).action[0]) for _ in range(40)}
    assert replies == {0, 2, 6, 8}  # random tie-breaks among the corners


@pytest.mark.parametrize('game, wins_needed', [('connect_four', 0.9), ('tictactoe', 0.8)])
def test_heuristic_beats_random_from_either_seat(game, wins_needed, match):
    heuristic = f'{game}_heuristic'
    as_first = match(game, (heuristic, 'random'), 200, seed=1)
    as_second = -match(game, ('random', heuristic), 200, seed=2)
    for results in (as_first, as_second):
        assert (results == -1).mean() <= 0.05
    assert (as_first == 1).mean() >= wins_needed
    assert (np.concatenate([as_first, as_second]) == 1).mean() >= 0.8


@pytest.mark.parametrize('game, simulations', [('connect_four', 50), ('tictactoe', 100)])
@pytest.mark.slow
def test_mcts_beats_random(game, simulations, match):
    cfg = ({'num_simulations': simulations}, {})
    as_first = match(game, (f'{game}_mcts', 'random'), 12, seed=3, bot_cfgs=cfg)
    as_second = -match(game, ('random', f'{game}_mcts'), 12, seed=4, bot_cfgs=cfg[::-1])
    results = np.concatenate([as_first, as_second])
    assert (results == 1).mean() >= 0.75 and (results == -1).mean() <= 0.1


def test_mcts_is_reproducible_from_its_seed():
    env = make_battle_env(dict(type='connect_four'), 4, 0)
    step = env.reset()
    step = env.step(np.array([[3, 0]] * 4))
    picks = []
    for _ in range(2):
        bot, _ = make_bot('connect_four_mcts', 'connect_four', {'num_simulations': 30}, seed=7)
        picks.append([bot.act(step.obs[:, 1], action_mask=step.action_mask[:, 1]).action.tolist() for _ in range(3)])
    assert picks[0] == picks[1]
