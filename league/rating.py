"""Player ratings from game results: Elo and TrueSkill (through the ``trueskill`` package).

Both share one interface, usable by an evaluator on its own or through a league::

    elo = EloRating(k=32)
    elo.add_player('random_bot', rating=0.0, fixed=True)   # an anchor of the scale
    elo.update('main_player_0', 'random_bot', 'win')       # result from the first player's view

A *fixed* player (a reference bot) takes part in updates, moving its opponents, but its own
rating never changes, so the scale stays pinned to it. With ``auto_add=True`` (the default)
unknown ids join at the initial rating; a league turns that off so that typos raise.
:class:`LeagueRatings` bundles the enabled systems with a per-player history for the plots.
"""
from __future__ import annotations

import math
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from sparring.league.errors import LeagueError, unknown_player
from sparring.league.outcome import DRAW, LOSS, SCORE, outcome_code


class RatingSystem:
    """Ratings by player id, with fixed (anchor) players; subclasses define one update rule."""

    name = 'rating'

    def __init__(self, auto_add: bool = True) -> None:
        self.auto_add = auto_add
        self._ratings: Dict[str, object] = {}
        self._fixed: set = set()

    # subclass interface -------------------------------------------------------------------
    def initial_rating(self):
        raise NotImplementedError

    def _rate(self, rating_a, rating_b, code: int) -> Tuple[object, object]:
        """New ratings of A and B after one game whose outcome ``code`` is A's view."""
        raise NotImplementedError

    def _encode(self, rating) -> object:  # to a JSON-friendly value
        return rating

    def _decode(self, value) -> object:
        return value

    # shared -------------------------------------------------------------------------------
    def add_player(self, player_id: str, rating=None, fixed: bool = False) -> None:
        """Add a player at ``rating`` (default: the initial rating); ``fixed`` anchors it."""
        if player_id in self._ratings:
            raise LeagueError(f'{self.name}: player {player_id!r} already has a rating')
        self._ratings[player_id] = self.initial_rating() if rating is None else self._coerce(rating)
        if fixed:
            self._fixed.add(player_id)

    def _coerce(self, rating):
        return rating

    def set_rating(self, player_id: str, rating) -> None:
        self._check(player_id)
        self._ratings[player_id] = self._coerce(rating)

    def reset(self, player_id: str) -> None:
        """Back to the initial rating (a player whose network was reset)."""
        self.set_rating(player_id, self.initial_rating())

    def is_fixed(self, player_id: str) -> bool:
        return player_id in self._fixed

    def __contains__(self, player_id) -> bool:
        return player_id in self._ratings

    def __getitem__(self, player_id: str):
        self._check(player_id)
        return self._ratings[player_id]

    def get(self, player_id: str, default=None):
        return self._ratings.get(player_id, default)

    @property
    def player_ids(self) -> List[str]:
        return list(self._ratings)

    def _check(self, player_id: str) -> None:
        if player_id not in self._ratings:
            if not self.auto_add:
                raise unknown_player(player_id, self._ratings, self.name)
            if not isinstance(player_id, str) or not player_id:
                raise LeagueError(f'{self.name}: a player id must be a non-empty string, got {player_id!r}')
            self._ratings[player_id] = self.initial_rating()

    def update(self, player_a: str, player_b: str, result) -> Tuple[object, object]:
        """Rate one game; ``result`` is 'win', 'draw' or 'loss' from ``player_a``'s view.

        Returns the new ratings of A and B.
        """
        code = outcome_code(result, where=f'{self.name}.update result')
        if player_a == player_b:
            raise LeagueError(f'{self.name}.update: a player cannot be rated against itself ({player_a!r})')
        self._check(player_a)
        self._check(player_b)
        return self.update_code(player_a, player_b, code)

    def update_code(self, player_a: str, player_b: str, code: int) -> Tuple[object, object]:
        """Fast path for :meth:`update`: known, distinct ids and an outcome code."""
        ratings = self._ratings
        new_a, new_b = self._rate(ratings[player_a], ratings[player_b], code)
        if player_a not in self._fixed:
            ratings[player_a] = new_a
        if player_b not in self._fixed:
            ratings[player_b] = new_b
        return ratings[player_a], ratings[player_b]

    def state_dict(self) -> dict:
        return dict(ratings={k: self._encode(v) for k, v in self._ratings.items()}, fixed=sorted(self._fixed))

    def load_state_dict(self, state: dict) -> None:
        try:
            ratings = {str(k): self._decode(v) for k, v in state['ratings'].items()}
            fixed = set(state['fixed'])
        except (KeyError, TypeError, ValueError) as err:
            raise LeagueError(f'{self.name} state: malformed ({err})') from None
        if not fixed <= set(ratings):
            raise LeagueError(f'{self.name} state: fixed players without a rating: {sorted(fixed - set(ratings))}')
        self._ratings, self._fixed = ratings, fixed


class EloRating(RatingSystem):
    """Elo: ``R_a += k * (S_a - E_a)`` with ``E_a = 1 / (1 + 10^((R_b - R_a) / scale))``."""

    name = 'elo'

    def __init__(self, k: float = 32.0, initial: float = 1200.0, scale: float = 400.0, auto_add: bool = True) -> None:
        for key, value in (('k', k), ('initial', initial), ('scale', scale)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise LeagueError(f'elo {key}: expected a finite number, got {value!r}')
        if k <= 0 or scale <= 0:
            raise LeagueError(f'elo: expected k > 0 and scale > 0, got k={k!r}, scale={scale!r}')
        super().__init__(auto_add)
        self.k, self.initial, self.scale = float(k), float(initial), float(scale)

    def initial_rating(self) -> float:
        return self.initial

    def _coerce(self, rating) -> float:
        if isinstance(rating, bool) or not isinstance(rating, (int, float)) or not math.isfinite(rating):
            raise LeagueError(f'elo: a rating must be a finite number, got {rating!r}')
        return float(rating)

    def expected_score(self, player_a: str, player_b: str) -> float:
        """A's expected score (win probability, draws counting half) against B."""
        return self._expected(self[player_a], self[player_b])

    def _expected(self, rating_a: float, rating_b: float) -> float:
        return 1.0 / (1.0 + 10.0 ** ((rating_b - rating_a) / self.scale))

    def _rate(self, rating_a: float, rating_b: float, code: int) -> Tuple[float, float]:
        delta = self.k * (SCORE[code] - self._expected(rating_a, rating_b))
        return rating_a + delta, rating_b - delta


class TrueSkillRating(RatingSystem):
    """TrueSkill through the ``trueskill`` package, with every parameter passed by keyword."""

    name = 'trueskill'

    def __init__(self, mu: float = 25.0, sigma: float = 25.0 / 3, beta: float = 25.0 / 6, tau: float = 25.0 / 300,
                 draw_probability: float = 0.1, auto_add: bool = True) -> None:
        trueskill = import_trueskill()
        if not 0.0 <= draw_probability < 1.0:
            raise LeagueError(f'trueskill draw_probability: expected a number in [0, 1), got {draw_probability!r}')
        if sigma <= 0 or beta <= 0 or tau < 0:
            raise LeagueError(f'trueskill: expected sigma > 0, beta > 0, tau >= 0, got '
                              f'sigma={sigma!r}, beta={beta!r}, tau={tau!r}')
        super().__init__(auto_add)
        self.mu, self.sigma, self.beta, self.tau = float(mu), float(sigma), float(beta), float(tau)
        self.draw_probability = float(draw_probability)
        # Keywords, not positions: DI-engine passed these by position into the wrong slots.
        self.env = trueskill.TrueSkill(mu=self.mu, sigma=self.sigma, beta=self.beta, tau=self.tau,
                                       draw_probability=self.draw_probability)
        self._rating_type = trueskill.Rating
        self._rate_1vs1 = trueskill.rate_1vs1

    def initial_rating(self):
        return self.env.create_rating()

    def _coerce(self, rating):
        if isinstance(rating, self._rating_type):
            return rating
        if isinstance(rating, (tuple, list)) and len(rating) == 2:
            return self.env.create_rating(mu=float(rating[0]), sigma=float(rating[1]))
        raise LeagueError(f'trueskill: a rating must be a trueskill.Rating or (mu, sigma), got {rating!r}')

    def _rate(self, rating_a, rating_b, code: int):
        if code == LOSS:
            new_b, new_a = self._rate_1vs1(rating_b, rating_a, env=self.env)
        else:
            new_a, new_b = self._rate_1vs1(rating_a, rating_b, drawn=code == DRAW, env=self.env)
        return new_a, new_b

    def update_ranking(self, player_ids: Sequence[str], ranks: Sequence[int],
                       teams: Optional[Sequence[int]] = None) -> None:
        """Rate one game of several seats natively: distinct known ``player_ids`` finished at ``ranks`` (0 the
        best, equal a tie); ``teams`` (a team index per player, None: each for itself) groups them, a team at
        its members' rank. Fixed players move the others but keep their ratings."""
        for player_id in player_ids:
            self._check(player_id)
        labels = list(range(len(player_ids))) if teams is None else [int(t) for t in teams]
        order = sorted(set(labels))
        if len(order) < 2:
            return
        groups = [{pid: self._ratings[pid] for pid, label in zip(player_ids, labels) if label == team}
                  for team in order]
        group_ranks = [int(ranks[labels.index(team)]) for team in order]
        for group in self.env.rate(groups, ranks=group_ranks):
            for player_id, rating in group.items():
                if player_id not in self._fixed:
                    self._ratings[player_id] = rating

    def exposure(self, player_id: str) -> float:
        """A conservative skill estimate, ``mu - 3 sigma`` for the default parameters."""
        return float(self.env.expose(self[player_id]))

    def _encode(self, rating):
        return [float(rating.mu), float(rating.sigma)]

    def _decode(self, value):
        return self._coerce(value)


def import_trueskill():
    """The ``trueskill`` module, or an ImportError saying how to install it."""
    try:
        import trueskill
    except ImportError as err:
        raise ImportError('TrueSkill ratings need the "trueskill" package: pip install sparring[league] '
                          '(or pip install trueskill)') from err
    return trueskill


class LeagueRatings:
    """The league's enabled rating systems, updated together, plus each player's history.

    ``history[player_id]`` is a list of ``[step, elo, trueskill_mu, trueskill_sigma]`` points
    (``None`` for a disabled system), recorded when an active player reports its training step,
    at most once per ``history_interval`` steps. A curve keeps at most ``history_points``
    points: when full, every other point is dropped and the spacing of new points doubles, so
    memory stays bounded over any run length while the curve still spans the whole run.
    """

    def __init__(self, elo: Optional[EloRating] = None, trueskill: Optional[TrueSkillRating] = None,
                 history_interval: int = 0, history_points: int = 1000) -> None:
        if history_points < 2:
            raise LeagueError(f'ratings history_points: expected at least 2, got {history_points!r}')
        self.elo, self.trueskill = elo, trueskill
        self.systems: List[RatingSystem] = [s for s in (elo, trueskill) if s is not None]
        self.history_interval = history_interval
        self.history_points = history_points
        self.history: Dict[str, List[list]] = {}
        self._spacing: Dict[str, float] = {}  # per player: the minimum steps between two points

    @classmethod
    def from_config(cls, cfg: dict) -> 'LeagueRatings':
        """From a league's ``rating`` section (see ``BaseLeague.default_config``)."""
        elo_cfg, ts_cfg = cfg['elo'], cfg['trueskill']
        elo = EloRating(k=elo_cfg['k'], initial=elo_cfg['initial'], scale=elo_cfg['scale'], auto_add=False) \
            if elo_cfg['enabled'] else None
        trueskill = TrueSkillRating(mu=ts_cfg['mu'], sigma=ts_cfg['sigma'], beta=ts_cfg['beta'], tau=ts_cfg['tau'],
                                    draw_probability=ts_cfg['draw_probability'], auto_add=False) \
            if ts_cfg['enabled'] else None
        return cls(elo, trueskill, history_interval=cfg['history_interval'], history_points=cfg['history_points'])

    def add_player(self, player_id: str, like: Optional[str] = None, fixed: bool = False,
                   elo: Optional[float] = None, trueskill: Optional[Sequence[float]] = None) -> None:
        """Add a player; ``like`` copies another player's ratings (a snapshot starts as its parent)."""
        for system, given in ((self.elo, elo), (self.trueskill, trueskill)):
            if system is not None:
                start = given if given is not None else (system[like] if like is not None else None)
                system.add_player(player_id, rating=start, fixed=fixed)

    def update_codes(self, player_a: str, player_b: str, codes: Iterable[int]) -> None:
        """Rate games of two known, distinct players in order; codes from A's view."""
        for system in self.systems:
            for code in codes:
                system.update_code(player_a, player_b, code)

    def update_rankings(self, pairs: Dict[Tuple[str, str], List[int]], rated_ids: Sequence[str],
                        ranks: np.ndarray, teams: Optional[np.ndarray] = None) -> None:
        """Rate games of several seats (:mod:`sparring.league.multiseat`): Elo by their pairwise games ``pairs``
        (``{(a, b): codes from a's view}``), TrueSkill by each ranking of ``rated_ids`` (distinct players, with
        their ``teams``) in ``ranks``."""
        if self.elo is not None:
            for (player_a, player_b), codes in pairs.items():
                for code in codes:
                    self.elo.update_code(player_a, player_b, code)
        if self.trueskill is not None:
            for ranking in ranks:
                self.trueskill.update_ranking(rated_ids, ranking.tolist(), None if teams is None else teams.tolist())

    def update(self, player_a: str, player_b: str, result) -> None:
        """Rate one game in every enabled system; ``result`` from ``player_a``'s view."""
        code = outcome_code(result, where='ratings.update result')
        for system in self.systems:
            if player_a not in system or player_b not in system:
                raise unknown_player(player_b if player_a in system else player_a, system.player_ids, system.name)
        if player_a == player_b:
            raise LeagueError(f'ratings.update: a player cannot be rated against itself ({player_a!r})')
        self.update_codes(player_a, player_b, (code,))

    def reset(self, player_id: str) -> None:
        for system in self.systems:
            system.reset(player_id)

    def summary(self, player_id: str) -> dict:
        """``elo``, ``trueskill_mu``, ``trueskill_sigma`` and ``trueskill_exposure`` (None if disabled)."""
        out: Dict[str, Optional[float]] = dict(elo=None, trueskill_mu=None, trueskill_sigma=None,
                                               trueskill_exposure=None)
        if self.elo is not None:
            out['elo'] = self.elo[player_id]
        if self.trueskill is not None:
            rating = self.trueskill[player_id]
            out.update(trueskill_mu=float(rating.mu), trueskill_sigma=float(rating.sigma),
                       trueskill_exposure=self.trueskill.exposure(player_id))
        return out

    def record_history(self, player_id: str, step: int) -> None:
        points = self.history.setdefault(player_id, [])
        spacing = self._spacing.get(player_id, self.history_interval)
        if points and step - points[-1][0] < spacing:
            return
        s = self.summary(player_id)
        points.append([int(step), s['elo'], s['trueskill_mu'], s['trueskill_sigma']])
        if len(points) > self.history_points:
            points[:] = points[::2]
            self._spacing[player_id] = max(2 * spacing, (points[-1][0] - points[0][0]) / len(points))

    def state_dict(self) -> dict:
        return dict(elo=None if self.elo is None else self.elo.state_dict(),
                    trueskill=None if self.trueskill is None else self.trueskill.state_dict(),
                    history={k: [list(p) for p in v] for k, v in self.history.items()},
                    history_spacing=dict(self._spacing))

    def load_state_dict(self, state: dict) -> None:
        for name in ('elo', 'trueskill'):
            system, saved = getattr(self, name), state[name]
            if (system is None) != (saved is None):
                raise LeagueError(f'ratings state: {name} is {"enabled" if saved is not None else "disabled"} '
                                  f'in the saved league but {"enabled" if system is not None else "disabled"} '
                                  'in this one; use the same rating config')
            if system is not None:
                system.load_state_dict(saved)
        self.history = {str(k): [list(p) for p in v] for k, v in state['history'].items()}
        self._spacing = {str(k): float(v) for k, v in state['history_spacing'].items()}
