"""Hide and seek, a turn-based game whose seats have roles, for the tests of the commands that use a run: the
hider (seat 0, three boxes, sees 2 numbers) hides a coin, then the seeker (seat 1, three boxes or a fourth,
illegal action; sees 3 numbers) opens a box and wins if the coin is in it. Imported by a run's ``import_names``."""
import numpy as np
from gymnasium import spaces

from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.battle_api import NativeVecBattleEnv


class HideAndSeek(NativeVecBattleEnv):
    roles = ('hider', 'seeker')
    turn_based = True

    def __init__(self, cfg, num_envs, seed=None):
        super().__init__(cfg, num_envs, seed)
        self.observation_spaces = (spaces.Box(0, 1, (2,), np.float32), spaces.Box(0, 1, (3,), np.float32))
        self.action_spaces = (spaces.Discrete(3), spaces.Discrete(4))
        self.observation_space = self.action_space = None
        self.hidden = np.full(num_envs, -1)

    def _reset_games(self, rows):
        self.hidden[rows] = -1

    def _advance(self, actions):
        B = self.num_envs
        hiding = self.hidden < 0
        found = ~hiding & (actions[1] == self.hidden)
        self.hidden = np.where(hiding, actions[0], self.hidden)
        over = ~hiding
        seeker = np.where(found, 1, -1) * over
        result = np.stack([-seeker, seeker], axis=1).astype(np.int8)
        return result.astype(np.float32), over, np.zeros(B, bool), result

    def _observe(self, rows):
        n = len(rows)
        hiding = self.hidden[rows] < 0
        hider = np.stack([hiding, np.zeros(n)], axis=1).astype(np.float32)
        seeker = np.stack([~hiding, np.zeros(n), np.ones(n)], axis=1).astype(np.float32)
        hider_mask = np.repeat(hiding[:, None], 3, axis=1)
        seeker_mask = np.concatenate([np.repeat(~hiding[:, None], 3, axis=1), np.zeros((n, 1), bool)], axis=1)
        return (hider, seeker), (hider_mask, seeker_mask), np.stack([hiding, ~hiding], axis=1)

    def render(self, row=0):
        return 'the hider hides a coin in box 0, 1 or 2' if self.hidden[row] < 0 else 'the seeker opens a box: 0, 1 or 2'


if 'hide_and_seek' not in ENV_REGISTRY:
    ENV_REGISTRY.register('hide_and_seek', HideAndSeek)
