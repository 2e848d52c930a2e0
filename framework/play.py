"""``sparring play``: a person plays a turn-based two-player game against a run's trained player.

The board is drawn after every move, with the legal moves (and, for OpenSpiel games, what each
move means); an input that is not a legal move is refused and asked again; ``q`` quits; the
result is said at the end. Any registered turn-based battle env that can draw itself as text
(``render``) can be played: tic-tac-toe, connect four, every OpenSpiel two-player game, and
single games such as PettingZoo's classic ones.

Reading and writing go through two callables (``input`` and ``print`` by default), so the game
can be driven by a script or a test as well as by a terminal.
"""
from __future__ import annotations

from typing import Callable, Optional, Tuple

import numpy as np
from gymnasium import spaces

from sparring.config.schema import ConfigError
from sparring.framework.player_loader import TrainedRun
from sparring.worker.env.battle import DictBattleVecEnv, make_battle_env
from sparring.worker.env.battle_api import RESULT_CODE, RESULT_NAME
from sparring.worker.recurrent_state import is_recurrent

SEATS = ('first', 'second')
QUIT = 'q'


class _NativeTable:
    """One game of a natively vectorised env. A finished game stays on the board (the env would
    restart it at once), so the final position can be drawn."""

    def __init__(self, env) -> None:
        self.env = env
        self.viewer: Optional[int] = None  # the person's seat: a game with hidden information shows it its own view
        self.step_result = env.reset()
        env._reset_games = lambda rows: None  # from now on: keep finished games as they ended

    def observe(self):
        """Each seat's observation and mask (one array per seat: a game with roles has its own per seat), and
        who moves."""
        s = self.step_result
        seats = range(s.num_seats)
        return [s.seat_obs(k)[0] for k in seats], [s.seat_mask(k)[0] for k in seats], s.to_move[0]

    def play(self, actions: np.ndarray):
        """Both seats' actions; returns the result per seat (+1/0/-1) when the game ended, else None."""
        if self.env.roles is None:
            self.step_result = s = self.env.step(actions[None])
        else:  # one array per seat
            self.step_result = s = self.env.step([actions[k:k + 1] for k in range(len(actions))])
        return s.result[0] if (s.terminated[0] or s.truncated[0]) else None

    def board(self) -> str:
        render_seat = getattr(self.env, 'render_seat', None)
        text = self.env.render(0) if self.viewer is None or render_seat is None else render_seat(0, self.viewer)
        geometry = getattr(self.env, 'geometry', None)
        if geometry is not None:  # the line games: say how moves are numbered
            lines = text.splitlines()[:geometry.rows]
            if geometry.gravity:
                lines.append(''.join(str(c % 10) for c in range(geometry.cols)) + '   (moves: column numbers)')
            else:
                lines.append(f'(moves: cells numbered row by row, 0 at the top left to {geometry.num_actions - 1})')
            return '\n'.join(lines)
        return text

    def move_name(self, seat: int, action: int) -> Optional[str]:
        states = getattr(self.env, 'states', None)
        if states is None:
            return None
        try:
            return states[0].action_to_string(seat, int(action))
        except Exception:  # noqa: BLE001 -- a game without move names: numbers only
            return None


class _SingleGameTable:
    """One single game (the PettingZoo parallel shape) played directly, not through the vectorised loop."""

    def __init__(self, game, seed: int) -> None:
        self.game = game
        self.viewer: Optional[int] = None  # the person's seat (a single game draws the same board for both)
        self.agents = list(game.possible_agents)
        obs, infos = game.reset(seed=seed)
        self._keep(obs, infos)

    def _keep(self, obs, infos) -> None:
        # One array per seat: the seats of a game with roles observe and move differently.
        self.obs = [np.asarray(obs[a]) for a in self.agents]
        self.mask = [np.asarray(infos[a]['action_mask'], bool) for a in self.agents]

    def observe(self):
        return self.obs, self.mask, np.array([m.any() for m in self.mask])

    def play(self, actions: np.ndarray):
        obs, _, terminated, truncated, infos = self.game.step({a: int(actions[s]) for s, a in enumerate(self.agents)})
        self._keep(obs, infos)
        if any(terminated.values()) or any(truncated.values()):
            return np.array([RESULT_CODE[infos[a]['result']] for a in self.agents])
        return None

    def board(self):
        return self.game.render()

    def move_name(self, seat: int, action: int) -> Optional[str]:
        return None


def _table(cfg, seed: int):
    env = make_battle_env(cfg.env, 1, seed)
    boxes = [space for space in env.action_spaces if not isinstance(space, spaces.Discrete)]
    if boxes:
        env.close()
        raise ConfigError(f'play: env {cfg.env.type!r} has continuous actions ({boxes[0]}); play needs moves '
                          f'a person can type, one of a Discrete action space')
    if not env.turn_based or getattr(env, 'team_size', None) is not None:
        env.close()
        raise ConfigError(f'play: env {cfg.env.type!r} is not a turn-based game of one player a side; play needs '
                          f'one (tic-tac-toe, connect four, an OpenSpiel two-player game)')
    if not isinstance(env, DictBattleVecEnv) and not hasattr(env, 'render'):
        env.close()
        raise ConfigError(f'play: env {cfg.env.type!r} cannot draw its board as text (it has no render method)')
    table = _SingleGameTable(env.envs[0], seed) if isinstance(env, DictBattleVecEnv) else _NativeTable(env)
    board = table.board()
    if not isinstance(board, str) or not board.strip():
        # Refused before the game starts: a person cannot play a board they cannot see.
        env.close()
        shown = repr(board) if len(repr(board)) <= 60 else f'a {type(board).__name__}'
        raise ConfigError(f'play: env {cfg.env.type!r} cannot draw its board as text: render() returned {shown}; '
                          f'expected a str (sparring check-env checks it)')
    return table


def play_game(run_dir: str, seat: str = 'first', player: Optional[str] = None, snapshot: Optional[str] = None,
              seed: Optional[int] = None, read: Callable[[str], str] = input,
              write: Callable[[str], None] = print, trust_code: bool = False, role: Optional[str] = None) -> str:
    """One game of a person (``read`` / ``write``) against a run's player; returns 'win', 'draw' or
    'loss' from the person's side, or 'quit'. In a game whose seats have roles the person chooses a ``role`` (its
    seat) and plays a player of the other role (by default the first active one)."""
    if seat not in SEATS:
        raise ConfigError(f'play: --seat must be one of {", ".join(SEATS)}, got {seat!r}')
    run = TrainedRun(run_dir, trust_code)
    if not run.kind.is_league:
        raise ConfigError(f'play: {run_dir} trained a single agent; play needs a two-player game')
    pid, person = _opponent_and_seat(run, seat, role, player, snapshot)
    policy = run.policy(pid)
    table = _table(run.cfg, run.cfg.seed if seed is None else int(seed))
    machine = 1 - person
    table.viewer = person
    if role is not None:
        seat = f'the {role}'
    state = policy.initial_state(1)
    write(f'you play {seat} against {pid} of {run_dir}; type a move number, or {QUIT} to quit')
    while True:
        obs, mask, to_move = table.observe()
        write(table.board())
        actions = np.zeros(2, np.int64)
        if to_move[person]:
            move = _ask(table, person, np.flatnonzero(mask[person]), read, write)
            if move is None:
                write('you quit the game')
                return 'quit'
            actions[person] = move
        if to_move[machine] or is_recurrent(policy):  # a recurrent player follows every step of its game
            out = policy.act(obs[machine][None], state, deterministic=True, action_mask=mask[machine][None])
            state = out.state
            if to_move[machine]:
                actions[machine] = int(out.action[0])
                name = table.move_name(machine, actions[machine])
                write(f'{pid} plays {actions[machine]}' + (f' ({name})' if name else ''))
        result = table.play(actions)
        if result is not None:
            write(table.board())
            outcome = RESULT_NAME[int(result[person])]
            write({'win': 'you win', 'draw': 'a draw', 'loss': 'you lose'}[outcome] + f' (you played {seat})')
            return outcome


def _opponent_and_seat(run: TrainedRun, seat: str, role: Optional[str], player: Optional[str],
                       snapshot: Optional[str]) -> Tuple[str, int]:
    """The machine's player id and the person's seat: ``seat``'s, or in a game with roles ``role``'s, against a
    player of the other role (the first active one unless ``player`` or ``snapshot`` names one)."""
    roles = run.roles
    if roles is None:
        if role is not None:
            raise ConfigError(f'play: --role {role!r}: env {run.cfg.env.type!r} has no roles; choose a --seat instead')
        return run.resolve(player, snapshot), SEATS.index(seat)
    seat_roles = list(run.kind.roles or ())
    if role not in seat_roles:
        raise ConfigError(f'play: env {run.cfg.env.type!r} has seats with roles; expected --role one of '
                          f'{", ".join(seat_roles)}, got {role!r}')
    if player is None and snapshot is None:
        pid = next(p for p in run.active_ids if run.role_of(p) != role)
    else:
        pid = run.resolve(player, snapshot)
        if run.role_of(pid) == role:
            raise ConfigError(f'play: {pid!r} plays the role {role!r}, as you chose to; expected a player of another '
                              f'role ({", ".join(r for r in roles if r != role)}) or another --role')
    return pid, seat_roles.index(role)


def _ask(table, seat: int, legal: np.ndarray, read, write) -> Optional[int]:
    """The person's move: asked until it is legal; None to quit."""
    names = [table.move_name(seat, a) for a in legal]
    listed = ' '.join(f'{a}' + (f'={n}' if n else '') for a, n in zip(legal.tolist(), names))
    while True:
        try:
            text = read(f'your move ({listed}; {QUIT} quits): ').strip()
        except EOFError:
            return None
        if text.lower() in (QUIT, 'quit', 'exit'):
            return None
        try:
            move = int(text)
        except ValueError:
            write(f'{text!r} is not a move: type one of {" ".join(map(str, legal.tolist()))}')
            continue
        if move not in legal:
            write(f'{move} is not a legal move here: legal moves are {" ".join(map(str, legal.tolist()))}')
            continue
        return move
