"""check_env and ``sparring check-env``: a well-made game passes; each way of breaking the protocol is named."""
import itertools
import os
import sys

import numpy as np
import pytest
from gymnasium import spaces

from sparring.config.registry import ENV_REGISTRY
from sparring.framework.cli import main
from sparring.worker.env.battle_api import BattleEnv, NativeVecBattleEnv, battle_env_defaults
from sparring.worker.env.check import check_env


_CLOCK = itertools.count(1000)


class _Nim(BattleEnv):
    """Nim (take 1 or 2 of up to 7 stones; the last stone wins), with switches that break it one way each."""

    turn_based = True
    zero_sum = True
    turn_feature = True
    waiting_mask = False  # give the waiting seat legal actions too
    result_key = 'result'
    winner_reward = 1.0
    seeded = True
    stones_taken = 1  # stones taken by action 0 (0: the game never ends)
    obs_value = 1.0
    render_text = True
    loser_reward = -1.0
    stale_masks = False  # make the masks before the turn passes (the masks and the game disagree on who moves)

    @classmethod
    def default_config(cls):
        return battle_env_defaults()

    def __init__(self, cfg=None):
        super().__init__(cfg)
        self.rng = np.random.default_rng(0)

    def observation_space(self, agent):
        return spaces.Box(0.0, 1.0, (9,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        if seed is not None or not self.seeded:
            # The unseeded variant ignores the seed: a new generator every game, as if from the clock.
            self.rng = np.random.default_rng(seed if self.seeded else next(_CLOCK))
        self.stones, self.mover = int(self.rng.integers(3, 8)), 0
        self.agents = list(self.possible_agents)
        return self._obs(), self._infos(False)

    def step(self, actions):
        mover = self.possible_agents[self.mover]
        self.stones -= (int(actions[mover]) + self.stones_taken) if self.stones_taken else 0
        over = self.stones <= 0
        if self.stale_masks:
            infos = self._infos(over)
        if not over:
            self.mover = 1 - self.mover
        if not self.stale_masks:
            infos = self._infos(over)
        rewards = dict.fromkeys(self.possible_agents, 0.0)
        if over:
            for agent in self.possible_agents:
                rewards[agent] = self.winner_reward if agent == mover else self.loser_reward
                infos[agent][self.result_key] = 'win' if agent == mover else 'loss'
            self.agents = []
        flags = dict.fromkeys(self.possible_agents, over)
        return self._obs(), rewards, flags, dict.fromkeys(self.possible_agents, False), infos

    def _obs(self):
        out = {}
        for seat, agent in enumerate(self.possible_agents):
            planes = np.zeros(9, np.float32)
            planes[max(self.stones, 0)] = self.obs_value
            planes[-1] = float(seat == self.mover) if self.turn_feature else 0.0
            out[agent] = planes
        return out

    def _infos(self, over):
        legal = np.arange(2) < self.stones
        return {agent: {'action_mask': legal & (seat == self.mover or self.waiting_mask) & (not over)}
                for seat, agent in enumerate(self.possible_agents)}

    def render(self):
        return f'{self.stones} stones' if self.render_text else None


def _variant(name, **switches):
    if name not in ENV_REGISTRY:
        ENV_REGISTRY.register(name)(type(name, (_Nim,), switches))
    return name


@pytest.fixture(scope='module')
def nim():
    return _variant('check_nim')


def test_a_well_made_game_passes_without_warnings(nim):
    report = check_env(nim, games=6)
    assert report.passed and not report.warnings, report.format()
    assert any(note.startswith('single game: 6 random games') for note in report.notes)
    assert any(note.startswith('vectorised (4 games): 6 random games') for note in report.notes)
    assert 'the same seed gave the same games, another seed different ones' in report.format()


def test_an_observation_without_whose_turn_it_is_warns_and_says_why():
    report = check_env(_variant('check_nim_blind', turn_feature=False), games=4)
    assert report.passed
    [warning] = report.warnings
    assert 'the seat to move and the waiting seat got the same observation' in warning
    assert 'learns their average' in warning and 'whose turn it is' in warning


@pytest.mark.parametrize('switches, expected', [
    (dict(waiting_mask=True), ('step 0: both player_0 and player_1 have legal actions in a turn-based game; expected '
                               'an all-False action_mask for the seat not to move')),
    (dict(result_key='outcome'), "infos[agent][\"result\"] = {'player_0': None, 'player_1': None}"),
    (dict(winner_reward=-1.0, loser_reward=1.0), "but the game's rewards sum to "),
    (dict(seeded=False), 'seeds: reset(seed=0) twice gave different games'),
    (dict(obs_value=2.0), 'lies outside the observation space [0, 1]'),
    (dict(loser_reward=0.0), 'do not sum to 0; expected a zero sum (the class says zero_sum = True)'),
    (dict(stale_masks=True), ('who acts, position 1: the game changed with the action of player_1, whose '
                              'action_mask is all False')),
])
def test_each_broken_rule_is_one_line_naming_the_step_or_key(switches, expected):
    name = _variant('check_nim_' + '_'.join(switches), **switches)
    report = check_env(name, games=4)
    assert not report.passed
    found = [p for p in report.problems if expected in p]
    assert found, report.format()
    assert all('\n' not in p for p in report.problems)
    assert found[0].startswith(('single game, game ', 'vectorised (4 games)', 'seeds:', 'who acts'))


def test_a_game_that_never_ends_is_stopped_at_the_bound():
    report = check_env(_variant('check_nim_endless', stones_taken=0), games=2, max_game_steps=30)
    assert any('the game has not ended after 30 steps' in p for p in report.problems), report.format()


def test_a_game_that_never_ends_is_played_to_the_bound_once_not_in_every_form():
    steps = []
    name = _variant('check_nim_endless_counted', stones_taken=0,
                    step=lambda self, actions: steps.append(1) or _Nim.step(self, actions))
    report = check_env(name, games=2, max_game_steps=30)
    assert [p for p in report.problems if 'has not ended after 30 steps' in p] and len(report.problems) == 1
    assert len(steps) == 31  # the single game's, to one past the bound; not again vectorised nor replayed
    assert 'the vectorised form and the replays were not played: a game did not end' in report.notes


@pytest.mark.parametrize('switches', [
    dict(result_key='outcome'),
    dict(observation_space=lambda self, agent: spaces.Box(0.0, 1.0, (3,), np.float32)),
    dict(action_space=lambda self, agent: spaces.Box(-1.0, 1.0, (1,), np.float32)),  # turn-based with a Box
    dict(reset=lambda self, seed=None, options=None: ({}, {})),
])
def test_problems_name_the_users_class_not_the_checkers_wrappers(switches):
    name = _variant('check_nim_named_' + '_'.join(switches), **switches)
    text = check_env(name, games=2).format()
    assert 'failed' in text and name in text
    for internal in ('DictBattleVecEnv', '_Watched', 'SingleGameView', 'Traceback'):
        assert internal not in text


def test_render_without_text_warns_but_passes():
    report = check_env(_variant('check_nim_mute', render_text=False), games=2)
    assert report.passed
    assert report.warnings == [('render() returned None; expected the position as text (a str): sparring play '
                                'refuses an env it cannot draw')]


def test_a_box_action_space_is_reported_not_crashed_on():
    name = _variant('check_nim_box', action_space=lambda self, agent: spaces.Box(-1.0, 1.0, (1,), np.float32))
    report = check_env(name, games=2)
    assert 'action Box(-1.0, 1.0, (1,), float32)' in report.notes[0]


class _BrokenVecNim(NativeVecBattleEnv):
    """Natively vectorised: both seats get legal moves, and the seat to move is not said by ``to_move``."""

    turn_based = True

    def __init__(self, cfg, num_envs, seed=None):
        super().__init__(cfg, num_envs, seed)
        self.observation_space = spaces.Box(0.0, 1.0, (2,), np.float32)
        self.action_space = spaces.Discrete(2)

    def _reset_games(self, rows):
        pass

    def _advance(self, actions):
        result = np.tile(np.array([1, -1], np.int8), (self.num_envs, 1))
        return result.astype(np.float32), np.ones(self.num_envs, bool), np.zeros(self.num_envs, bool), result

    def _observe(self, rows):
        n = len(rows)
        to_move = np.tile([True, False], (n, 1))
        return np.zeros((n, 2, 2), np.float32), np.ones((n, 2, 2), bool), to_move


def test_a_native_vectorised_env_is_checked_in_both_forms():
    if 'check_vec_nim' not in ENV_REGISTRY:
        ENV_REGISTRY.register('check_vec_nim')(_BrokenVecNim)
    report = check_env('check_vec_nim', games=2)
    text = report.format()
    assert 'to_move is [True, False] but the action masks give legal actions to [True, True]' in text
    assert 'both player_0 and player_1 have legal actions in a turn-based game' in text


def test_built_in_games_pass_and_single_agent_envs_are_refused():
    report = check_env('tictactoe', games=3)
    assert report.passed and not report.warnings, report.format()
    refused = check_env('cartpole')
    assert not refused.passed and 'is not a battle env' in refused.problems[0]


def test_the_command_exits_0_on_pass_and_2_with_the_list(nim, capsys):
    assert main(['check-env', nim, '--games', '2']) == 0
    assert capsys.readouterr().out.startswith(f'check-env {nim}: passed')
    bad = _variant('check_nim_waiting_mask', waiting_mask=True)
    assert main(['check-env', bad, '--games', '2', '--seed', '3']) == 2
    out = capsys.readouterr().out
    assert 'failed' in out.splitlines()[0] and any(line.startswith('problem: ') for line in out.splitlines())


def test_the_command_reads_a_config_file_and_its_import_names(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, 'path', list(sys.path))  # the command makes the config's folder importable
    monkeypatch.setenv('PYTHONPATH', os.environ.get('PYTHONPATH', ''))
    (tmp_path / 'my_game.py').write_text(
        'from sparring.config.registry import ENV_REGISTRY\n'
        'from sparring.dizoo.board_games.board_game_env import TicTacToeEnv\n'
        "ENV_REGISTRY.register('check_my_tictactoe')(type('MyTicTacToe', (TicTacToeEnv,), {}))\n")
    (tmp_path / 'cfg.py').write_text("config = dict(import_names=['my_game'], env=dict(type='check_my_tictactoe'))\n")
    assert main(['check-env', str(tmp_path / 'cfg.py'), '--games', '2']) == 0
    assert 'check-env check_my_tictactoe: passed' in capsys.readouterr().out


def test_the_continuous_pong_duel_passes_without_action_masks():
    report = check_env(dict(type='pong_duel', continuous=True, max_steps=60), games=2)
    assert report.passed, report.format()
    assert 'action Box(-1.0, 1.0, (1,), float32)' in report.notes[0]
