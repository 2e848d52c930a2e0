"""The shared payoff: decayed win / draw / loss counts for every pair of players that met.

``BattleSharedPayoff`` stores the counts in numpy arrays. Only players that have been the home
side of a recorded game own a *row* (in a league: the few active players, plus reference bots if
an evaluator records them as home); every player owns a *column*. A row holds the complete
record of its owner against every column, and a game between two row owners is written into
both rows, so reading one home player's win rates against any list of opponents is a single
vectorised gather, and memory grows with ``rows x players``, not ``players^2``. Arrays grow by
doubling.

Decay is per pair, as in DI-engine: before each game of a pair is added, that pair's counts are
multiplied by ``decay``, so old games of the pair fade. That is O(1) per game and never copies a
record. A pair's win rate is ``(wins + draws / 2) / games``; with fewer than
``min_win_rate_games`` (decayed) games it is reported as 0.5, "unknown".

All public methods hold one lock, so the payoff can be shared between threads.
"""
from __future__ import annotations

import threading
from typing import Dict, Iterable, List, Sequence, Tuple, Union

import numpy as np

from sparring.league.errors import LeagueError, unknown_player
from sparring.league.outcome import DRAW, REVERSED_CODE, WIN, parse_outcomes
from sparring.league.text_table import format_table


class BattleRecordDict(dict):
    """One pair's counts, ``wins``, ``draws``, ``losses`` and ``games``, from the home side."""

    KEYS = ('wins', 'draws', 'losses', 'games')

    def __init__(self, wins: float = 0.0, draws: float = 0.0, losses: float = 0.0) -> None:
        super().__init__(wins=float(wins), draws=float(draws), losses=float(losses),
                         games=float(wins) + float(draws) + float(losses))

    def __mul__(self, factor: float) -> 'BattleRecordDict':
        """The record decayed by ``factor`` (a new record; this one is unchanged)."""
        return BattleRecordDict(self['wins'] * factor, self['draws'] * factor, self['losses'] * factor)

    __rmul__ = __mul__

    def reversed(self) -> 'BattleRecordDict':
        """The same games seen from the away side."""
        return BattleRecordDict(self['losses'], self['draws'], self['wins'])

    def win_rate(self, min_games: float = 0.0) -> float:
        games = self['games']
        if games <= 0.0 or games < min_games:
            return 0.5
        return (self['wins'] + 0.5 * self['draws']) / games


class BattleSharedPayoff:
    """Decayed pairwise results of all players of a league; see the module docstring."""

    def __init__(self, decay: float = 0.99, min_win_rate_games: float = 8, initial_capacity: int = 64) -> None:
        if isinstance(decay, bool) or not isinstance(decay, (int, float)) or not 0.0 < decay <= 1.0:
            raise LeagueError(f'payoff decay: expected a number in (0, 1], got {decay!r}')
        if isinstance(min_win_rate_games, bool) or not isinstance(min_win_rate_games, (int, float)) \
                or min_win_rate_games < 0:
            raise LeagueError(f'payoff min_win_rate_games: expected a number >= 0, got {min_win_rate_games!r}')
        self.decay = float(decay)
        self.min_win_rate_games = float(min_win_rate_games)
        self._lock = threading.Lock()
        self._ids: List[str] = []
        self._index: Dict[str, int] = {}
        self._row_owner: List[int] = []  # row -> player index
        self._row_of: List[int] = []  # player index -> row, -1 if none (a list: fast scalar reads)
        capacity = max(1, int(initial_capacity))
        self._row_of_array = np.full(capacity, -1, dtype=np.int64)  # the same, for vectorised reads
        self._wins = np.zeros((4, capacity))
        self._draws = np.zeros((4, capacity))
        self._losses = np.zeros((4, capacity))
        self._totals: List[List[int]] = []  # player index -> undecayed [wins, draws, losses]

    # ----------------------------------------------------------------------------- players
    def add_player(self, player_id: str) -> int:
        """Give ``player_id`` a column; returns its index."""
        if not isinstance(player_id, str) or not player_id:
            raise LeagueError(f'payoff: a player id must be a non-empty string, got {player_id!r}')
        with self._lock:
            if player_id in self._index:
                raise LeagueError(f'payoff: player {player_id!r} is already registered')
            index = len(self._ids)
            if index >= self._wins.shape[1]:
                self._grow_columns(2 * self._wins.shape[1])
            self._ids.append(player_id)
            self._index[player_id] = index
            self._row_of.append(-1)
            self._totals.append([0, 0, 0])
            return index

    def index_of(self, player_id: str) -> int:
        try:
            return self._index[player_id]
        except (KeyError, TypeError):
            raise unknown_player(player_id, self._ids, 'payoff') from None

    @property
    def player_ids(self) -> Tuple[str, ...]:
        return tuple(self._ids)

    def __contains__(self, player_id) -> bool:
        return player_id in self._index

    def __len__(self) -> int:
        return len(self._ids)

    # ----------------------------------------------------------------------------- updates
    def record(self, home_id: str, away_id: str, outcomes: Sequence[str]) -> None:
        """Add games of ``home_id`` against ``away_id``; ``outcomes`` from the home side, in order."""
        codes = parse_outcomes(outcomes, where='payoff.record outcomes')
        self.record_codes(self.index_of(home_id), self.index_of(away_id), codes)

    def record_codes(self, home: int, away: int, codes: Sequence[int]) -> None:
        """Fast path for :meth:`record` with player indices and outcome codes (already checked)."""
        if home == away:
            raise LeagueError(f'payoff: cannot record {self._ids[home]!r} against itself; '
                              'self-play games carry no information about relative strength')
        with self._lock:
            row = self._row_of[home]
            if row < 0:
                row = self._add_row(home)
            wins, draws, losses = self._wins, self._draws, self._losses
            w, d, l = wins.item(row, away), draws.item(row, away), losses.item(row, away)
            decay = self.decay
            totals, away_totals = self._totals[home], self._totals[away]
            for code in codes:
                w *= decay
                d *= decay
                l *= decay
                if code == WIN:
                    w += 1.0
                elif code == DRAW:
                    d += 1.0
                else:
                    l += 1.0
                totals[code] += 1
                away_totals[REVERSED_CODE[code]] += 1  # the away side's view of the same game
            wins[row, away] = w
            draws[row, away] = d
            losses[row, away] = l
            away_row = self._row_of[away]
            if away_row >= 0:  # the away side's row holds the same record, reversed
                wins[away_row, home] = l
                draws[away_row, home] = d
                losses[away_row, home] = w

    def _add_row(self, player: int) -> int:
        """Give ``player`` a row, filled from the rows of everyone it already played."""
        row = len(self._row_owner)
        if row >= self._wins.shape[0]:
            self._grow_rows(2 * self._wins.shape[0])
        if self._row_owner:
            # Before now, every game of this player was written in its opponent's row.
            owners = np.asarray(self._row_owner)
            rows = np.arange(len(owners))
            self._wins[row, owners] = self._losses[rows, player]
            self._draws[row, owners] = self._draws[rows, player]
            self._losses[row, owners] = self._wins[rows, player]
        self._row_owner.append(player)
        self._row_of[player] = row
        self._row_of_array[player] = row
        return row

    def _grow_rows(self, capacity: int) -> None:
        for name in ('_wins', '_draws', '_losses'):
            old = getattr(self, name)
            new = np.zeros((capacity, old.shape[1]))
            new[:old.shape[0]] = old
            setattr(self, name, new)

    def _grow_columns(self, capacity: int) -> None:
        for name in ('_wins', '_draws', '_losses'):
            old = getattr(self, name)
            new = np.zeros((old.shape[0], capacity))
            new[:, :old.shape[1]] = old
            setattr(self, name, new)
        row_of = np.full(capacity, -1, dtype=np.int64)
        row_of[:len(self._row_of_array)] = self._row_of_array
        self._row_of_array = row_of

    # ----------------------------------------------------------------------------- reads
    def _pair_counts(self, home: int, away: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Decayed (wins, draws, losses) of ``home`` against each of ``away`` (lock held)."""
        row = self._row_of[home]
        if row >= 0:
            return self._wins[row, away], self._draws[row, away], self._losses[row, away]
        # A player without a row: its games live in its opponents' rows, seen from their side.
        rows = self._row_of_array[away]
        has_row = rows >= 0
        w, d, l = np.zeros(len(away)), np.zeros(len(away)), np.zeros(len(away))
        w[has_row] = self._losses[rows[has_row], home]
        d[has_row] = self._draws[rows[has_row], home]
        l[has_row] = self._wins[rows[has_row], home]
        return w, d, l

    def _rates(self, w: np.ndarray, d: np.ndarray, l: np.ndarray) -> np.ndarray:
        games = w + d + l
        # Below the minimum (or with no games at all) the rate is unknown: 0.5.
        known = games >= max(self.min_win_rate_games, 1e-300)
        return np.where(known, (w + 0.5 * d) / np.where(known, games, 1.0), 0.5)

    def win_rates_by_index(self, home: int, away: Union[Sequence[int], np.ndarray]) -> np.ndarray:
        """Win rates of player index ``home`` against each index in ``away`` (fast path)."""
        away = np.asarray(away, dtype=np.int64)
        with self._lock:
            return self._rates(*self._pair_counts(home, away))

    def win_rates(self, home_id: str, away_ids: Iterable[str]) -> np.ndarray:
        """Win rates of ``home_id`` against each of ``away_ids``, as a numpy array."""
        home = self.index_of(home_id)
        return self.win_rates_by_index(home, [self.index_of(a) for a in away_ids])

    def win_rate(self, home_id: str, away_id: str) -> float:
        return float(self.win_rates(home_id, [away_id])[0])

    def __getitem__(self, key) -> Union[float, np.ndarray]:
        """``payoff[home, away]`` is a win rate; ``payoff[home, [a, b]]`` an array of them."""
        if not (isinstance(key, tuple) and len(key) == 2):
            raise LeagueError(f'payoff[...]: expected payoff[home_id, away_id or list of ids], got {key!r}')
        home, away = key
        if isinstance(away, str):
            return self.win_rate(home, away)
        return self.win_rates(home, away)

    def get_record(self, home_id: str, away_id: str) -> BattleRecordDict:
        """The decayed record of ``home_id`` against ``away_id``."""
        home, away = self.index_of(home_id), self.index_of(away_id)
        with self._lock:
            w, d, l = self._pair_counts(home, np.asarray([away]))
        return BattleRecordDict(w[0], d[0], l[0])

    def totals(self, player_id: str) -> BattleRecordDict:
        """Undecayed counts of all games ``player_id`` played against other players."""
        index = self.index_of(player_id)
        with self._lock:
            return BattleRecordDict(*self._totals[index])

    def matrix(self, home_ids: Sequence[str], away_ids: Sequence[str]) -> Tuple[np.ndarray, np.ndarray]:
        """(win rates, decayed games) of each home against each away, shaped [homes, aways]."""
        homes = [self.index_of(h) for h in home_ids]
        aways = np.asarray([self.index_of(a) for a in away_ids], dtype=np.int64)
        rates = np.empty((len(homes), len(aways)))
        games = np.empty((len(homes), len(aways)))
        with self._lock:
            for i, home in enumerate(homes):
                w, d, l = self._pair_counts(home, aways)
                rates[i], games[i] = self._rates(w, d, l), w + d + l
        return rates, games

    def played_pairs(self) -> List[Tuple[str, str, BattleRecordDict]]:
        """Every pair that has games, once, from the side of the player registered first."""
        pairs = []
        with self._lock:
            for row, owner in enumerate(self._row_owner):
                games = self._wins[row] + self._draws[row] + self._losses[row]
                for nonzero in np.flatnonzero(games[:len(self._ids)] > 0.0):
                    away = int(nonzero)
                    if self._row_of[away] >= 0 and away < owner:
                        continue  # listed from the other row
                    record = BattleRecordDict(self._wins[row, away], self._draws[row, away],
                                              self._losses[row, away])
                    home_id, away_id = self._ids[owner], self._ids[away]
                    if away < owner:
                        home_id, away_id, record = away_id, home_id, record.reversed()
                    pairs.append((home_id, away_id, record))
        pairs.sort(key=lambda p: (self._index[p[0]], self._index[p[1]]))
        return pairs

    # ----------------------------------------------------------------------------- display
    def table(self, max_rows: int = 50) -> str:
        """One line per pair that has games: decayed counts and the win rate."""
        pairs = self.played_pairs()
        rows = [(h, a, rec['games'], rec['wins'], rec['draws'], rec['losses'],
                 rec.win_rate(self.min_win_rate_games)) for h, a, rec in pairs[:max_rows]]
        text = format_table(('home', 'away', 'games', 'wins', 'draws', 'losses', 'win rate'), rows,
                            right_align_from=2)
        if len(pairs) > max_rows:
            text += f'\n... {len(pairs) - max_rows} more pairs'
        header = (f'BattleSharedPayoff: {len(self._ids)} players, {len(pairs)} pairs with games, '
                  f'decay={self.decay}, min_win_rate_games={self.min_win_rate_games:g}')
        return header + '\n' + text

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return (f'BattleSharedPayoff(players={len(self._ids)}, rows={len(self._row_owner)}, '
                f'decay={self.decay}, min_win_rate_games={self.min_win_rate_games:g})')

    # ----------------------------------------------------------------------------- state
    def state_dict(self) -> dict:
        with self._lock:
            n, rows = len(self._ids), len(self._row_owner)
            return dict(
                decay=self.decay,
                min_win_rate_games=self.min_win_rate_games,
                player_ids=list(self._ids),
                row_owners=list(self._row_owner),
                wins=self._wins[:rows, :n].copy(),
                draws=self._draws[:rows, :n].copy(),
                losses=self._losses[:rows, :n].copy(),
                totals=np.asarray(self._totals, dtype=np.int64).reshape(n, 3),
            )

    def load_state_dict(self, state: dict) -> None:
        try:
            ids = [str(i) for i in state['player_ids']]
            owners = [int(o) for o in state['row_owners']]
            arrays = [np.asarray(state[k], dtype=np.float64) for k in ('wins', 'draws', 'losses')]
            totals = np.asarray(state['totals'], dtype=np.int64)
            decay, min_games = state['decay'], state['min_win_rate_games']
        except KeyError as err:
            raise LeagueError(f'payoff state: missing key {err.args[0]!r}') from None
        n, rows = len(ids), len(owners)
        for name, array in zip(('wins', 'draws', 'losses'), arrays):
            if array.shape != (rows, n):
                raise LeagueError(f'payoff state: {name} has shape {array.shape}, expected ({rows}, {n})')
        if totals.shape != (n, 3):
            raise LeagueError(f'payoff state: totals has shape {totals.shape}, expected ({n}, 3)')
        if len(set(ids)) != n or any(not 0 <= o < n for o in owners) or len(set(owners)) != rows:
            raise LeagueError('payoff state: duplicate player ids or invalid row owners')
        restored = BattleSharedPayoff(decay, min_games, initial_capacity=max(n, 1))
        restored._grow_rows(max(4, rows))
        for i, player_id in enumerate(ids):
            restored._ids.append(player_id)
            restored._index[player_id] = i
            restored._row_of.append(-1)
            restored._totals.append([int(v) for v in totals[i]])
        for row, owner in enumerate(owners):
            restored._row_owner.append(owner)
            restored._row_of[owner] = row
            restored._row_of_array[owner] = row
        restored._wins[:rows, :n], restored._draws[:rows, :n], restored._losses[:rows, :n] = arrays
        with self._lock:
            for name in ('decay', 'min_win_rate_games', '_ids', '_index', '_row_owner', '_row_of',
                         '_row_of_array', '_wins', '_draws', '_losses', '_totals'):
                setattr(self, name, getattr(restored, name))

