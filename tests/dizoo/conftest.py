"""Shared helpers for the battle env tests: random legal play and bot-versus-bot matches."""
import numpy as np
import pytest

import sparring.dizoo  # noqa: F401  (registers the games and their bots)
from sparring.config.registry import BOT_REGISTRY
from sparring.worker.env.battle import make_battle_env
from sparring.worker.env.lockstep_match import first_game_results


def random_legal_actions(step, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal action for every seat to move, 0 for the others."""
    scores = rng.random(step.action_mask.shape) * step.action_mask
    return np.where(step.to_move, scores.argmax(axis=2), 0)


def play_match(game: str, bot_names, num_games: int, seed: int = 0, bot_cfgs=({}, {}), env_cfg=None):
    """Results of seat 0 (+1/0/-1) in the first ``num_games`` games, one per env, of two bots."""
    env = make_battle_env(dict(type=game, **(env_cfg or {})), num_games, seed)
    bots = [BOT_REGISTRY.get(name)(cfg, env.observation_space, env.action_space, seed=seed + 100 * k)
            for k, (name, cfg) in enumerate(zip(bot_names, bot_cfgs))]
    return first_game_results(env, bots)


@pytest.fixture
def random_actions():
    return random_legal_actions


@pytest.fixture
def match():
    return play_match
