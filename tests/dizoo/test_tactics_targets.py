"""Tactics targets (``battle.collect_search.tactics_weight``): a win in one, else a single cell to block, as the policy
target and weighed up in the loss; hand-worked labels, no solver needed, the learner's weighted loss, play unchanged."""
import copy

import numpy as np
import pytest
import torch

import sparring.dizoo  # noqa: F401  (registers the games and bots)
from sparring.config.schema import ConfigError
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.search_acting import SearchActing
from sparring.framework import serial_pipeline
from sparring.policy import functional as F
from sparring.policy.chunk_spec import ChunkSpaces
from sparring.policy.train_batch import TrainBatch
from sparring.worker.env.battle import make_battle_env
from tests.configs import tiny_league_config
from tests.dizoo.connect_four_positions import C4, after, collect_labelled, seat_view, small_ppo

TIC_TAC_TOE = BoardGeometry(3, 3, 3, gravity=False)


def _bits(geometry, cells):
    return np.uint64(sum(int(geometry.cell_bits[c]) for c in cells))


def test_completing_moves_by_hand():
    own, opp = (np.array([stones], np.uint64) for stones in after('141516'))  # X three up column 1; O on 4, 5, 6
    np.testing.assert_array_equal(C4.completing_moves(own, own | opp), [[1, 0, 0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(C4.completing_moves(opp, own | opp), [[0, 0, 1, 0, 0, 0, 1]])
    # A full column whose top three stones are X's: its carry would land on the sentinel above them and make a
    # false vertical line; the column is not legal, so it completes nothing.
    own, opp = np.array([0b111000], np.uint64), np.array([0b000111], np.uint64)
    assert C4.has_line(own | C4.move_bits(own | opp, np.int64(0)))
    assert not C4.completing_moves(own, own | opp).any()
    # Tic-tac-toe: X on cells 0 and 1 wins on 2; O's 4 and 8 would need cell 0, which X holds.
    own, opp = _bits(TIC_TAC_TOE, [0, 1]), _bits(TIC_TAC_TOE, [4, 8])
    np.testing.assert_array_equal(np.flatnonzero(TIC_TAC_TOE.completing_moves(own, own | opp)), [2])
    assert not TIC_TAC_TOE.completing_moves(opp, own | opp).any()


def test_hand_worked_tactics_labels():
    acting = SearchActing(dict(tactics_weight=4.0), C4)
    positions = [
        after('141516'),  # X wins on column 1 (O threatens 3 and 7): the win, not a block
        after('374757'),  # X wins on 2 or 6; O three up column 7
        after('172757'),  # X (1, 2, 5) has no win; O three up column 7: the one cell to block
        after('44556'),  # O to move, X threatens 3 and 7: two cells to block, every move loses, nothing to teach
        after('44'),  # nothing at stake
    ]
    obs, mask = seat_view(positions)
    mask[4] = False  # a seat not to move
    labels = acting.exact_labels(obs, mask)
    assert set(labels) == {'policy_target', 'policy_labelled', 'policy_weight'}  # no solver, no value labels
    np.testing.assert_array_equal(labels['policy_target'][0], [1, 0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(labels['policy_target'][1], [0, 0.5, 0, 0, 0, 0.5, 0])
    np.testing.assert_array_equal(labels['policy_target'][2], [0, 0, 0, 0, 0, 0, 1])
    assert (labels['policy_target'][3:] == 0).all()
    np.testing.assert_array_equal(labels['policy_labelled'], [True, True, True, False, False])
    np.testing.assert_array_equal(labels['policy_weight'], [4, 4, 4, 1, 1])


def test_tactics_need_no_solver_and_work_on_any_line_game():
    acting = SearchActing(dict(tactics_weight=2.0), TIC_TAC_TOE)
    assert acting._solver is None
    # X on 0 and 4, O on 1 and 2: X wins on 8. X on 0 and 8, O on 3 and 4: no win for X, O's one cell 5 to block.
    stones = np.array([[_bits(TIC_TAC_TOE, [0, 4]), _bits(TIC_TAC_TOE, [1, 2])],
                       [_bits(TIC_TAC_TOE, [0, 8]), _bits(TIC_TAC_TOE, [3, 4])]], np.uint64)
    obs = np.zeros((2, 3, 3, 3), np.float32)
    obs[:, :2], obs[:, 2] = TIC_TAC_TOE.planes(stones), 1.0
    labels = acting.exact_labels(obs, TIC_TAC_TOE.legal_mask(stones[:, 0] | stones[:, 1]))
    np.testing.assert_array_equal(np.flatnonzero(labels['policy_target'][0]), [8])
    np.testing.assert_array_equal(np.flatnonzero(labels['policy_target'][1]), [5])
    np.testing.assert_array_equal(labels['policy_weight'], [2, 2])


def test_the_weight_must_not_be_negative():
    with pytest.raises(ConfigError, match='tactics_weight'):
        SearchActing(dict(tactics_weight=-1.0), C4)


def test_a_weight_counts_a_step_as_if_it_were_drawn_that_many_times():
    torch.manual_seed(0)
    logits = torch.randn(3, 4, requires_grad=True)
    target = torch.tensor([[0.5, 0.5, 0, 0], [0, 0, 1.0, 0], [0.25, 0.25, 0.25, 0.25]])
    zeros = torch.zeros(3)
    weighted, _, _ = F.search_target_loss(logits.log_softmax(-1), target, zeros, zeros, torch.tensor([2.0, 1.0, 1.0]))
    (grad_weighted,) = torch.autograd.grad(weighted, logits)
    rows = torch.tensor([0, 0, 1, 2])
    repeated, _, _ = F.search_target_loss(logits.log_softmax(-1)[rows], target[rows], zeros[rows], zeros[rows])
    (grad_repeated,) = torch.autograd.grad(repeated, logits)
    torch.testing.assert_close(weighted, repeated)
    torch.testing.assert_close(grad_weighted, grad_repeated)


def test_the_collector_records_tactics_and_the_learner_weighs_them():
    policy, chunk = collect_labelled(tactics_weight=4.0)
    chunk.validate(policy.chunk_spec(ChunkSpaces.of(policy, battle=True)))
    d = chunk.data
    moved, labelled, weight = d['train_mask'], d['policy_labelled'], d['policy_weight']
    assert labelled.any() and not (labelled & ~moved).any()
    np.testing.assert_array_equal(weight[moved], np.where(labelled[moved], 4.0, 1.0))
    t, c = np.nonzero(moved)
    again = SearchActing(dict(tactics_weight=4.0), C4).exact_labels(d['obs'][t, c], d['action_mask'][t, c])
    np.testing.assert_array_equal(d['policy_target'][t, c], again['policy_target'])
    batch = policy._train_batch(d)
    keep = d['value_mask'].reshape(-1)
    np.testing.assert_array_equal(batch.policy_weight.numpy(), weight.reshape(-1)[keep])
    expected = np.where(labelled[..., None], d['policy_target'], d['search_policy']).reshape(-1, 7)[keep]
    np.testing.assert_array_equal(batch.search_policy.numpy(), expected)
    # The learner's policy loss is the weighted one: the same chunk without the weights gives another.
    unweighted = copy.deepcopy(policy).learn({k: v for k, v in d.items() if k != 'policy_weight'})
    assert policy.learn(d)['policy_loss'] != pytest.approx(unweighted['policy_loss'])
    # The labels never touch play: the same seed's games are the same without them.
    _, plain = collect_labelled()
    assert not {'policy_target', 'policy_labelled', 'policy_weight'} & set(plain.data)
    for key in plain.data:
        np.testing.assert_array_equal(plain.data[key], d[key], err_msg=key)


def test_tactic_moves_are_the_wins_else_the_one_block():
    positions = [after('141516'), after('172757'), after('44556'), after('44')]
    own, opp = (np.array(stones, np.uint64) for stones in zip(*positions))
    np.testing.assert_array_equal(C4.tactic_moves(own, opp).astype(int), [
        [1, 0, 0, 0, 0, 0, 0],  # a win (though the other player has two threats)
        [0, 0, 0, 0, 0, 0, 1],  # no win: the one cell to block
        [0, 0, 0, 0, 0, 0, 0],  # two cells to block: none
        [0, 0, 0, 0, 0, 0, 0],  # nothing at stake
    ])


def test_labels_for_a_player_that_would_ignore_them_are_refused(tmp_path):
    config = tiny_league_config(
        tmp_path / 'clip', env=dict(type='connect_four'),
        policy=dict(model=dict(type='cnn', conv_layers=[[8, 4, 1]], hidden_size=16)),  # the clip objective
        battle=dict(collect_search=dict(num_simulations=4, tactics_weight=4.0), eval_opponents=['bot:random']))
    with pytest.raises(ConfigError, match=r'"battle.collect_search": its labelling options record policy_labelled, '
                                          r'policy_target, policy_weight, .* only policy.learn.objective=\'search\''):
        serial_pipeline(config, seed=0)


def test_a_window_of_chunks_with_and_without_weights_trains_as_if_the_older_weighed_one():
    # A run resumed with tactics_weight turned on: its window holds a chunk collected without policy_weight. That
    # chunk's steps weigh 1 (as in its own update), exactly as if it had carried a column of ones.
    _, weighted = collect_labelled(tactics_weight=4.0)
    plain = {k: v for k, v in weighted.data.items() if k != 'policy_weight'}
    ones = dict(plain, policy_weight=np.ones_like(weighted.data['policy_weight']))
    env = make_battle_env(dict(type='connect_four'), 4, 0)
    windowed, explicit = (small_ppo(env, objective='search', search_window=2) for _ in range(2))
    windowed.learn(plain)
    explicit.learn(ones)
    assert windowed.learn(weighted.data)['policy_loss'] == explicit.learn(weighted.data)['policy_loss']
    for name, value in windowed.get_params().items():
        assert torch.equal(value, explicit.get_params()[name]), name
    # Without a fill for it, a field that some batches lack is refused.
    with pytest.raises(ValueError, match="field 'policy_weight' is in some batches only"):
        TrainBatch.concat([windowed._train_batch(plain), windowed._train_batch(weighted.data)])
