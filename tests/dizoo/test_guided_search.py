"""Search at play time: PUCT guided by a player's policy and value, checked on hand-computed cases."""
import numpy as np
import pytest

from sparring.config.schema import ConfigError
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.guided_search import LockstepPUCT, guided_search_player

CONNECT_FOUR = BoardGeometry(6, 7, 4, gravity=True)


def board(*moves):
    """(player to move's stones, the other's) after ``moves`` (columns, alternating from the first player)."""
    stones = [np.uint64(0), np.uint64(0)]
    for k, column in enumerate(moves):
        occupied = stones[0] | stones[1]
        stones[k % 2] = stones[k % 2] | CONNECT_FOUR.move_bits(np.array([occupied]), np.array([column]))[0]
    mover = len(moves) % 2
    return np.array([stones[mover]]), np.array([stones[1 - mover]])


def search(own, opp, evaluate, simulations, c_puct=1.0):
    legal = CONNECT_FOUR.legal_mask(own | opp)
    puct = LockstepPUCT(CONNECT_FOUR, evaluate, simulations, c_puct, np.random.default_rng(0))
    return puct.root_visits(own, opp, legal)


def uniform(own, opp, legal):
    return legal / legal.sum(axis=1, keepdims=True), np.zeros(len(own))


def test_visits_follow_the_puct_rule_by_hand():
    # Priors 0.7 / 0.3 on columns 0 / 1, every value 0, c_puct 1; the root's own evaluation is its first visit.
    # 1: U0 .7 > U1 .3 -> 0.  2: U0 .7*sqrt2/2 = .49 > U1 .3*sqrt2 = .42 -> 0.  3: U0 .7*sqrt3/3 = .40 < U1 .52
    # -> 1.  4: U0 .7*2/3 = .47 > U1 .3*2/2 = .30 -> 0.
    def evaluate(own, opp, legal):
        priors = np.zeros(legal.shape)
        priors[:, 0], priors[:, 1] = 0.7, 0.3
        return priors, np.zeros(len(own))
    own, opp = board()
    assert search(own, opp, evaluate, 4).tolist() == [[3, 1, 0, 0, 0, 0, 0]]
    assert search(own, opp, evaluate, 1).sum() == 1 and search(own, opp, evaluate, 50).sum() == 50


def test_it_takes_a_win_and_blocks_a_loss_that_the_network_does_not_see():
    own, opp = board(0, 0, 1, 1, 2)  # the second player to move; the first threatens column 3
    assert search(own, opp, uniform, 200).argmax() == 3
    own, opp = board(0, 6, 1, 6, 2, 5)  # the first player to move wins in column 3
    assert search(own, opp, uniform, 50).argmax() == 3


def test_values_are_read_from_the_view_of_the_player_to_move():
    # A position is lost for the player to move once the opponent holds the bottom of column 5: the
    # first player, searching the empty board, should make that move.
    bottom_of_5 = CONNECT_FOUR.move_bits(np.array([np.uint64(0)]), np.array([5]))[0]

    def evaluate(own, opp, legal):
        return legal / legal.sum(axis=1, keepdims=True), np.where((opp & bottom_of_5) != 0, -1.0, 0.0)
    own, opp = board()
    visits = search(own, opp, evaluate, 100)
    assert visits.argmax() == 5 and visits[0, 5] > 0.5 * visits.sum()


def test_a_batch_searches_each_position_as_alone():
    positions = [board(0, 0, 1, 1, 2), board(0, 6, 1, 6, 2, 5), board(3, 3)]
    own = np.concatenate([p[0] for p in positions])
    opp = np.concatenate([p[1] for p in positions])
    together = search(own, opp, uniform, 60)
    alone = np.concatenate([search(p[0], p[1], uniform, 60) for p in positions])
    np.testing.assert_array_equal(together, alone)


def test_search_is_refused_for_games_it_cannot_step():
    from easydict import EasyDict
    with pytest.raises(ConfigError, match='k-in-a-row'):
        guided_search_player(EasyDict(type='rock_paper_scissors'), policy=None, num_simulations=10)


def test_root_noise_makes_the_search_try_moves_the_network_dismisses():
    def confident(own, opp, legal):  # every prior on column 0
        priors = np.zeros(legal.shape)
        priors[:, 0] = 1.0
        return priors, np.zeros(len(own))
    own, opp = board()
    legal = CONNECT_FOUR.legal_mask(own | opp)
    plain = LockstepPUCT(CONNECT_FOUR, confident, 30, 1.0, np.random.default_rng(0)).root_visits(own, opp, legal)
    assert plain[0, 0] == 30  # unvisited children count Q = 0: only the prior's column is ever tried
    noisy = LockstepPUCT(CONNECT_FOUR, confident, 30, 1.0, np.random.default_rng(0), root_noise=0.5)
    visits = noisy.root_visits(own, opp, legal)
    assert visits.sum() == 30 and (visits[0, 1:] > 0).sum() >= 3
    # Only legal actions get noise: a full column is never tried.
    full = board(0, 0, 0, 0, 0, 0)
    legal = CONNECT_FOUR.legal_mask(full[0] | full[1])
    assert noisy.root_visits(*full, legal)[0, 0] == 0


def test_the_root_value_is_the_mean_of_the_simulations_for_the_player_to_move_by_hand():
    # Priors 0.7 / 0.3 on columns 0 / 1, every position worth c to its player to move; c_puct 1.
    def constant(c):
        def evaluate(own, opp, legal):
            priors = np.zeros(legal.shape)
            priors[:, 0], priors[:, 1] = 0.7, 0.3
            return priors, np.full(len(own), c)
        return evaluate

    own, opp = board()
    legal = CONNECT_FOUR.legal_mask(own | opp)

    def root_value(c, simulations):
        puct = LockstepPUCT(CONNECT_FOUR, constant(c), simulations, 1.0, np.random.default_rng(0))
        return puct.root_visits_and_values(own, opp, legal)[1][0]
    # One simulation reaches column 0's position, worth c to the opponent: -c to the player at the root.
    assert root_value(0.5, 1) == pytest.approx(-0.5) and root_value(-0.25, 1) == pytest.approx(0.25)
    # c = 0.5: column 0 scores -0.5 + 0.7 * sqrt(2) / 2 < 0 + 0.3 * sqrt(2): the second simulation takes column 1,
    # also -0.5. c = -0.25: column 0 again (0.25 + 0.49 > 0.42), one level deeper, where the player at the root
    # moves into a position worth -0.25 to it: (0.25 - 0.25) / 2 = 0.
    assert root_value(0.5, 2) == pytest.approx(-0.5) and root_value(-0.25, 2) == pytest.approx(0.0)
    # A lost position: the first player holds 1, 2, 3 of the bottom row, open at both ends, and the second
    # player (to move) can block one end only. The search sees it however the network judges.
    own, opp = board(1, 6, 2, 6, 3)
    visits, values = LockstepPUCT(CONNECT_FOUR, uniform, 400, 1.0, np.random.default_rng(0)).root_visits_and_values(
        own, opp, CONNECT_FOUR.legal_mask(own | opp))
    assert values[0] < -0.8 and visits.sum() == 400
    own, opp = board(0, 6, 1, 6, 2, 5)  # and a won one: the player to move completes the bottom row
    _, values = LockstepPUCT(CONNECT_FOUR, uniform, 400, 1.0, np.random.default_rng(0)).root_visits_and_values(
        own, opp, CONNECT_FOUR.legal_mask(own | opp))
    assert values[0] > 0.8


def test_a_seeded_search_gives_the_same_visits_and_values_as_ever():
    """The figures of a seeded search (root noise on) over four positions, pinned: a change to how the search
    keeps its trees must not change what it finds."""
    centre = np.array([1, 2, 3, 4, 3, 2, 1], float)
    column_3 = np.uint64(0x7f << 21)

    def evaluate(own, opp, legal):  # priors towards the centre; the value from the stones in the centre column
        count = np.vectorize(lambda x: bin(int(x)).count('1'))
        return legal * centre, np.tanh(0.3 * (count(own & column_3) - count(opp & column_3)) - 0.1)
    positions = [board(), board(3, 3, 2), board(0, 0, 1, 1, 2), board(3, 4, 3, 4, 2, 2, 4)]
    own, opp = np.concatenate([p[0] for p in positions]), np.concatenate([p[1] for p in positions])
    puct = LockstepPUCT(CONNECT_FOUR, evaluate, 40, 1.5, np.random.default_rng(3), root_noise=0.25)
    visits, values = puct.root_visits_and_values(own, opp, CONNECT_FOUR.legal_mask(own | opp))
    assert visits.tolist() == [[2, 2, 5, 24, 3, 2, 2], [2, 2, 4, 22, 6, 2, 2], [2, 2, 2, 28, 2, 2, 2],
                               [2, 3, 5, 21, 4, 3, 2]]
    np.testing.assert_allclose(values, [0.077286, 0.055427, -0.02485, -0.466637], atol=1e-6)
