"""Solver value targets near the end (``battle.collect_search.exact_value_empty_cells``), and expert iteration
with random openings: labels equal the solver's, the learner fits the value to them, training envs only."""
import copy

import numpy as np
import pytest

import sparring.dizoo  # noqa: F401  (registers the games and bots)
from sparring.config import compile_config
from sparring.config.schema import ConfigError
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.config.connect_four_search_openings import config as openings_config
from sparring.dizoo.board_games.search_acting import SearchActing
from sparring.dizoo.board_games.solver import ILLEGAL
from sparring.dizoo.board_games.solver.testset import random_position
from sparring.policy.chunk_spec import ChunkSpaces
from sparring.worker.env.battle import make_battle_env
from sparring.worker.evaluation import GameEvaluation
from sparring.worker.run_kind import LeagueKind
from tests.configs import fast_parallel, tiny_league_config
from tests.dizoo.connect_four_positions import C4, collect_labelled, small_ppo
from tests.dizoo.connect_four_positions import after as _after
from tests.dizoo.connect_four_positions import seat_view as _seat_view
from tests.dizoo.test_perfect_solver import brute_force_move_scores

pytest.importorskip('numba', reason='the solver needs the "perfect" extra (numba)')


def exact_values(acting, obs, mask):
    """The value labels of :meth:`SearchActing.exact_labels`: (targets, labelled)."""
    labels = acting.exact_labels(obs, mask)
    return labels['value_target'], labels['value_labelled']


def test_hand_worked_outcomes_and_the_empty_cell_limit():
    acting = SearchActing(dict(exact_value_empty_cells=42), C4)
    win_now = _after('121212')  # X has three up column 1 and is to move: it wins
    lost = _after('44556')  # X on the bottom of 4, 5, 6 with both ends open, O to move: it cannot block both
    obs, mask = _seat_view([win_now, lost])
    values, labelled = exact_values(acting, obs, mask)
    np.testing.assert_array_equal(values, [1.0, -1.0])
    assert labelled.all()
    # A seat not to move (no legal action) is never labelled; neither is a position with more empty cells.
    values, labelled = exact_values(acting, obs, np.zeros_like(mask))
    assert not labelled.any() and (values == 0).all()
    near = SearchActing(dict(exact_value_empty_cells=36), C4)  # '44556' leaves 37 empty, '121212' 36
    values, labelled = exact_values(near, obs, mask)
    np.testing.assert_array_equal(labelled, [True, False])
    np.testing.assert_array_equal(values, [1.0, 0.0])


def test_labels_equal_brute_force_on_random_end_positions():
    rng = np.random.default_rng(3)
    positions = []
    while len(positions) < 60:
        position = random_position(rng, C4, int(rng.integers(34, 42)))
        if position is not None:
            positions.append(position)
    obs, mask = _seat_view(positions)
    values, labelled = exact_values(SearchActing(dict(exact_value_empty_cells=8), C4), obs, mask)
    expected = [np.sign(max(s for s in brute_force_move_scores(own, opp, 7, 6) if s != ILLEGAL))
                for own, opp in positions]
    assert labelled.all()
    np.testing.assert_array_equal(values, expected)
    assert set(expected) == {-1, 0, 1}  # wins, draws and losses all checked


def test_the_option_is_for_connect_four_only():
    with pytest.raises(ConfigError, match='exact_value_empty_cells.*connect four'):
        SearchActing(dict(exact_value_empty_cells=4), BoardGeometry(3, 3, 3, gravity=False))
    with pytest.raises(ConfigError, match='exact_value_empty_cells'):
        SearchActing(dict(exact_value_empty_cells=-1), C4)


def test_the_collector_records_the_labels_where_the_player_moved_and_the_learner_fits_them():
    policy, chunk = collect_labelled(exact_value_empty_cells=16)
    chunk.validate(policy.chunk_spec(ChunkSpaces.of(policy, battle=True)))
    d = chunk.data
    moved, labelled = d['train_mask'], d['value_labelled']
    assert labelled.any() and not (labelled & ~moved).any() and (d['value_target'][~labelled] == 0).all()
    # Each label is the solver's outcome of the position the player moved from.
    t, c = np.nonzero(labelled)
    again, _ = exact_values(SearchActing(dict(exact_value_empty_cells=16), C4), d['obs'][t, c], d['action_mask'][t, c])
    np.testing.assert_array_equal(d['value_target'][t, c], again)
    # The value target is the label there and the game's result (gamma = lambda = 1) elsewhere.
    keep = d['value_mask'].reshape(-1)
    result = policy._train_batch({k: v for k, v in d.items() if k not in ('value_target', 'value_labelled')})
    fitted = policy._train_batch(d).ret.numpy()
    expected = np.where(labelled.reshape(-1)[keep], d['value_target'].reshape(-1)[keep], result.ret.numpy())
    np.testing.assert_allclose(fitted, expected, rtol=1e-6)
    assert not np.allclose(fitted, result.ret.numpy())  # some games' results differ from perfect play
    with pytest.raises(ValueError, match='value_labelled'):
        policy._train_batch({k: v for k, v in d.items() if k != 'value_labelled'})


def test_without_the_option_chunks_carry_no_labels():
    _, chunk = collect_labelled(exact_value_empty_cells=0)
    assert 'value_target' not in chunk.data and 'value_labelled' not in chunk.data


def _compiled(tmp_path):
    config = copy.deepcopy(openings_config)
    config.update(exp_name=str(tmp_path / 'run'))
    config['env'].update(collector_env_num=8, evaluator_env_num=4)
    config['battle']['collect_search'].update(num_simulations=2)
    return compile_config(config)


def test_expert_iteration_with_random_openings_is_seeded_and_evaluates_from_the_empty_board(tmp_path):
    cfg = _compiled(tmp_path)
    kind = LeagueKind(cfg)

    def first_chunk(seed):
        env = make_battle_env(cfg.env, 1, 0)
        policy = small_ppo(env, objective='search', gamma=1.0, gae_lambda=1.0)
        return kind.collector(policy, 4, seed, 'me', 0, lambda slot: (['me', 'me'], [policy])).collect().data

    a, b, other = first_chunk(0), first_chunk(0), first_chunk(1)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert (a['obs'] != other['obs']).any()
    stones = a['obs'][0, :, :2].sum(axis=(1, 2, 3))
    assert stones.max() > 1  # the training games start after random plies, as the config asks ...
    evaluation = GameEvaluation(cfg, seed=0)  # ... and the run's evaluation games from the empty board
    eval_env = evaluation.battle.make_env()
    eval_env.reset(seed=0)
    assert cfg.env.random_opening_plies == [0, 30] and (eval_env.stones == 0).all()


@pytest.mark.parametrize('mode', ['serial', 'parallel'])
@pytest.mark.slow
def test_a_league_learns_from_solver_labels_in_both_modes(tmp_path, mode):
    # The labels (values and policies) travel with the chunk, over the wire too (the learner refuses a chunk with
    # NaN: unlabelled is 0).
    from sparring.framework import parallel_pipeline, serial_pipeline
    from sparring.framework.player_loader import load_player
    config = tiny_league_config(
        tmp_path / mode, env=dict(type='connect_four', random_opening_plies=[26, 30]),
        policy=dict(model=dict(type='cnn', conv_layers=[[8, 4, 1]], hidden_size=16),
                    learn=dict(objective='search', gamma=1.0, gae_lambda=1.0)),
        league=dict(players=dict(naive_sp=dict(branch_probs=dict(sp=1.0)))),
        battle=dict(collect_search=dict(num_simulations=4, exact_value_empty_cells=16, exact_policy_empty_cells=16),
                    eval_opponents=['bot:random']),
        parallel=fast_parallel())
    summary = (serial_pipeline if mode == 'serial' else parallel_pipeline)(config, seed=0)
    assert summary['env_steps'] >= 256
    assert load_player(config['exp_name']).version >= 2
