"""Bots are built with the run's env section: a bot written for one board size can size itself from the
env's options, or refuse another size in one line that names it."""
import numpy as np
import pytest
from gymnasium import spaces

from sparring.config.registry import BOT_REGISTRY
from sparring.config.schema import ConfigError
from sparring.policy.bot import Bot
from sparring.worker.env.battle import make_battle_env
from sparring.worker.policy_pool import ParamStore, PolicyPool


@BOT_REGISTRY.register('test_corner_bot')
class CornerBot(Bot):
    """Plays the last cell of the board the env was configured with, when it is free."""

    def __init__(self, cfg, observation_space, action_space, seed=0, env=None):
        super().__init__(cfg, observation_space, action_space, seed, env)
        rows, cols = self.env_cfg.get('rows', 3), self.env_cfg.get('cols', 3)
        if rows * cols != self.num_actions:
            raise ValueError(f'bot {self.name!r}: a {rows}x{cols} board in env; expected {self.num_actions} cells')
        self.corner = rows * cols - 1

    def _choose(self, obs, action_mask):
        return np.where(action_mask[:, self.corner], self.corner, action_mask.argmax(axis=1))


def _pool(env_cfg):
    env = make_battle_env(env_cfg, 1, 0)
    try:
        return PolicyPool(ParamStore(None), env.observation_space, env.action_space, env_cfg=env_cfg), env.reset()
    finally:
        env.close()


def test_a_bot_is_told_the_envs_options():
    pool, step = _pool(dict(type='tictactoe', rows=4, cols=4, win_length=3))
    bot = pool.get('bot:test_corner_bot')
    assert bot.env_cfg['rows'] == 4 and bot.corner == 15
    assert bot.act(step.obs[:, 0], action_mask=step.action_mask[:, 0]).action.tolist() == [15]


def test_the_line_game_bots_take_the_envs_line_length():
    pool, _ = _pool(dict(type='tictactoe', rows=4, cols=4, win_length=4))
    assert pool.get('bot:tictactoe_heuristic').cfg['win_length'] == 4
    assert pool.get('bot:tictactoe_heuristic?win_length=3').cfg['win_length'] == 3  # an option still wins


def test_a_bot_that_refuses_the_game_says_so_in_one_line_naming_the_reference():
    pool, _ = _pool(dict(type='tictactoe', rows=4, cols=4, win_length=3))
    pool.env_cfg = dict(pool.env_cfg, rows=2)  # told a board the spaces do not have
    with pytest.raises(ConfigError, match=r"^bot:test_corner_bot: bot 'test_corner_bot': a 2x4 board in env; "
                                          r"expected 16 cells$"):
        pool.get('bot:test_corner_bot')


def test_a_bot_built_outside_a_run_has_an_empty_env_section():
    bot = BOT_REGISTRY.get('random')({}, spaces.Box(0, 1, (2,)), spaces.Discrete(3))
    assert bot.env_cfg == {}
