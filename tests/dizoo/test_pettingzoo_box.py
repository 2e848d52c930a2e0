"""The PettingZoo adapter with Box actions: a tiny self-made parallel env (a tug of war) played as a battle env."""
import sys
import types

import numpy as np
import pytest
from gymnasium import spaces

from sparring.config.registry import BOT_REGISTRY
from sparring.worker.env.battle import DictBattleVecEnv, make_battle_env
from sparring.worker.env.lockstep_match import first_game_results

pettingzoo = pytest.importorskip('pettingzoo')

MODULE = 'sparring_test_tug_of_war'


class TugOfWar(pettingzoo.ParallelEnv):
    """Both agents pull a rope with a force in [-1, 1]; the knot moves by 0.1 x (pull_0 - pull_1); past +1 player_0
    wins, past -1 player_1 does; ``max_cycles`` steps without a winner end the game (truncated)."""

    metadata = {'name': 'tug_of_war_v0'}

    def __init__(self, max_cycles=50):
        self.possible_agents = ['player_0', 'player_1']
        self.max_cycles = max_cycles
        self.received = []

    def observation_space(self, agent):
        return spaces.Box(-2.0, 2.0, (1,), np.float32)

    def action_space(self, agent):
        return spaces.Box(-1.0, 1.0, (1,), np.float32)

    def _obs(self):
        return {'player_0': np.array([self.knot], np.float32), 'player_1': np.array([-self.knot], np.float32)}

    def reset(self, seed=None, options=None):
        self.agents, self.knot, self.cycles = list(self.possible_agents), 0.0, 0
        return self._obs(), {a: {} for a in self.agents}

    def step(self, actions):
        for action in actions.values():
            assert isinstance(action, np.ndarray) and action.dtype == np.float32 and abs(float(action[0])) <= 1.0
        self.received.append(actions)
        self.knot += 0.1 * (float(actions['player_0'][0]) - float(actions['player_1'][0]))
        self.cycles += 1
        winner = 1.0 if self.knot >= 1.0 - 1e-9 else -1.0 if self.knot <= -1.0 + 1e-9 else 0.0
        rewards = {'player_0': winner, 'player_1': -winner}
        over = winner != 0.0
        terminations = {a: over for a in self.agents}
        truncations = {a: not over and self.cycles >= self.max_cycles for a in self.agents}
        obs = self._obs()
        if over or self.cycles >= self.max_cycles:
            self.agents = []
        return obs, rewards, terminations, truncations, {a: {} for a in self.possible_agents}


@pytest.fixture(autouse=True)
def tug_of_war_module(monkeypatch):
    module = types.ModuleType(MODULE)
    module.parallel_env = TugOfWar
    monkeypatch.setitem(sys.modules, MODULE, module)


def test_a_parallel_env_with_box_actions_is_a_battle_env():
    env = make_battle_env(dict(type='pettingzoo', env=f'{MODULE}:parallel_env', kwargs=dict(max_cycles=8)), 2, 0)
    assert isinstance(env, DictBattleVecEnv) and not env.turn_based
    assert env.action_space == spaces.Box(-1.0, 1.0, (1,), np.float32)
    step = env.reset()
    assert step.to_move.all() and step.action_mask.shape == (2, 2, 1)
    pulls = np.array([[[5.0], [-1.0]], [[0.0], [0.5]]])  # 5 is clipped to 1
    for _ in range(5):
        step = env.step(pulls)
    # game 0: the knot moves by 0.2 a step and reaches +1 at the fifth; game 1 drifts to -0.25
    assert step.terminated.tolist() == [True, False] and step.result[0].tolist() == [1, -1]
    assert step.reward[0].tolist() == [1.0, -1.0]
    assert float(env.envs[0].env.received[0]['player_0'][0]) == 1.0
    for _ in range(3):
        step = env.step(pulls)
    assert step.truncated[1] and step.result[1].tolist() == [0, 0]  # no reward either side: a draw (the adapter sums)
    env.close()


def test_random_bots_play_the_box_game_through_the_adapter():
    env = make_battle_env(dict(type='pettingzoo', env=f'{MODULE}:parallel_env', kwargs=dict(max_cycles=400)), 16, 1)
    bots = [BOT_REGISTRY.get('random')({}, env.observation_space, env.action_space, seed=k) for k in range(2)]
    results = first_game_results(env, bots)
    assert set(results.tolist()) <= {-1, 0, 1} and len(results) == 16
    env.close()
