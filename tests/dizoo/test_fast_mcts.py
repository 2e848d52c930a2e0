"""The lockstep MCTS bots: exact random playouts, tree bookkeeping, and play (wins, blocks, legality, seeds)."""
import functools

import numpy as np
import pytest

import sparring.dizoo  # noqa: F401  (registers the bots)
from sparring.config.registry import BOT_REGISTRY
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.mcts import LockstepUCT, _Forest
from sparring.dizoo.board_games.playout import RandomPlayouts
from sparring.worker.env.battle import make_battle_env


def position(game: str, moves, **board):
    """Observation and mask ``[1, ...]`` of the seat to move after ``moves`` (seat 0 first), and that seat."""
    env = make_battle_env(dict(type=game, **board), 1, 0)
    step = env.reset()
    for i, move in enumerate(moves):
        actions = np.zeros((1, 2), np.int64)
        actions[0, i % 2] = move
        step = env.step(actions)
        assert not step.terminated[0], f'{moves} ends the game at move {i}'
    seat = len(moves) % 2
    return step.obs[:, seat], step.action_mask[:, seat], env


def make_bot(game: str, env, seed=0, lockstep_from_batch=1, **cfg):
    """The registered MCTS bot, by default held to the lockstep search even for a single position."""
    held = type('Held', (BOT_REGISTRY.get(f'{game}_mcts'),), {'lockstep_from_batch': lockstep_from_batch})
    return held(cfg, env.observation_space, env.action_space, seed=seed)


def exact_outcome_probabilities(geometry: BoardGeometry, mover: int, other: int) -> np.ndarray:
    """P(mover wins), P(draw), P(mover loses) under uniformly random play, by exhaustive recursion."""
    legal_moves = geometry.legal_actions

    @functools.lru_cache(maxsize=None)
    def value(mover: int, other: int):
        occupied = mover | other
        actions = legal_moves(occupied)
        if not actions:
            return (0.0, 1.0, 0.0)
        total = np.zeros(3)
        for action in actions:
            bit = geometry.move_table[action]
            placed = mover | ((occupied + bit) & ~occupied if geometry.gravity else bit)
            if geometry.has_line(placed):
                total += (1.0, 0.0, 0.0)
            else:
                win, draw, loss = value(other, placed)
                total += (loss, draw, win)
        return tuple(total / len(actions))

    return np.array(value(mover, other))


@pytest.mark.parametrize('rows, cols, k, gravity', [(3, 3, 3, False), (3, 4, 3, True), (4, 4, 3, True)])
@pytest.mark.slow
def test_playouts_have_the_outcome_distribution_of_random_play(rows, cols, k, gravity):
    """Drawn up front, the playouts must still be move-by-move uniform play: a fill order that
    favoured roomy columns (a random order of all empty cells) would fail here on gravity boards."""
    g = BoardGeometry(rows, cols, k, gravity)
    playouts = RandomPlayouts(g, np.random.default_rng(0))
    start = g.move_table[1]  # one stone of the player who just moved
    n = 40000
    for mover, other in ((0, 0), (0, start)):
        result, over = playouts(np.full(n, mover, np.uint64), np.full(n, other, np.uint64))
        assert not over.any()
        frequencies = np.array([(result == 1).mean(), (result == 0).mean(), (result == -1).mean()])
        expected = exact_outcome_probabilities(g, mover, other)
        standard_error = np.sqrt(expected * (1 - expected) / n) + 1e-9
        assert np.all(np.abs(frequencies - expected) < 4 * standard_error), (frequencies, expected)


def test_playouts_report_positions_that_are_already_over():
    g = BoardGeometry(3, 3, 3, gravity=False)
    playouts = RandomPlayouts(g, np.random.default_rng(0))
    line = sum(g.move_table[a] for a in (0, 1, 2))
    full_x = sum(g.move_table[a] for a in (0, 2, 3, 7, 8))  # X O X / X O O / O X X: full, no line
    full_o = sum(g.move_table[a] for a in (1, 4, 5, 6))
    result, over = playouts(np.array([g.move_table[4], full_o, 0], np.uint64),
                            np.array([line, full_x, g.move_table[4]], np.uint64))
    assert over.tolist() == [True, True, False]
    assert result[:2].tolist() == [-1.0, 0.0]


def test_every_simulation_is_backed_up_once_along_its_path():
    g = BoardGeometry(6, 7, 4, gravity=True)
    uct = LockstepUCT(g, 300, 1.4, np.random.default_rng(1))
    own = np.array([0, g.move_table[3]], np.uint64)  # an empty board, and one with a stone of each
    opp = np.array([0, g.move_table[3] << 1], np.uint64)
    forest = _Forest(uct, own, opp, g.legal_mask(own | opp))
    forest.run()
    trees = slice(0, forest.no_child)  # the shared no-child and end-of-descent nodes come after the trees
    visits, children = forest.visits[trees], forest.child[trees]
    used = visits > 0
    assert visits[forest.roots].tolist() == [300, 300]
    # A node's visits: one for the playout that made it (none for a root), plus its children's.
    from_children = np.where(children != forest.no_child, forest.visits[children], 0.0).sum(axis=1)
    expanded = used & ~forest.terminal[trees]
    own_playout = np.ones(len(used))
    own_playout[forest.roots] = 0
    np.testing.assert_array_equal(visits[expanded], (from_children + own_playout)[expanded])
    assert expanded.sum() > 300  # nodes deeper than the roots' children were checked too
    assert (np.abs(forest.value[trees]) <= visits).all()


@pytest.mark.parametrize('game, moves, win', [
    ('connect_four', [2, 5, 2, 5, 2, 6], 2),       # seat 0: three in column 2
    ('connect_four', [0, 2, 6, 2, 6, 2, 0], 2),    # seat 1: three in column 2
    ('tictactoe', [0, 4, 1, 8], 2),                # seat 0: top row
    ('tictactoe', [0, 4, 8, 3, 1], 5),             # seat 1: middle row
])
def test_takes_an_immediate_win_from_either_seat(game, moves, win):
    obs, mask, env = position(game, moves)
    bot = make_bot(game, env, num_simulations=200)
    assert bot.act(np.repeat(obs, 8, 0), action_mask=np.repeat(mask, 8, 0)).action.tolist() == [win] * 8


@pytest.mark.parametrize('game, moves, block', [
    ('connect_four', [0, 5, 2, 5, 0, 5], 5),        # seat 0 blocks column 5
    ('connect_four', [3, 0, 3, 6, 3], 3),           # seat 1 blocks column 3
    ('tictactoe', [0, 4, 8, 2], 6),                 # seat 0 blocks the anti-diagonal
    ('tictactoe', [4, 0, 1], 7),                    # seat 1 blocks the middle column
])
def test_blocks_an_immediate_loss_from_either_seat(game, moves, block):
    obs, mask, env = position(game, moves)
    bot = make_bot(game, env, num_simulations=300)
    assert bot.act(np.repeat(obs, 8, 0), action_mask=np.repeat(mask, 8, 0)).action.tolist() == [block] * 8


def test_plays_boards_of_any_configured_size():
    board = dict(rows=4, cols=5, win_length=3)
    obs, mask, env = position('connect_four', [1, 1, 2, 2], **board)  # seat 0 wins in column 0 or 3
    bot = make_bot('connect_four', env, num_simulations=200, win_length=3)
    assert set(bot.act(np.repeat(obs, 6, 0), action_mask=np.repeat(mask, 6, 0)).action.tolist()) <= {0, 3}
    board = dict(rows=5, cols=5, win_length=4)
    obs, mask, env = position('tictactoe', [0, 20, 1, 21, 2, 22], **board)  # both threaten; seat 0 wins at 3
    bot = make_bot('tictactoe', env, num_simulations=400, win_length=4)
    assert bot.act(obs, action_mask=mask).action.tolist() == [3]
    board = dict(rows=7, cols=8, win_length=4)  # all 64 bits of a bitboard in use
    obs, mask, env = position('connect_four', [0, 0, 1, 1, 2, 2], **board)
    bot = make_bot('connect_four', env, num_simulations=200, win_length=4)
    assert bot.act(obs, action_mask=mask).action.tolist() == [3]


def test_moves_are_legal_and_reproducible_from_the_seed_and_state_dict():
    env = make_battle_env(dict(type='connect_four'), 24, 5)
    rng = np.random.default_rng(5)
    step = env.reset()
    for _ in range(14):  # a batch of varied mid-game positions, some columns full
        scores = rng.random(step.action_mask.shape) * step.action_mask
        step = env.step(np.where(step.to_move, scores.argmax(axis=2), 0))
    seat = int(step.to_move[0].argmax())
    obs, mask = step.obs[:, seat], step.action_mask[:, seat]
    first = make_bot('connect_four', env, seed=3, num_simulations=40)
    state = first.state_dict()
    actions = first.act(obs, action_mask=mask).action
    legal = mask.any(axis=1)
    assert mask[np.arange(len(obs))[legal], actions[legal]].all()
    again = make_bot('connect_four', env, seed=3, num_simulations=40).act(obs, action_mask=mask).action
    np.testing.assert_array_equal(actions, again)
    first.load_state_dict(state)
    np.testing.assert_array_equal(first.act(obs, action_mask=mask).action, actions)
    other_seeds = [make_bot('connect_four', env, seed=s, num_simulations=40).act(obs, action_mask=mask).action
                   for s in (4, 5)]
    assert any((a != actions).any() for a in other_seeds)


def test_a_single_legal_move_is_played_without_search():
    # Tic-tac-toe with one empty cell (8), and connect four with every column but 6 full.
    obs, mask, env = position('tictactoe', [0, 1, 2, 4, 3, 5, 7, 6])
    assert mask[0].tolist() == [False] * 8 + [True]
    assert make_bot('tictactoe', env, num_simulations=50).act(obs, action_mask=mask).action.tolist() == [8]
    fill = [c for c in (0, 1, 2, 3, 4, 5) for _ in range(3)] * 2  # 1-2-1-2 in each column: no line
    obs, mask, env = position('connect_four', fill)
    assert mask[0].tolist() == [False] * 6 + [True]
    bot = make_bot('connect_four', env, num_simulations=50)
    assert bot.act(obs, action_mask=mask).action.tolist() == [6]
    # Mixed with searched rows and with a seat that is not to move (all-false mask: action 0).
    obs2, mask2, _ = position('connect_four', [3])
    out = bot.act(np.concatenate([obs, obs2, obs2]), action_mask=np.concatenate([mask, mask2, mask2 & False]))
    assert out.action[0] == 6 and mask2[0, out.action[1]] and out.action[2] == 0


def test_the_sequential_search_still_plays_and_takes_the_small_batches():
    """``SequentialUCT`` searches batches too small for the lockstep search, and is the parity baseline."""
    obs, mask, env = position('connect_four', [2, 5, 2, 5, 2, 6])
    bot = make_bot('connect_four', env, num_simulations=200, lockstep_from_batch=float('inf'))
    assert bot.act(obs, action_mask=mask).action.tolist() == [2]
    registered = BOT_REGISTRY.get('connect_four_mcts')({'num_simulations': 20}, env.observation_space,
                                                        env.action_space)
    used = []
    for name in ('lockstep_search', 'sequential_search'):
        search = getattr(registered, name)
        search.search = lambda *args, name=name, inner=search.search: used.append(name) or inner(*args)
    small, large = registered.lockstep_from_batch - 1, registered.lockstep_from_batch
    for rows in (small, large):
        registered.act(np.repeat(obs, rows, 0), action_mask=np.repeat(mask, rows, 0))
    assert used == ['sequential_search', 'lockstep_search']
