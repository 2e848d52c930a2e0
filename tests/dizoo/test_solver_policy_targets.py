"""Solver policy targets near the end (``battle.collect_search.exact_policy_empty_cells``): labels equal the
solver's, no illegal move gets mass, the learner trains towards them where labelled, and nothing changes without."""
import numpy as np
import pytest

import sparring.dizoo  # noqa: F401  (registers the games and bots)
from sparring.config.schema import ConfigError
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.search_acting import SearchActing
from sparring.dizoo.board_games.solver.testset import random_position
from sparring.policy.chunk_spec import ChunkSpaces
from tests.dizoo.connect_four_positions import C4, collect_labelled
from tests.dizoo.connect_four_positions import after as _after
from tests.dizoo.connect_four_positions import seat_view as _seat_view
from tests.dizoo.test_perfect_solver import brute_force_move_scores
from tests.dizoo.test_solver_value_targets import exact_values

pytest.importorskip('numba', reason='the solver needs the "perfect" extra (numba)')


def exact_policies(acting, obs, mask):
    labels = acting.exact_labels(obs, mask)
    return labels['policy_target'], labels['policy_labelled']


def _random_positions(seed: int, count: int, lo: int, hi: int):
    rng = np.random.default_rng(seed)
    positions = []
    while len(positions) < count:
        position = random_position(rng, C4, int(rng.integers(lo, hi)))
        if position is not None:
            positions.append(position)
    return positions


def test_hand_worked_policy_labels():
    acting = SearchActing(dict(exact_policy_empty_cells=42), C4)
    positions = [
        _after('141516'),  # X three up column 1; O on the bottom of 4, 5, 6, threatening 3 and 7; X to move
        _after('374757'),  # X on the bottom of 3, 4, 5 (2 and 6 win at once); O three up column 7; X to move
        _after('334451'),  # X on the bottom of 3, 4, 5, 2 and 6 open; O with no threat; X to move
        _after('44556'),  # X on the bottom of 4, 5, 6, 3 and 7 open; O to move
    ]
    obs, mask = _seat_view(positions)
    target, labelled = exact_policies(acting, obs, mask)
    # Column 1 wins at once; any other move leaves one of O's two threats: the only outcome-best move.
    np.testing.assert_array_equal(target[0], [1, 0, 0, 0, 0, 0, 0])
    # Columns 2 and 6 win at once, and so does column 7, later: it blocks O, whose stones then threaten nothing,
    # and X's two threats stay. Columns 1, 3, 4, 5 let O complete column 7. The slower win gets as much mass.
    np.testing.assert_allclose(target[1], [0, 1 / 3, 0, 0, 0, 1 / 3, 1 / 3], rtol=1e-6)
    # Every move wins (the two threats survive any other move) or every move loses (O can block one end only):
    # no move is an error, so no label; the search's visits stay the target there.
    np.testing.assert_array_equal(labelled, [True, True, False, False])
    assert (target[2:] == 0).all()


def test_by_score_the_fastest_win_is_taught_and_every_difference_labelled():
    acting = SearchActing(dict(exact_policy_empty_cells=42, exact_policy_target='score'), C4)
    obs, mask = _seat_view([_after('374757'), _after('334451'), _after('44556')])
    target, labelled = exact_policies(acting, obs, mask)
    # The wins in one (columns 2 and 6), not the slower win of column 7; where every move wins, the fastest
    # wins are still taught; where every move loses with X's 4th stone, the scores tie: no label.
    np.testing.assert_allclose(target[:2], [[0, 0.5, 0, 0, 0, 0.5, 0]] * 2, rtol=1e-6)
    np.testing.assert_array_equal(labelled, [True, True, False])
    with pytest.raises(ConfigError, match='exact_policy_target'):
        SearchActing(dict(exact_policy_empty_cells=4, exact_policy_target='fastest'), C4)


@pytest.mark.parametrize('by', ['outcome', 'score'])
def test_policy_labels_equal_brute_force_on_random_end_positions(by):
    positions = _random_positions(seed=5, count=80, lo=33, hi=42)
    obs, mask = _seat_view(positions)
    target, labelled = exact_policies(SearchActing(dict(exact_policy_empty_cells=9, exact_policy_target=by), C4),
                                      obs, mask)
    for i, (own, opp) in enumerate(positions):
        scores = np.array(brute_force_move_scores(own, opp, 7, 6))
        outcomes = np.sign(scores) if by == 'outcome' else scores
        outcomes = np.where(mask[i], outcomes, -1000)  # a full column: below any outcome or score
        best = outcomes == outcomes.max()
        assert labelled[i] == (outcomes[mask[i]] < outcomes.max()).any(), i
        expected = best / best.sum() if labelled[i] else np.zeros(7)
        np.testing.assert_allclose(target[i], expected, rtol=1e-6, err_msg=str(i))
    assert labelled.any() and not labelled.all()  # both kinds checked
    assert (target[labelled] > 0).sum(axis=1).max() > 1  # ties between outcome-best moves share the mass


def test_an_illegal_move_never_gets_mass():
    positions = _random_positions(seed=7, count=60, lo=30, hi=42)
    obs, mask = _seat_view(positions)
    target, labelled = exact_policies(SearchActing(dict(exact_policy_empty_cells=12), C4), obs, mask)
    assert (~mask[labelled]).any()  # some labelled positions have full columns ...
    assert (target[~mask] == 0).all()  # ... which get no mass
    np.testing.assert_allclose(target[labelled].sum(axis=1), 1.0, rtol=1e-6)


def test_value_and_policy_labels_from_one_solve_agree_with_the_value_alone():
    positions = _random_positions(seed=11, count=40, lo=26, hi=36)
    obs, mask = _seat_view(positions)
    both = SearchActing(dict(exact_value_empty_cells=14, exact_policy_empty_cells=12), C4).exact_labels(obs, mask)
    values, value_labelled = exact_values(SearchActing(dict(exact_value_empty_cells=14), C4), obs, mask)
    np.testing.assert_array_equal(both['value_target'], values)
    np.testing.assert_array_equal(both['value_labelled'], value_labelled)
    empty = 42 - obs[:, :2].sum(axis=(1, 2, 3))
    assert not both['policy_labelled'][empty > 12].any() and both['policy_labelled'].any()
    # The best-outcome moves' outcome is the position's.
    alone = SearchActing(dict(exact_policy_empty_cells=12), C4).exact_labels(obs, mask)
    assert set(alone) == {'policy_target', 'policy_labelled'}
    np.testing.assert_array_equal(alone['policy_target'], both['policy_target'])


def test_the_option_is_for_connect_four_only():
    with pytest.raises(ConfigError, match='exact_policy_empty_cells.*connect four'):
        SearchActing(dict(exact_policy_empty_cells=4), BoardGeometry(3, 3, 3, gravity=False))
    with pytest.raises(ConfigError, match='exact_policy_empty_cells'):
        SearchActing(dict(exact_policy_empty_cells=-1), C4)


def test_the_collector_records_policy_labels_and_the_learner_trains_towards_them():
    policy, chunk = collect_labelled(exact_policy_empty_cells=16)
    chunk.validate(policy.chunk_spec(ChunkSpaces.of(policy, battle=True)))
    d = chunk.data
    moved, labelled, target = d['train_mask'], d['policy_labelled'], d['policy_target']
    assert labelled.any() and not (labelled & ~moved).any() and (target[~labelled] == 0).all()
    assert (target[~d['action_mask']] == 0).all()
    t, c = np.nonzero(labelled)
    again, _ = exact_policies(SearchActing(dict(exact_policy_empty_cells=16), C4), d['obs'][t, c],
                              d['action_mask'][t, c])
    np.testing.assert_array_equal(target[t, c], again)
    # The policy's target is the label where labelled and the search's visits elsewhere.
    keep = d['value_mask'].reshape(-1)
    trained = policy._train_batch(d).search_policy.numpy()
    expected = np.where(labelled[..., None], target, d['search_policy']).reshape(-1, 7)[keep]
    np.testing.assert_array_equal(trained, expected)
    assert not np.array_equal(trained, d['search_policy'].reshape(-1, 7)[keep])  # the search and the solver differ
    with pytest.raises(ValueError, match='policy_labelled'):
        policy._train_batch({k: v for k, v in d.items() if k != 'policy_labelled'})


def test_without_the_option_nothing_changes():
    _, plain = collect_labelled()
    _, values_only = collect_labelled(exact_value_empty_cells=16)
    assert not {'policy_target', 'policy_labelled'} & (set(plain.data) | set(values_only.data))
    # The labels never touch play: the same seed's games are the same with them.
    _, labelled = collect_labelled(exact_value_empty_cells=16, exact_policy_empty_cells=16)
    for key in values_only.data:
        np.testing.assert_array_equal(values_only.data[key], labelled.data[key], err_msg=key)
