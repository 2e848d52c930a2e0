"""Battle envs whose seats have roles: per-seat spaces, per-seat BattleStep arrays and per-seat actions."""
import numpy as np
import pytest
from gymnasium import spaces

from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.battle import DictBattleVecEnv, SingleGameView
from sparring.worker.env.battle_api import BattleEnv, NativeVecBattleEnv
from sparring.worker.env.battle_step import BattleStep, seat_action_rows, seat_spaces, zero_actions
from sparring.worker.env.errors import EnvError


class Duel(BattleEnv):
    """Seat 0 (a 'caller', Discrete(3), sees 3 numbers) names a number; seat 1 (a 'guesser', Box(-1, 1, (1,)),
    sees 2 numbers) moves towards it. The game lasts 3 rounds; the guesser wins when its total is positive."""

    roles = ('caller', 'guesser')

    def __init__(self, cfg=None):
        super().__init__(cfg)
        self.t = 0
        self.total = 0.0

    def observation_space(self, agent):
        return spaces.Box(-10, 10, (3,) if agent == 'player_0' else (2,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(3) if agent == 'player_0' else spaces.Box(-1, 1, (1,), np.float32)

    def _obs(self):
        return {'player_0': np.array([self.t, self.total, 1], np.float32),
                'player_1': np.array([self.t, -self.total], np.float32)}

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        self.t, self.total = 0, 0.0
        return self._obs(), {'player_0': {'action_mask': np.array([True, True, False])}, 'player_1': {}}

    def step(self, actions):
        self.t += 1
        self.total += float(actions['player_1'][0]) - 0.1 * int(actions['player_0'])
        over = self.t == 3
        infos = {'player_0': {'action_mask': np.array([True, True, False])}, 'player_1': {}}
        if over:
            won = self.total > 0
            infos['player_0']['result'] = 'loss' if won else 'win'
            infos['player_1']['result'] = 'win' if won else 'loss'
        flags = {a: over for a in self.possible_agents}
        return self._obs(), {a: 0.0 for a in self.possible_agents}, flags, dict(flags), infos


class NativeDuel(NativeVecBattleEnv):
    """Duel's rules on arrays (no config, no registry)."""

    roles = ('caller', 'guesser')

    def __init__(self, num_envs, seed=None):
        super().__init__({}, num_envs, seed)
        self.observation_spaces = (spaces.Box(-10, 10, (3,), np.float32), spaces.Box(-10, 10, (2,), np.float32))
        self.action_spaces = (spaces.Discrete(3), spaces.Box(-1, 1, (1,), np.float32))
        self.observation_space = self.action_space = None
        self.t = np.zeros(num_envs, int)
        self.total = np.zeros(num_envs)

    def _reset_games(self, rows):
        self.t[rows] = 0
        self.total[rows] = 0.0

    def _advance(self, actions):
        self.t += 1
        self.total += actions[1][:, 0] - 0.1 * actions[0]
        over = self.t == 3
        won = np.where(self.total > 0, 1, -1).astype(np.int8)
        result = np.where(over[:, None], np.stack([-won, won], axis=1), 0).astype(np.int8)
        return np.zeros((self.num_envs, 2), np.float32), over, np.zeros_like(over), result

    def _observe(self, rows):
        n = len(rows)
        caller = np.stack([self.t[rows], self.total[rows], np.ones(n)], axis=1).astype(np.float32)
        guesser = np.stack([self.t[rows], -self.total[rows]], axis=1).astype(np.float32)
        mask = np.tile([True, True, False], (n, 1))
        return (caller, guesser), (mask, np.ones((n, 1), bool)), np.ones((n, 2), bool)


if 'test_native_duel' not in ENV_REGISTRY:
    ENV_REGISTRY.register('test_native_duel', NativeDuel)


def _make(kind, num_envs=3):
    return DictBattleVecEnv(Duel, num_envs, seed=0) if kind == 'loop' else NativeDuel(num_envs, seed=0)


@pytest.mark.parametrize('kind', ['loop', 'native'])
def test_each_seat_has_its_own_spaces_and_per_seat_arrays(kind):
    env = _make(kind)
    obs_spaces, act_spaces = seat_spaces(env)
    assert env.roles == ('caller', 'guesser')
    assert [s.shape for s in obs_spaces] == [(3,), (2,)]
    assert act_spaces[0] == spaces.Discrete(3) and act_spaces[1].shape == (1,)
    step = env.reset()
    assert step.per_seat and step.num_seats == 2
    assert step.seat_obs(0).shape == (3, 3) and step.seat_obs(1).shape == (3, 2)
    assert step.seat_mask(0).shape == (3, 3) and step.seat_mask(1).shape == (3, 1)
    actions = zero_actions(env)
    assert [a.shape for a in actions] == [(3,), (3, 1)] and actions[0].dtype == np.int64
    seat_action_rows(actions, 0)[:] = 1
    seat_action_rows(actions, 1)[:] = 5.0  # clipped to the guesser's box
    for _ in range(3):
        step = env.step(actions)
    assert step.terminated.all()
    np.testing.assert_allclose(step.seat_final_obs(1)[:, 1], -(3 * 1.0 - 0.3), rtol=1e-6)
    assert step.seat_obs(0)[:, 0].tolist() == [0, 0, 0]  # the next games
    assert step.result.tolist() == [[-1, 1]] * 3


@pytest.mark.parametrize('kind', ['loop', 'native'])
def test_per_seat_actions_are_checked_against_each_seats_space(kind):
    env = _make(kind)
    env.reset()
    with pytest.raises(EnvError, match=r"expected a tuple or list of 2 arrays, one per seat \(roles"):
        env.step(np.zeros((3, 2), np.int64))
    with pytest.raises(EnvError, match=r"seat 0 \(player_0, role 'caller'\): env 1 played illegal action 2; "
                                       r"legal actions there: \[0, 1\]"):
        env.step([np.array([0, 2, 0]), np.zeros((3, 1), np.float32)])
    with pytest.raises(EnvError, match=r"seat 1 .*shape \(3,\); expected shape \(3, 1\)"):
        env.step([np.zeros(3, np.int64), np.zeros(3, np.float32)])
    with pytest.raises(EnvError, match=r"seat 1 .*env 0 played action \[nan\]; expected finite numbers"):
        env.step([np.zeros(3, np.int64), np.full((3, 1), np.nan, np.float32)])


def test_the_loop_and_the_native_game_agree_step_for_step():
    loop, native = _make('loop'), _make('native')
    a, b = loop.reset(), native.reset()
    rng = np.random.default_rng(0)
    for _ in range(7):
        for s in range(2):
            np.testing.assert_array_equal(a.seat_obs(s), b.seat_obs(s))
            np.testing.assert_array_equal(a.seat_mask(s), b.seat_mask(s))
        actions = [rng.integers(0, 2, 3), rng.uniform(-2, 2, (3, 1)).astype(np.float32)]
        a, b = loop.step(actions), native.step(actions)
        np.testing.assert_array_equal(a.result, b.result)
        np.testing.assert_array_equal(a.terminated, b.terminated)


def test_a_single_game_view_of_a_role_game_has_each_agents_spaces():
    view = SingleGameView(NativeDuel(1, seed=0))
    assert view.roles == ('caller', 'guesser')
    assert view.observation_space('player_1').shape == (2,)
    obs, infos = view.reset()
    assert obs['player_0'].shape == (3,) and 'action_mask' in infos['player_0'] and infos['player_1'] == {}
    for _ in range(3):
        obs, _, term, _, infos = view.step({'player_0': 0, 'player_1': np.array([0.5], np.float32)})
    assert term['player_0'] and infos['player_1']['result'] == 'win'


def test_seats_of_different_spaces_need_roles_and_roles_must_be_names():
    class NoRoles(Duel):
        roles = None

    with pytest.raises(EnvError, match=r"different spaces .* \(or a game that names each seat's role"):
        DictBattleVecEnv(NoRoles, 2)

    class OneRole(Duel):
        roles = ('caller', 'caller')

    with pytest.raises(EnvError, match=r"roles \('caller', 'caller'\) name one role; expected at least two"):
        DictBattleVecEnv(OneRole, 2)

    class BadName(Duel):
        roles = ('caller', 'a b')

    with pytest.raises(EnvError, match=r"role 'a b' in roles"):
        DictBattleVecEnv(BadName, 2)


def test_a_symmetric_step_reads_seats_through_the_same_accessors():
    obs = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    step = BattleStep(obs, np.ones((2, 2, 4), bool), np.ones((2, 2), bool), np.zeros((2, 2), np.float32),
                      np.zeros(2, bool), np.zeros(2, bool), np.zeros((2, 2), np.int8), obs)
    assert not step.per_seat and step.num_seats == 2
    np.testing.assert_array_equal(step.seat_obs(1), obs[:, 1])
    assert step.seat_mask(0).shape == (2, 4)
