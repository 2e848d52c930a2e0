"""Connect four for the tests of expert iteration's labels: positions from a string of columns, as the player to move
sees them, and a short collection by search with labels."""
import numpy as np

import sparring.dizoo  # noqa: F401  (registers the games)
from sparring.config import compile_section
from sparring.config.registry import POLICY_REGISTRY
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.search_acting import SearchActing
from sparring.worker.battle_collector import BattleCollector
from sparring.worker.env.battle import make_battle_env

C4 = BoardGeometry(6, 7, 4, gravity=True)


def after(moves: str):
    """``(own, opp)`` after 1-based columns from the empty board (the player to move's stones first)."""
    own, opp = 0, 0
    for char in moves:
        occupied = own | opp
        own, opp = opp, own | ((occupied + C4.move_table[int(char) - 1]) & ~occupied)
    return own, opp


def seat_view(positions):
    """Observations and masks of the player to move for positions ``(own, opp)``, as the env shows them."""
    stones = np.array(positions, np.uint64).reshape(-1, 2)
    obs = np.zeros((len(stones), 3, C4.rows, C4.cols), np.float32)
    obs[:, :2], obs[:, 2] = C4.planes(stones), 1.0
    return obs, C4.legal_mask(stones[:, 0] | stones[:, 1])


def small_ppo(env, **learn):
    """A tiny CNN PPO policy for ``env`` (one epoch, one minibatch unless ``learn`` says otherwise)."""
    cfg = compile_section('policy', dict(type='ppo', model=dict(type='cnn', conv_layers=[[8, 4, 1]], hidden_size=16),
                                         learn=dict(dict(epochs=1, num_minibatches=1), **learn)))
    return POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=0)


def collect_labelled(seed: int = 0, **search):
    """(policy, chunk): 8 steps of 4 games from random openings of 24-30 plies, moves by a 4-simulation search with
    the ``battle.collect_search`` options ``search`` (the labels under test), learnt as expert iteration."""
    env = make_battle_env(dict(type='connect_four', random_opening_plies=[24, 30]), 4, seed, training=True)
    policy = small_ppo(env, objective='search', gamma=1.0, gae_lambda=1.0)
    acting = SearchActing(dict(num_simulations=4, **search), C4, seed=seed)
    return policy, BattleCollector(env, policy, 8, lambda slot: ('me', policy), search=acting).collect()
