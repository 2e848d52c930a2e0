"""The battle env API: single games in a loop (DictBattleVecEnv) against the native vectorised games,
its checks of bad game output, the single-game view, building battle envs from config, and their config."""
import numpy as np
import pytest
from gymnasium import spaces

from sparring.config.compile import compile_config
from sparring.config.schema import ConfigError
from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.battle import DictBattleVecEnv, SingleGameView, is_battle_env, make_battle_env
from sparring.worker.env.battle_api import BattleEnv, VecBattleEnv
from sparring.worker.env.battle_step import BattleStep
from sparring.worker.env.errors import EnvError

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


class ReferenceTicTacToe(BattleEnv):
    """Plain-Python tic-tac-toe, written without the bitboards, as the native env's reference."""

    turn_based = True
    fault = ''  # set by the fault tests: which bad output to return

    def __init__(self, cfg=None):
        super().__init__(cfg)
        self._observation_space = spaces.Box(0.0, 1.0, (3, 3, 3), np.float32)
        self._action_space = spaces.Discrete(9)

    def observation_space(self, agent):
        return self._observation_space

    def action_space(self, agent):
        return self._action_space

    def reset(self, seed=None, options=None):
        self.board = [None] * 9
        self.mover = 0
        self.agents = list(self.possible_agents)
        return self._observations(), self._infos(over=False)

    def step(self, actions):
        cell = actions[self.possible_agents[self.mover]]
        assert self.board[cell] is None, 'the env checks legality before the game sees an action'
        mover = self.mover
        self.board[cell] = mover
        won = any(all(self.board[i] == mover for i in line) for line in LINES)
        over = won or None not in self.board
        self.mover = 1 - mover
        rewards = {a: 0.0 for a in self.possible_agents}
        infos = self._infos(over)
        if won:
            for seat, agent in enumerate(self.possible_agents):
                rewards[agent] = 1.0 if seat == mover else -1.0
                infos[agent]['result'] = 'win' if seat == mover else 'loss'
        elif over:
            for agent in self.possible_agents:
                infos[agent]['result'] = 'draw'
        if over:
            self.agents = []
        flags = {a: over for a in self.possible_agents}
        out = [self._observations(), rewards, flags, {a: False for a in self.possible_agents}, infos]
        return self._inject_fault(out, over)

    def _observations(self):
        obs = {}
        for seat, agent in enumerate(self.possible_agents):
            planes = np.zeros((3, 3, 3), np.float32)
            for cell, owner in enumerate(self.board):
                if owner is not None:
                    planes[0 if owner == seat else 1, cell // 3, cell % 3] = 1.0
            planes[2] = float(seat == self.mover)
            obs[agent] = planes
        return obs

    def _infos(self, over):
        free = np.array([c is None for c in self.board])
        return {agent: {'action_mask': free & (seat == self.mover) & (not over)}
                for seat, agent in enumerate(self.possible_agents)}

    def _inject_fault(self, out, over):
        obs, rewards, terminations, truncations, infos = out
        p0, p1 = self.possible_agents
        fault = self.fault
        if fault == 'obs_shape':
            obs[p0] = np.zeros(9, np.float32)
        elif fault == 'nan_obs':
            obs[p1][0, 0, 0] = np.nan
        elif fault == 'nan_reward':
            rewards[p0] = float('nan')
        elif fault == 'bool_reward':
            rewards[p1] = True
        elif fault == 'missing_agent':
            del rewards[p1]
        elif fault == 'int_termination':
            terminations[p0] = int(terminations[p0])
        elif fault == 'one_agent_terminates':
            terminations[p0] = True
        elif fault == 'mask_shape':
            infos[p0]['action_mask'] = np.ones(3, bool)
        elif fault == 'missing_mask':
            del infos[p1]['action_mask']
        elif fault == 'no_legal_action' and not over:
            infos[p0]['action_mask'][:] = infos[p1]['action_mask'][:] = False
        elif fault == 'four_tuple':
            return obs, rewards, terminations, infos
        elif fault == 'raise':
            raise ValueError('boom from the reference game')
        elif over and fault == 'no_result':
            del infos[p0]['result']
        elif over and fault == 'results_not_opposite':
            infos[p0]['result'] = infos[p1]['result'] = 'win'
        return obs, rewards, terminations, truncations, infos


def assert_steps_equal(a: BattleStep, b: BattleStep, where=''):
    for field in BattleStep._fields:
        x, y = getattr(a, field), getattr(b, field)
        assert x.shape == y.shape and x.dtype == y.dtype, f'{where} {field}: {x.shape} {x.dtype} vs {y.shape} {y.dtype}'
        np.testing.assert_array_equal(x, y, err_msg=f'{where} {field}')


def run_side_by_side(native: VecBattleEnv, other: VecBattleEnv, steps: int, random_actions, seed=0):
    rng = np.random.default_rng(seed)
    a, b = native.reset(), other.reset()
    assert_steps_equal(a, b, 'reset')
    endings = 0
    for t in range(steps):
        actions = random_actions(a, rng)
        a, b = native.step(actions), other.step(actions)
        assert_steps_equal(a, b, f'step {t}')
        endings += int((a.terminated | a.truncated).sum())
    return endings


@pytest.mark.slow
def test_single_reference_games_in_a_loop_equal_the_native_vectorised_game(random_actions):
    native = make_battle_env(dict(type='tictactoe'), 16, 0)
    looped = DictBattleVecEnv(ReferenceTicTacToe, 16, 0)
    assert looped.turn_based and looped.agents == ['player_0', 'player_1'] and looped.num_seats == 2
    assert looped.observation_space == native.observation_space and looped.action_space == native.action_space
    assert run_side_by_side(native, looped, 120, random_actions) > 100


@pytest.mark.parametrize('game', ['connect_four', 'pong_duel', 'rock_paper_scissors'])
@pytest.mark.slow
def test_the_single_game_view_in_a_loop_equals_the_native_game(game, random_actions):
    # One game per env: the view consumes the vectorised env's randomness exactly as it would alone.
    native = make_battle_env(dict(type=game), 1, 3)
    looped = DictBattleVecEnv(lambda: SingleGameView(make_battle_env(dict(type=game), 1, None)), 1, 3)
    assert looped.turn_based == native.turn_based
    assert run_side_by_side(native, looped, 400, random_actions) >= 1


def test_the_single_game_view_speaks_the_parallel_api():
    view = SingleGameView(make_battle_env(dict(type='tictactoe'), 1, 0))
    obs, infos = view.reset(seed=1)
    assert set(obs) == set(infos) == {'player_0', 'player_1'} == set(view.agents)
    assert infos['player_0']['action_mask'].all() and not infos['player_1']['action_mask'].any()
    assert view.observation_space('player_1').shape == (3, 3, 3) and view.action_space('player_0').n == 9
    for cell in (0, 3, 1, 4):
        obs, rewards, terminations, truncations, infos = view.step({'player_0': cell, 'player_1': cell})
        assert not any(terminations.values())
    obs, rewards, terminations, truncations, infos = view.step({'player_0': 2, 'player_1': 0})
    assert rewards == {'player_0': 1.0, 'player_1': -1.0} and all(terminations.values())
    assert infos['player_0']['result'] == 'win' and infos['player_1']['result'] == 'loss'
    assert obs['player_0'][0].sum() == 3 and view.agents == []
    with pytest.raises(EnvError, match='after the game ended'):
        view.step({'player_0': 5, 'player_1': 0})
    obs, infos = view.reset()
    assert not obs['player_0'][:2].any()
    with pytest.raises(EnvError, match="unknown agent 'nobody'"):
        view.action_space('nobody')


FAULTS = {
    'obs_shape': r"observation for 'player_0' of shape \(9,\).*expected shape \(3, 3, 3\)",
    'nan_obs': 'containing NaN or inf',
    'nan_reward': "reward nan of type float for 'player_0'; expected a finite real number",
    'bool_reward': "reward True of type bool for 'player_1'",
    'missing_agent': r"rewards keyed by \['player_0'\]; expected a dict with the keys \['player_0', 'player_1'\]",
    'int_termination': r"terminations\['player_0'\] = 0 of type int; expected bool",
    'one_agent_terminates': 'expected equal values: a two-player game ends for both agents at once',
    'mask_shape': r'action_mask.*of shape \(3,\).*expected a bool array of shape \(9,\)',
    'missing_mask': r'returned no infos\[\'player_1\'\]\["action_mask"\]',
    'no_legal_action': 'left no agent with a legal action although the game did not end',
    'four_tuple': 'expected a 5-tuple of dicts',
    'raise': 'raised ValueError in step.*boom from the reference game',
    'no_result': r'ended the game with infos\[agent\]\["result"\] = \{\'player_0\': None',
    'results_not_opposite': 'expected opposite results',
}


@pytest.mark.parametrize('fault', FAULTS)
def test_bad_game_output_raises_a_clear_env_error_and_requires_a_reset(fault, random_actions):
    faulty = type('FaultyTicTacToe', (ReferenceTicTacToe,), {'fault': fault})
    env = DictBattleVecEnv(faulty, 3, 0)
    rng = np.random.default_rng(0)
    step = env.reset()
    with pytest.raises(EnvError, match=FAULTS[fault]) as err:
        for _ in range(9):  # a game of tic-tac-toe ends within 9 moves
            step = env.step(random_actions(step, rng))
    assert 'DictBattleVecEnv(FaultyTicTacToe): game ' in str(err.value)
    with pytest.raises(EnvError, match=r'call reset\(\) before step\(\)'):
        env.step(np.zeros((3, 2), np.int64))
    env.close()


def test_dict_env_rejects_games_it_cannot_batch():
    class ThreeAgents(ReferenceTicTacToe):
        possible_agents = ['a', 'b', 'c']

    with pytest.raises(EnvError, match=r"possible_agents is \['a', 'b', 'c'\]; expected 2 agents"):
        DictBattleVecEnv(ThreeAgents, 2)

    class Asymmetric(ReferenceTicTacToe):
        def action_space(self, agent):
            return spaces.Discrete(9 if agent == 'player_0' else 3)

    with pytest.raises(EnvError, match='expected the same for both seats'):
        DictBattleVecEnv(Asymmetric, 2)
    with pytest.raises(EnvError, match='num_envs must be an int >= 1'):
        DictBattleVecEnv(ReferenceTicTacToe, 0)


def test_life_cycle_errors():
    env = make_battle_env(dict(type='tictactoe'), 2, 0)
    with pytest.raises(EnvError, match=r'call reset\(\) before step\(\): reset\(\) was not called yet'):
        env.step(np.zeros((2, 2), np.int64))
    with pytest.raises(EnvError, match=r'reset\(seed\) must be an int >= 0 or None, got -1'):
        env.reset(seed=-1)
    env.close()
    with pytest.raises(EnvError, match='is closed'):
        env.reset()
    env.close()  # idempotent


def test_reset_seed_semantics(random_actions):
    """The constructor's seed seeds the first reset; reset(seed) reseeds; later resets continue."""
    def first_obs(env, seed=None):
        return env.reset(seed).obs

    a = make_battle_env(dict(type='pong_duel'), 4, 11)
    b = make_battle_env(dict(type='pong_duel'), 4, None)
    first = first_obs(a)
    np.testing.assert_array_equal(first, first_obs(b, 11))
    assert not np.array_equal(first, first_obs(a))  # continues the generator
    np.testing.assert_array_equal(first, first_obs(a, 11))


def test_make_battle_env_builds_single_games_in_a_loop_and_refuses_single_agent_envs():
    name = 'test_reference_tictactoe'
    if name not in ENV_REGISTRY:
        ENV_REGISTRY.register(name, ReferenceTicTacToe)
    env = make_battle_env(dict(type=name), 2, 0)
    assert isinstance(env, DictBattleVecEnv) and not ReferenceTicTacToe.is_vectorised
    assert env.envs[0].cfg.n_evaluator_episodes == 8
    native = make_battle_env(dict(type='connect_four'), 2, 0)
    assert type(native).is_vectorised and native.cfg.rows == 6
    assert is_battle_env('connect_four') and is_battle_env(name) and not is_battle_env('cartpole')
    assert not is_battle_env('no_such_env')
    with pytest.raises(EnvError, match="'cartpole' is not a battle env"):
        make_battle_env(dict(type='cartpole'), 2, 0)


def test_battle_env_sections_compile_with_defaults_and_checks():
    cfg = compile_config(dict(env=dict(type='connect_four', rows=5, collector_env_num=4)), save=False)
    assert cfg.env.rows == 5 and cfg.env.cols == 7 and cfg.env.win_length == 4
    assert cfg.env.collector_env_num == 4 and cfg.env.evaluator_env_num == 8 and cfg.env.stop_value is None
    assert cfg.env.manager.type == 'base'
    for name in ('tictactoe', 'zero_sum_2x2', 'prisoners_dilemma', 'rock_paper_scissors', 'pong_duel'):
        assert compile_config(dict(env=dict(type=name)), save=False).env.n_evaluator_episodes == 8
    with pytest.raises(ConfigError, match="Did you mean 'rows'"):
        compile_config(dict(env=dict(type='connect_four', row=5)), save=False)
    with pytest.raises(ConfigError, match='"env.rows", "env.cols", "env.win_length".*at most 64'):
        compile_config(dict(env=dict(type='connect_four', rows=9, cols=7)), save=False)
    with pytest.raises(ConfigError, match='"env.points_to_win"'):
        compile_config(dict(env=dict(type='pong_duel', points_to_win=0)), save=False)
