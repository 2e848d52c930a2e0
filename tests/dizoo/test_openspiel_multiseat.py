"""OpenSpiel games of three or more players: the S-seat env (three-player Kuhn poker, Leduc), its rankings, and
NashConv of a table, a network-like policy and a population mixture by OpenSpiel's own ``nash_conv``."""
import numpy as np
import pytest

from sparring.config.schema import ConfigError
from sparring.worker.env.errors import EnvError
from sparring.worker.env.multiseat_api import ranks_from_returns

pyspiel = pytest.importorskip('pyspiel')
from sparring.dizoo.openspiel.exploitability import (decision_tree, policy_nash_conv,  # noqa: E402
                                                     population_nash_conv, table_nash_conv)
from sparring.dizoo.openspiel.multiseat_env import OpenSpielMultiSeatEnv  # noqa: E402

KUHN3 = dict(game='kuhn_poker', game_params=dict(players=3))


class UniformPolicy:
    def action_probabilities(self, obs, action_mask):
        return action_mask / action_mask.sum(axis=1, keepdims=True)


class AlwaysFirstPolicy:
    """Pass/check or fold whenever it can: the first legal action."""

    def action_probabilities(self, obs, action_mask):
        probs = np.zeros(action_mask.shape)
        probs[np.arange(len(probs)), action_mask.argmax(axis=1)] = 1.0
        return probs


def random_actions(step, rng):
    B, S, _ = step.action_mask.shape
    actions = np.zeros((B, S), np.int64)
    for b, s in zip(*np.nonzero(step.to_move)):
        actions[b, s] = rng.choice(np.flatnonzero(step.action_mask[b, s]))
    return actions


def test_ranks_count_the_seats_with_a_higher_return():
    assert ranks_from_returns([[2, -1, -1], [-2, -1, 3], [0, 0, 0]]).tolist() == [[0, 1, 1], [2, 1, 0], [0, 0, 0]]


@pytest.mark.parametrize('game, seats', [('kuhn_poker', 3), ('kuhn_poker', 4), ('leduc_poker', 3)])
def test_a_game_of_s_players_is_played_seat_by_seat_and_ranked_by_its_returns(game, seats):
    env = OpenSpielMultiSeatEnv(dict(game=game, game_params=dict(players=seats)), 6, seed=0)
    assert env.num_seats == seats and env.agents[-1] == f'player_{seats - 1}'
    step = env.reset()
    assert step.obs.shape == (6, seats) + env.observation_space.shape
    rng, returns, ended = np.random.default_rng(0), np.zeros((6, seats)), 0
    for _ in range(200):
        assert (step.to_move.sum(axis=1) == 1).all()  # turn-based: one seat moves, and only it has legal actions
        assert (step.action_mask.any(axis=2) == step.to_move).all()
        step = env.step(random_actions(step, rng))
        returns += step.reward
        for b in np.flatnonzero(step.terminated):
            assert step.rank[b].tolist() == ranks_from_returns(returns[b]).tolist()
            assert abs(returns[b].sum()) < 1e-6  # poker is zero-sum
            returns[b] = 0.0
            ended += 1
        assert (step.rank[~step.terminated] == 0).all()
    assert ended > 20


def test_the_same_seed_plays_the_same_games():
    def play(seed):
        env = OpenSpielMultiSeatEnv(KUHN3, 4, seed=seed)
        step, rng, seen = env.reset(), np.random.default_rng(1), []
        for _ in range(30):
            step = env.step(random_actions(step, rng))
            seen.append(step.reward.copy())
        return np.stack(seen)
    assert np.array_equal(play(3), play(3)) and not np.array_equal(play(3), play(4))


def test_an_illegal_or_misshapen_action_is_refused_before_any_game_changes():
    env = OpenSpielMultiSeatEnv(KUHN3, 2, seed=0)
    step = env.reset()
    with pytest.raises(EnvError, match=r'expected integers \[2, 3\]'):
        env.step(np.zeros((2, 2), np.int64))
    bad = np.zeros((2, 3), np.int64)
    bad[0, int(np.flatnonzero(step.to_move[0])[0])] = 5
    with pytest.raises(EnvError, match='seat 0 of game 0 played 5, which is not legal; legal actions: \\[0, 1\\]'):
        env.step(bad)
    assert env.step(np.zeros((2, 3), np.int64)).obs.shape[:2] == (2, 3)


def test_the_two_seat_env_points_to_this_one_for_three_players():
    from sparring.dizoo.openspiel.spiel import load_two_player_game
    with pytest.raises(ConfigError, match="'openspiel_multiseat' plays games of three or more"):
        load_two_player_game('kuhn_poker', dict(players=3))


# ------------------------------------------------------------------------------- NashConv
def test_nash_conv_of_a_policy_matches_openspiel_python_reference():
    from open_spiel.python import policy as openspiel_policy
    from open_spiel.python.algorithms import exploitability
    game = pyspiel.load_game('kuhn_poker(players=3)')
    reference = exploitability.nash_conv(game, openspiel_policy.UniformRandomPolicy(game))
    assert policy_nash_conv('kuhn_poker', UniformPolicy(), game_params=dict(players=3)) == pytest.approx(reference)
    assert reference == pytest.approx(2.0625)


def test_nash_conv_of_a_cfr_table_and_of_a_mixture():
    tree = decision_tree('kuhn_poker', dict(players=3), players=None)
    solver = pyspiel.CFRPlusSolver(tree.game)
    for _ in range(200):
        solver.evaluate_and_update_policy()
    average = solver.average_policy()
    table = {key: list(average.get_state_policy(key)) for key in tree.info_keys}
    assert table_nash_conv(tree, table) == pytest.approx(pyspiel.nash_conv(tree.game, average))
    assert table_nash_conv(tree, table) < 0.01
    # a mixture of one policy is that policy; of two, neither's NashConv in general
    uniform, first = UniformPolicy(), AlwaysFirstPolicy()
    assert population_nash_conv(tree, [uniform, first], [1.0, 0.0]) == pytest.approx(policy_nash_conv(tree, uniform))
    mixed = population_nash_conv(tree, [uniform, first], [0.5, 0.5])
    assert mixed not in (pytest.approx(policy_nash_conv(tree, uniform)), pytest.approx(policy_nash_conv(tree, first)))


def test_a_table_missing_information_states_is_refused():
    tree = decision_tree('kuhn_poker', dict(players=3), players=None)
    with pytest.raises(ValueError, match='no entry for 47 of the 48 information states'):
        table_nash_conv(tree, {tree.info_keys[0]: [(0, 1.0)]})


def test_a_two_player_tree_is_not_taken_for_three_players():
    tree = decision_tree('kuhn_poker', dict(players=3), players=None)
    with pytest.raises(ConfigError, match='has 3 players; expected 2'):
        decision_tree(tree)


def test_the_exact_meta_game_of_three_profiles_and_its_meta_strategy():
    from open_spiel.python import policy as openspiel_policy
    from open_spiel.python.algorithms.expected_game_score import policy_value
    from sparring.dizoo.openspiel.exploitability import OpenSpielNashConv
    analysis = OpenSpielNashConv('kuhn_poker', dict(players=3))
    tree = analysis.tree
    legal = tree.mask[tree.info_input]
    uniform = legal / legal.sum(axis=1, keepdims=True)
    first = np.zeros_like(uniform)
    first[np.arange(len(first)), legal.argmax(axis=1)] = 1.0
    solver = pyspiel.CFRPlusSolver(tree.game)
    for _ in range(300):
        solver.evaluate_and_update_policy()
    average = solver.average_policy()
    cfr = np.array([[dict(average.get_state_policy(key)).get(a, 0.0) for a in range(2)] for key in tree.info_keys])
    game = analysis.meta_game([uniform, first, cfr])
    assert game.shape == (3, 3, 3, 3) and np.allclose(game.sum(axis=0), 0.0)  # zero-sum in every profile
    everyone_uniform = policy_value(tree.game.new_initial_state(), [openspiel_policy.UniformRandomPolicy(tree.game)] * 3)
    assert game[:, 0, 0, 0] == pytest.approx(everyone_uniform)
    weights = analysis.meta_strategy([uniform, first, cfr])
    assert weights.sum() == pytest.approx(1.0) and weights[2] > 0.9  # the near-equilibrium profile carries it
    assert analysis.population_nash_conv([uniform, first, cfr], weights) < 0.05 < analysis.nash_conv(uniform)


def test_the_meta_game_is_refused_past_its_capacity():
    from sparring.dizoo.openspiel.exploitability import OpenSpielNashConv
    analysis = OpenSpielNashConv('kuhn_poker', dict(players=4))  # 3,960 terminal histories, a K^3 meta-game
    capacity = analysis.meta_capacity()
    assert capacity ** 3 * 3960 <= 2 ** 23 < (capacity + 1) ** 3 * 3960
    legal = analysis.tree.mask[analysis.tree.info_input]
    uniform = legal / legal.sum(axis=1, keepdims=True)
    assert analysis.meta_game([uniform] * 2).shape == (4, 2, 2, 2, 2)
    with pytest.raises(ValueError, match=f'{capacity + 1} profiles .* exceed its capacity of {capacity}'):
        analysis.meta_game([uniform] * (capacity + 1))
