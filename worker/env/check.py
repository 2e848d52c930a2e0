"""``check_env``: does a battle env keep the protocol of :mod:`sparring.worker.env.battle_api`?

It plays random legal games through both forms a run uses: the single game (a :class:`BattleEnv`, or
one game of a natively vectorised env seen through :class:`SingleGameView`) and the vectorised form
training steps (several games in :class:`DictBattleVecEnv`, or the native class). The format of every
step (keys, shapes, dtypes, masks, results) is checked by :class:`DictBattleVecEnv` and
:class:`VecBattleEnv` themselves; what they raise is reported here with the step it happened at. On
top, over whole games, it checks what one step cannot show (the rules on positions and game ends are
in :mod:`.check_rules`, the replays in :mod:`.check_replay`):

* the spaces (the same for both seats, or, in a game that names each seat's role, each seat's own; every seat's
  kinds are reported, whatever they are);
* an ``action_mask`` with every observation (``Discrete`` actions); in turn-based games all False for the seat
  not to move and some True for the seat to move; in simultaneous games some True for every seat;
* observations inside the observation space (shape, bounds);
* a result at every game's end that agrees with the sign of the seat's rewards over the game (in a
  ``general_sum`` game: with the sign of the difference of the two seats' rewards), and
  rewards that sum to zero at every step where the class declares ``zero_sum = True``;
* every game ends within ``max_game_steps``;
* seeds: the same seed gives the same game (different seeds usually different ones), and in a
  turn-based game the seat to move acts, not the waiting one;
* ``render()`` gives text (else a warning: ``sparring play`` refuses such an env);
* a warning when the seat to move and the waiting seat get the same observation: the value head is
  trained on both seats' observations and learns their average there.

Each problem or warning is one line naming the step and seat, or the key.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Mapping, Optional, Sequence, Union

import numpy as np
from gymnasium import spaces

from sparring.config.registry import ENV_REGISTRY
from sparring.config.schema import ConfigError
from sparring.worker.env.battle import DictBattleVecEnv, SingleGameView, is_battle_env
from sparring.worker.env.battle_api import NUM_SEATS, RESULT_NAME
from sparring.worker.env.battle_step import check_roles
from sparring.worker.env.check_replay import compare_seeds, random_actions, who_acts
from sparring.worker.env.check_rules import Findings, PositionRules
from sparring.worker.env.errors import EnvError
from sparring.worker.env.gym_env import complete_section, import_env_modules
from sparring.worker.env.team import TeamVecBattleEnv

MAX_GAME_STEPS = 10_000  # a game longer than this is taken not to end
VEC_GAMES = 4  # games side by side in the vectorised form


@dataclass
class EnvCheckReport:
    """What :func:`check_env` found: problems fail the check, warnings do not, notes say what was played."""
    env: str
    problems: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems

    def format(self) -> str:
        verdict = 'passed' if self.passed else f'failed ({len(self.problems)} problem{"s" * (len(self.problems) != 1)})'
        lines = [f'check-env {self.env}: {verdict}']
        lines += [f'  {note}' for note in self.notes]
        lines += [f'warning: {line}' for line in self.warnings]
        lines += [f'problem: {line}' for line in self.problems]
        return '\n'.join(lines)


class _Watched:
    """A single game whose raw output is looked at before :class:`DictBattleVecEnv` converts it."""

    def __init__(self, game) -> None:
        self.game = game
        self.log: List[tuple] = []  # (call, agents whose infos lack 'action_mask', agents with another obs dtype)

    def __getattr__(self, name):
        if name == 'game':  # not set yet (a copy being built): no recursion through __getattr__
            raise AttributeError(name)
        return getattr(self.game, name)

    def reset(self, *args, **kwargs):
        out = self.game.reset(*args, **kwargs)
        self._look('reset', out, 0, 1)
        return out

    def step(self, actions):
        out = self.game.step(actions)
        self._look('step', out, 0, 4)
        return out

    def _look(self, call: str, out, obs_at: int, infos_at: int) -> None:
        if not (isinstance(out, tuple) and len(out) > infos_at and isinstance(out[infos_at], dict)):
            return  # malformed: DictBattleVecEnv names it
        observations, infos = out[obs_at], out[infos_at]
        agents = list(self.game.possible_agents)
        no_mask = [a for a in agents if not (isinstance(infos.get(a), dict) and 'action_mask' in infos[a])]
        other_dtype = [a for a in agents if isinstance(observations, dict) and isinstance(observations.get(a), np.ndarray)
                       and observations[a].dtype != self.game.observation_space(a).dtype]
        self.log.append((call, no_mask, other_dtype))


def check_env(env: Union[str, Mapping], games: int = 20, seed: int = 0, import_names: Sequence[str] = (),
              max_game_steps: int = MAX_GAME_STEPS) -> EnvCheckReport:
    """Play ``games`` random legal games of ``env`` in each form and report what breaks the protocol.

    ``env``: a registered env type (built with its default options) or an ``env`` config section.
    ``import_names``: modules that register it (a config's ``import_names``).
    """
    for name, value, low in (('games', games, 1), ('seed', seed, 0), ('max_game_steps', max_game_steps, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ConfigError(f'check_env: {name} = {value!r}; expected a whole number >= {low}')
    import_env_modules(import_names)
    section = complete_section('env', {'type': env} if isinstance(env, str) else dict(env))
    cls = ENV_REGISTRY.get(section.type)
    report = EnvCheckReport(section.type)
    if isinstance(cls, type) and issubclass(cls, TeamVecBattleEnv):
        report.problems.append(f'env type {section.type!r} seats a team of {section.team_size} agents a side '
                               f'({cls.__name__} is a TeamVecBattleEnv); check-env checks games of one agent a side')
    elif not is_battle_env(cls):
        report.problems.append(f'env type {section.type!r} ({cls.__name__}) is not a battle env; check-env checks '
                               f'two-player games (subclasses of BattleEnv or NativeVecBattleEnv); for a Gymnasium '
                               f'env use gymnasium.utils.env_checker.check_env')
    if report.problems:
        return report
    _Checker(cls, section, int(seed), int(max_game_steps), report).run(int(games))
    return report


class _Checker:
    def __init__(self, cls, section, seed: int, max_game_steps: int, report: EnvCheckReport) -> None:
        self.cls, self.section, self.seed, self.max_game_steps = cls, section, seed, max_game_steps
        self.report = report
        self.problems, self.warnings = Findings(), Findings()
        self.zero_sum = bool(getattr(cls, 'zero_sum', False))

    def run(self, games: int) -> None:
        try:
            if self._check_single_game():
                self._play('single game', self._single_form, games)
                if 'endless' in self.problems:  # every further form and replay would play to the bound again
                    self.report.notes.append('the vectorised form and the replays were not played: a game did not end')
                    return
                self._play(f'vectorised ({VEC_GAMES} games)', self._vec_form, games)
                self._check_seeds()
                self._check_who_acts()
        finally:
            self.report.problems += self.problems.lines()
            self.report.warnings += self.warnings.lines()

    # -- the two forms -------------------------------------------------------------------------
    def _single(self):
        if self.cls.is_vectorised:
            return SingleGameView(self.cls(self.section, 1, self.seed))
        return self.cls(self.section)

    def _single_form(self) -> DictBattleVecEnv:
        return DictBattleVecEnv(lambda: _Watched(self._single()), 1, self.seed,
                                label=self.cls.__name__)  # the user's class, not the wrappers around it

    def _vec_form(self):
        if self.cls.is_vectorised:
            return self.cls(self.section, VEC_GAMES, self.seed)
        return DictBattleVecEnv(lambda: _Watched(self.cls(self.section)), VEC_GAMES, self.seed, label=self.cls.__name__)

    # -- spaces and render ---------------------------------------------------------------------
    def _check_single_game(self) -> bool:
        """Spaces and render() of one game; False when nothing can be played."""
        try:
            game = self._single()
        except Exception as err:  # noqa: BLE001 -- whatever the env raises is the finding
            self.problems.add('build', f'building the env ({self.cls.__name__}): {_said(err)}')
            return False
        try:
            agents = list(getattr(game, 'possible_agents', None) or [])
            if len(agents) != NUM_SEATS:
                self.problems.add('agents', f'possible_agents is {agents!r}; expected {NUM_SEATS} agents (one per seat)')
                return False
            obs_spaces = [game.observation_space(a) for a in agents]
            act_spaces = [game.action_space(a) for a in agents]
            roles = self._roles(game)
            kind = 'turn-based' if getattr(game, 'turn_based', False) else 'simultaneous (not turn-based)'
            if roles is None:
                for what, pair in (('observation_space', obs_spaces), ('action_space', act_spaces)):
                    if pair[0] != pair[1]:
                        self.problems.add(what, f'{what}({agents[0]!r}) is {pair[0]!r} but {what}({agents[1]!r}) is '
                                                f'{pair[1]!r}; expected the same for both seats (each observes from its '
                                                f'own perspective, so one policy plays either seat), or roles on the '
                                                f'class naming each seat\'s role')
                self._check_kinds(obs_spaces[0], act_spaces[0], '')
                self.report.notes.append(f'spaces: observation {obs_spaces[0]!r}, action {act_spaces[0]!r}; {kind}')
            else:
                for agent, role, obs_space, act_space in zip(agents, roles, obs_spaces, act_spaces):
                    self._check_kinds(obs_space, act_space, f'{agent} (role {role!r}): ')
                    self.report.notes.append(f'seat {agent}, role {role!r}: observation {obs_space!r}, action '
                                             f'{act_space!r}')
                self.report.notes.append(f'roles {", ".join(roles)}; {kind}')
            self._check_render(game)
            return not self.problems.first
        finally:
            _close(game)

    def _roles(self, game):
        """The game's roles, checked (None: a symmetric game); a bad ``roles`` is a problem, and the game is then
        checked as symmetric."""
        try:
            return check_roles(getattr(game, 'roles', None), NUM_SEATS, self.cls.__name__)
        except EnvError as err:
            self.problems.add('roles', _said(err))
            return None

    def _check_kinds(self, obs_space, act, who: str) -> None:
        """One seat's spaces are of the kinds a battle env may have."""
        if not isinstance(obs_space, spaces.Box):
            self.problems.add('obs_kind', f'{who}observation_space is {obs_space!r}; expected a Box')
        if isinstance(act, spaces.Discrete) and int(act.start) != 0:
            self.problems.add('act_kind', f'{who}action_space is {act!r}; expected Discrete(n) starting at 0')
        elif not isinstance(act, (spaces.Discrete, spaces.Box)):
            self.problems.add('act_kind', f'{who}action_space is {act!r}; expected Discrete(n) or a Box')

    def _check_render(self, game) -> None:
        """Only turn-based games are played by people (``sparring play``), so only theirs must draw."""
        if not getattr(game, 'turn_based', False):
            return
        drawer = game.vec_env if isinstance(game, SingleGameView) else game
        render = getattr(drawer, 'render', None)  # not every battle env draws
        if not callable(render):
            got = f'{type(drawer).__name__} has no render() method'
        else:
            try:
                game.reset(seed=self.seed)
                text = render(0) if isinstance(game, SingleGameView) else render()
                got = '' if isinstance(text, str) and text.strip() else f'render() returned {_short(text)}'
            except Exception as err:  # noqa: BLE001 -- a failing render is a warning, not a failure
                got = f'render() raised {_said(err)}'
        if got:
            self.warnings.add('render', f'{got}; expected the position as text (a str): sparring play refuses an '
                                        f'env it cannot draw')

    # -- random games --------------------------------------------------------------------------
    def _play(self, label: str, make, games: int) -> None:
        try:
            vec = make()
        except Exception as err:  # noqa: BLE001
            self.problems.add(f'build {label}', f'{label}: building it: {_said(err)}')
            return
        try:
            self._play_games(label, vec, games)
        finally:
            _close(vec)

    def _play_games(self, label: str, vec, games: int) -> None:
        rng = np.random.default_rng(self.seed)
        B = vec.num_envs
        game_of = np.arange(B)  # each env's current game number
        next_game = B
        moves = np.zeros(B, np.int64)  # moves played in each env's current game
        totals = np.zeros((B, NUM_SEATS))
        lengths: List[int] = []
        seat_0 = {'win': 0, 'draw': 0, 'loss': 0}
        rules = PositionRules(vec, self.problems, self.warnings, self.zero_sum)

        def where(j: int, at: Optional[int] = None) -> str:
            return f'{label}, game {game_of[j]}, step {moves[j] if at is None else at}'

        try:
            step = vec.reset(seed=self.seed)
        except Exception as err:  # noqa: BLE001
            self.problems.add(f'reset {label}', f'{label}, reset(seed={self.seed}): {_said(err)}')
            return
        self._check_raw(vec, where)
        rules.positions(step, range(B), where, final=False)
        while len(lengths) < games:
            actions = random_actions(vec, step, rng)
            try:
                step = vec.step(actions)
            except Exception as err:  # noqa: BLE001 -- the wrappers' checks raise the finding
                self.problems.add(f'step {label}', f'{where(0) if B == 1 else label + f", step {moves.max()}"}: '
                                                   f'{_said(err)}')
                return
            moves += 1
            totals += step.reward
            rules.rewards(step, where)
            ended = np.flatnonzero(step.terminated | step.truncated)
            self._check_raw(vec, where)
            rules.positions(step, ended, where, final=True)
            for j in ended.tolist():
                rules.end(step, j, totals[j], where(j))
                lengths.append(int(moves[j]))
                if -1 <= int(step.result[j, 0]) <= 1:
                    seat_0[RESULT_NAME[int(step.result[j, 0])]] += 1
                game_of[j], next_game, moves[j], totals[j] = next_game, next_game + 1, 0, 0.0
            rules.positions(step, range(B), where, final=False)
            if moves.max() > self.max_game_steps:
                j = int(moves.argmax())
                self.problems.add('endless', f'{where(j)}: the game has not ended after {self.max_game_steps} steps; '
                                             f'expected every game to end (terminated by its rules, or truncated by '
                                             f'a step limit)')
                return
        self.report.notes.append(f'{label}: {len(lengths)} random games, {sum(lengths)} steps, {min(lengths)} to '
                                 f'{max(lengths)} steps a game; seat 0 won {seat_0["win"]}, drew {seat_0["draw"]}, '
                                 f'lost {seat_0["loss"]}')
        rules.seats_warning(label)

    # -- what one step shows -------------------------------------------------------------------
    def _check_raw(self, vec, where) -> None:
        """The single games' raw output since the last look (the step that ended a game, then its reset)."""
        for j, game in enumerate(getattr(vec, 'envs', [])):
            if not isinstance(game, _Watched):
                continue
            act_of = dict(zip(vec.agents, vec.action_spaces))
            obs_of = dict(zip(vec.agents, vec.observation_spaces))
            for call, no_mask, other_dtype in game.log:
                at = 0 if call == 'reset' else None
                # Box actions carry no mask (battle_api): nothing to choose among
                no_mask = [agent for agent in no_mask if isinstance(act_of[agent], spaces.Discrete)]
                for agent in no_mask:
                    n = getattr(act_of[agent], 'n', '?')
                    self.problems.add('no_mask', f"{where(j, at)}, {agent}: infos has no 'action_mask'; expected a "
                                                 f'bool array of shape ({n},) with every observation')
                for agent in other_dtype:
                    self.warnings.add('dtype', f'{where(j, at)}, {agent}: an observation of another dtype than the '
                                               f'observation space\'s {obs_of[agent].dtype} (it is converted)')
            game.log.clear()

    # -- replays ---------------------------------------------------------------------------
    def _check_seeds(self) -> None:
        try:
            problem, note = compare_seeds(self._single_form, self.seed, self.max_game_steps)
        except Exception:  # noqa: BLE001 -- the games above have reported what the env raises
            return
        if problem:
            self.problems.add('seed', problem)
        else:
            self.report.notes.append(note)

    def _check_who_acts(self) -> None:
        try:
            game = self._single()
        except Exception:  # noqa: BLE001 -- reported when the forms were built
            return
        try:
            if getattr(game, 'turn_based', False) and isinstance(game.action_space(game.possible_agents[0]),
                                                                   spaces.Discrete):
                try:
                    found = who_acts(game, self.seed)
                except Exception as err:  # noqa: BLE001 -- a malformed game the games above have named
                    if not self.problems.first:
                        self.problems.add('who acts', f'who acts: replaying positions raised {_said(err)}')
                    return
                for kind, line in found:
                    self.problems.add(kind, line)
        finally:
            _close(game)


def _said(err) -> str:
    """An exception as one line: the env's own error messages name the env, others get their type."""
    text = ' '.join(str(err).split())
    return text if isinstance(err, (EnvError, ConfigError)) else f'{type(err).__name__}: {text}'


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + '...'


def _close(env) -> None:
    try:
        env.close()
    except Exception:  # noqa: BLE001 -- closing after a failure must not hide the failure
        pass
