"""The league: who plays whom, the results, snapshots and resets, ratings, and its saved state.

The training pipeline talks to a league through four calls and plain dicts:

``get_job_info(player_id=None, eval_flag=False) -> job_info``
    ``{'job_id': int, 'launch_player': str, 'player_ids': [home, away], 'branch': str,
    'eval_flag': bool, 'episode_num': int, 'players': [home_info, away_info]}``. The home
    player is the launching active player; ``branch`` is the opponent rule that chose the away
    player (``'eval'`` for an evaluation job against a reference player). Each ``*_info`` is
    ``{'player_id', 'kind' ('active' | 'historical' | 'reference'), 'param_ref', 'model',
    'step', ...}``: what a collector needs to load the two policies. ``player_id=None`` picks an
    active player uniformly.

``finish_job(job_result) -> None``
    ``{'player_ids': [home, away], 'result': ['win', 'draw', 'loss', ...]}``, outcomes from the
    home player's view in episode order (DI-engine's ``'wins'``, ``'draws'``, ``'losses'`` too);
    optionally the other keys of the job info it answers (``dict(job, result=...)``: ``job_id``,
    ``launch_player``, ``branch``, ``eval_flag``, ``episode_num``, ``players``: echoes, checked
    against ``player_ids`` where they name players, otherwise not read) and ``info`` (free-form,
    not read). The games update the payoff (both sides:
    a win for home is a loss for away), the ratings and the players' hooks. A self-play game
    (home == away) only counts toward the player's ``self_play_games``. A malformed result
    raises :class:`LeagueError` and records nothing.

``update_active_player(player_info) -> None``
    ``{'player_id': str, 'train_iteration': int}`` plus optional ``agent_steps`` (the agent steps
    the player has trained on, every agent of a team counted: ML-Agents' trainer steps, which
    ``mlagents_sp`` players count and so require), ``param_ref`` (where the player's current
    parameters are) and ``model`` (its model config, e.g. after surgery).

``judge_snapshot(player_id) -> dict``
    ``{'player_id', 'snapshot': bool, 'historical_player': info | None,
    'source_param_ref': str | None, 'reset': bool, 'reset_param_ref': str | None}``. On a
    snapshot the pipeline stores a frozen copy of the parameters at ``source_param_ref`` under
    ``historical_player['param_ref']``; on a reset it reloads the player's parameters from
    ``reset_param_ref``.

Categories (DI-engine's ``player_category``, AlphaStar's races): ``player_category=['terran', 'zerg']``
creates every kind of ``active_players`` once per category, with ids ``<type>_<category>_<i>`` (with one
category, the default, ids stay ``<type>_<i>``); snapshots keep their parent's category, and
:meth:`BaseLeague.category_payoff` gives the win rates between categories.

Games of three or more seats (``seats=S``): a job names the home player and one opponent per other seat, each
drawn by the player's branches, and a result is one ranking per episode (:mod:`sparring.league.multiseat`: the
payoff and Elo take its pairwise games, TrueSkill rates the ranking). ``seats=2``, the default, is the above.

A league is built from its config section (compiled or partial: missing keys take the
defaults), e.g. ``OneVsOneLeague(dict(active_players=dict(naive_sp=2)))``, or by name with
:func:`build_league`. ``state_dict()`` / ``load_state_dict()`` and ``save(path)`` /
``BaseLeague.load(path)`` / ``restore(path)`` carry everything that decides future choices.
Every public method holds the league's lock, so a commander may call it from several threads.
Subclasses customise ``_get_job_info``, ``_mutate_player`` and ``_update_player``.
"""
from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Mapping
from typing import Dict, List, Optional, Sequence, Type, cast

import numpy as np
from easydict import EasyDict

from sparring.config.schema import ConfigError, in_range, of_type
from sparring.config.registry import LEAGUE_REGISTRY, PLAYER_REGISTRY, RegistryError
from sparring.league.config_util import merge_section, to_easydict, to_plain
from sparring.league.meta_strategy import meta_game
from sparring.league.errors import LeagueError
from sparring.league.outcome import REVERSED_CODE
from sparring.league.payoff import BattleSharedPayoff
from sparring.league.job_protocol import (JobInfo, PlayerProgress, SnapshotVerdict, check_player_info, no_snapshot,
                                          parse_job_result, parse_ranked_job_result)
from sparring.league.multiseat import draw_opponents, first_seats, pairwise_games
from sparring.league.league_state import LeagueStateMixin
from sparring.league.player import DEFAULT_CATEGORY, ActivePlayer, HistoricalPlayer, Player, ReferencePlayer
from sparring.league.rating import LeagueRatings
from sparring.league.roster import Roster

SNAPSHOT_REF_FIELDS = dict(player_id='p_h1', parent_id='p', step=0, index=1)
CATEGORY_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]*')  # it goes into player ids and TensorBoard tags


def active_player_ids(active_players: Mapping, categories: Sequence[str]):
    """``(player id, type, category)`` of every active player a roster creates, in league order: each type's
    players in each category; ids ``<type>_<i>`` with one category, ``<type>_<category>_<i>`` with several."""
    several = len(categories) > 1
    return [(f'{name}_{category}_{i}' if several else f'{name}_{i}', name, category)
            for category in categories for name, count in active_players.items() for i in range(count)]


def check_categories(categories, path: str) -> List[str]:
    """``league.player_category`` as a list, or a ConfigError naming what was wrong."""
    if isinstance(categories, str) or not isinstance(categories, Sequence) or not categories:
        raise ConfigError(f'config key "{path}": expected a non-empty list of category names, e.g. '
                          f"['terran', 'zerg'], got {categories!r}")
    for name in categories:
        if not isinstance(name, str) or not CATEGORY_NAME.fullmatch(name):
            raise ConfigError(f'config key "{path}": category {name!r} is not a name of letters, digits, "_", "." '
                              f'or "-" (starting with a letter or digit)')
    duplicates = sorted({c for c in categories if list(categories).count(c) > 1})
    if duplicates:
        raise ConfigError(f'config key "{path}": categories {duplicates} are listed twice')
    return list(categories)


def resolve_anchors(references: List[dict], path: str) -> None:
    """Settle each reference player's ``anchor`` in place: one left at None anchors the scale when it comes first
    and no other is set True; every other None is rated. Several anchors at the same starting Elo pin players
    of different strength to one number, which skews every rating fitted against them: a warning says so."""
    explicit = any(r['anchor'] is True for r in references)
    for i, reference in enumerate(references):
        if reference['anchor'] is None:
            reference['anchor'] = i == 0 and not explicit
    anchors = [r for r in references if r['anchor']]
    starts: Dict[object, List[str]] = {}
    for reference in anchors:
        starts.setdefault(reference['elo'], []).append(reference['player_id'])
    shared = [ids for ids in starts.values() if len(ids) > 1]
    if shared:
        warnings.warn(f'{path}: {", ".join(shared[0])} are all anchors at the same Elo, so a strong and a weak bot '
                      f'count as equals and the players rated against them are skewed; set anchor=False on all but '
                      f'one (rated from the games), or give each its known elo=', stacklevel=2)


class BaseLeague(LeagueStateMixin):
    """Players, their shared payoff and ratings, and the rules that connect them."""

    # The roster used when the config leaves ``active_players`` unset: player type -> count.
    DEFAULT_ACTIVE_PLAYERS: Dict[str, int] = {}

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            seed=0,  # the league's own RNG: opponent and reset draws
            active_players=None,  # player type -> count (in each category); None = DEFAULT_ACTIVE_PLAYERS
            player_category=[DEFAULT_CATEGORY],  # the categories (AlphaStar's races): each has every active player
            # True: the categories are the roles of a game whose seats differ (each role its own spaces): a player
            # meets only the other roles' players, and each role starts from (and resets to) its own parameters,
            # init_param_ref + '_' + the role
            roles=False,
            players={},  # player type -> config over that type's default_config()
            init_param_ref='init',  # parameters new players start from and resets return to
            snapshot_param_ref='{player_id}',  # where a snapshot's frozen parameters go; fields:
            # player_id (the snapshot's), parent_id, step, index
            model={},  # model config recorded with each player
            initial_snapshots=True,  # freeze each player's initial parameters as its first snapshot
            episode_num=1,  # episodes per job, passed on in the job info
            seats=2,  # seats of a game: 3 or more draws a tuple of opponents per job and takes rankings as results
            payoff=dict(
                decay=0.99,  # every game of a pair multiplies the pair's earlier counts by this, so old games fade
                min_win_rate_games=8.0,  # below this many (decayed) games a pair's win rate reads 0.5, unknown
            ),
            rating=dict(
                elo=dict(
                    enabled=True,  # keep Elo ratings (the league table, ratings.svg, TensorBoard)
                    k=32.0,  # the step of an update: R += k * (score - expected score)
                    initial=1200.0,  # the rating a new player starts at (and a reset player returns to)
                    scale=400.0,  # a rating difference of this many points means odds of 10 to 1
                ),
                trueskill=dict(  # needs the trueskill package
                    enabled=False,  # keep TrueSkill ratings too (mu and sigma per player)
                    mu=25.0,  # a new player's mean skill
                    sigma=25.0 / 3,  # a new player's uncertainty (standard deviation of its skill)
                    beta=25.0 / 6,  # the skill difference that gives about a 76 % chance of winning
                    tau=25.0 / 300,  # uncertainty added before each game, so ratings keep following a learning player
                    draw_probability=0.1,  # the prior chance of a draw between equal players
                ),
                history_interval=0,  # training steps between two points of a rating curve
                history_points=1000,  # points kept per curve (thinned by half when full)
            ),
            reference_players=[],  # fixed opponents (evaluation; training via the reference branch): ReferencePlayer.default_config()
        )

    config_constraints = {
        'seed': in_range(0, 2 ** 32 - 1),
        'roles': of_type(bool),
        'episode_num': in_range(1, None),
        'seats': in_range(2, None),
        'payoff.decay': in_range(0.0, 1.0, open_lo=True),
        'payoff.min_win_rate_games': in_range(0.0, None),
        'rating.elo.k': in_range(0.0, None, open_lo=True),
        'rating.elo.scale': in_range(0.0, None, open_lo=True),
        'rating.trueskill.sigma': in_range(0.0, None, open_lo=True),
        'rating.trueskill.beta': in_range(0.0, None, open_lo=True),
        'rating.trueskill.tau': in_range(0.0, None),
        'rating.trueskill.draw_probability': in_range(0.0, 1.0, open_hi=True),
        'rating.history_interval': in_range(0, None),
        'rating.history_points': in_range(2, None),
    }

    # ------------------------------------------------------------------------------ config
    @classmethod
    def validate_config(cls, section: dict, path: str = 'league') -> None:
        """Check the roster and player sub-configs; fills them in place with their defaults
        (so a compiled config records every player setting)."""
        roster = section.get('active_players')
        if roster is None:
            roster = section['active_players'] = dict(cls.DEFAULT_ACTIVE_PLAYERS)
        if not isinstance(roster, Mapping) or not roster:
            raise ConfigError(f'config key "{path}.active_players": expected a dict player type -> count '
                              f'with at least one type, got {roster!r}')
        classes = {}
        for name, count in roster.items():
            classes[name] = _active_player_class(name, f'{path}.active_players')
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ConfigError(f'config key "{path}.active_players.{name}": expected a count >= 0, got {count!r}')
        if sum(roster.values()) < 1:
            raise ConfigError(f'config key "{path}.active_players": expected at least one player, got {dict(roster)}')
        section['player_category'] = categories = check_categories(section.get('player_category'),
                                                                   f'{path}.player_category')
        present = [classes[n] for n, c in roster.items() if c > 0]
        for name, player_cls in classes.items():
            for needed in player_cls.requires if roster[name] > 0 else ():
                if not any(issubclass(c, needed) for c in present):
                    raise ConfigError(f'config key "{path}.active_players": {name!r} needs at least one '
                                      f'{getattr(needed, "registry_name", needed.__name__)!r} ({needed.__name__}) player')
        players = section.get('players') or {}
        if not isinstance(players, Mapping):
            raise ConfigError(f'config key "{path}.players": expected a dict player type -> config, got {players!r}')
        for name in players:
            classes.setdefault(name, _active_player_class(name, f'{path}.players'))
        section['players'] = {name: player_cls.resolve_config(players.get(name), f'{path}.players.{name}')
                              for name, player_cls in classes.items()}
        for name, player_cfg in section['players'].items():
            if player_cfg.get('opponent_categories') == 'others' and len(categories) < 2 and roster.get(name):
                raise ConfigError(f'config key "{path}.players.{name}.opponent_categories": \'others\' needs at least '
                                  f'two categories in "{path}.player_category", got {categories}')
        try:
            section['snapshot_param_ref'].format(**SNAPSHOT_REF_FIELDS)
        except (KeyError, IndexError, ValueError) as err:
            raise ConfigError(f'config key "{path}.snapshot_param_ref": {section["snapshot_param_ref"]!r} is not a '
                              f'valid format string ({err!r}); fields: {", ".join(SNAPSHOT_REF_FIELDS)}') from None
        references = section.get('reference_players') or []
        section['reference_players'] = [ReferencePlayer.resolve_config(entry, f'{path}.reference_players.{i}')
                                        for i, entry in enumerate(references)]
        resolve_anchors(section['reference_players'], f'{path}.reference_players')
        for i, ref in enumerate(section['reference_players']):
            if ref['category'] is not None and ref['category'] not in categories:
                raise ConfigError(f'config key "{path}.reference_players.{i}.category": {ref["category"]!r} is not one '
                                  f'of the league\'s categories {categories}')
            if section.get('roles') and ref['category'] is None:
                raise ConfigError(f'config key "{path}.reference_players.{i}.category": a league of roles needs the '
                                  f'role each reference player plays, one of {categories}; got None')
        if section.get('roles') and len(categories) < 2:
            raise ConfigError(f'config key "{path}.roles": a league of roles needs two roles or more in '
                              f'"{path}.player_category", got {categories}')
        ids = [pid for pid, _, _ in active_player_ids(roster, categories)]
        ids += [r['player_id'] for r in section['reference_players']]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ConfigError(f'config key "{path}.reference_players": player ids {duplicates} are used twice')

    @classmethod
    def resolve_config(cls, cfg: Optional[dict] = None) -> EasyDict:
        """A complete, validated league section from a compiled or partial one."""
        user = dict(cfg or {})
        own = cls.__dict__.get('registry_name')
        kind = user.pop('type', own)
        if kind != own:
            raise ConfigError(f'config key "league.type": {kind!r} does not name {cls.__name__} (registered as {own!r}); '
                              f'build it with build_league(cfg) to pick the class by its type')
        merged = merge_section(cls, user, 'league')
        cls.validate_config(merged)
        merged['type'] = own
        return to_easydict(merged)

    # ------------------------------------------------------------------------------ life
    def __init__(self, cfg: Optional[dict] = None) -> None:
        self.cfg = self.resolve_config(cfg)
        self._lock = threading.RLock()
        self._reset_state()
        with self._lock:
            self._build_players()

    def _reset_state(self) -> None:
        self.rng = np.random.default_rng(self.cfg.seed)
        self.payoff = BattleSharedPayoff(self.cfg.payoff.decay, self.cfg.payoff.min_win_rate_games)
        self.ratings = LeagueRatings.from_config(self.cfg.rating)
        self.roster = Roster()
        self._job_count = 0
        self._eval_cursor: Dict[str, int] = {}
        self._meta_game_source = None
        self._meta_strategy_source = None

    def _new_active_players(self) -> List[ActivePlayer]:
        return [PLAYER_REGISTRY.get(name)(pid, self.cfg.players[name], player_type=name, model=self.cfg.model,
                                          category=category)
                for pid, name, category in active_player_ids(self.cfg.active_players, self.categories)]

    def _new_reference_players(self) -> List[ReferencePlayer]:
        return [ReferencePlayer(r.player_id, r.param_ref, r.model, category=r.get('category'))
                for r in self.cfg.reference_players]

    def _build_players(self) -> None:
        active = self._new_active_players()
        for player in active:
            self._add_player(player)
        for reference, entry in zip(self._new_reference_players(), self.cfg.reference_players):
            self._add_player(reference, fixed=entry.anchor, elo=entry.elo, trueskill=entry.trueskill)
        if self.cfg.initial_snapshots:
            for player in active:
                self._add_snapshot(player, param_ref=self.init_param_ref(player.category))

    def _add_player(self, player: Player, rate: bool = True, **rating) -> None:
        player.attach(self, self.payoff.add_player(player.player_id))  # raises on a duplicate id
        self.roster.add(player)
        if rate:
            self.ratings.add_player(player.player_id, **rating)

    def _add_snapshot(self, parent: ActivePlayer, param_ref: Optional[str] = None) -> HistoricalPlayer:
        if param_ref is None:
            param_ref = self.cfg.snapshot_param_ref.format(player_id=parent.next_snapshot_id, parent_id=parent.player_id,
                                                           step=parent.step, index=parent.snapshot_count)
        historical = parent.snapshot(param_ref)
        self._add_player(historical, like=parent.player_id)  # a snapshot starts at its parent's ratings
        parent.on_snapshot(historical)
        return historical

    def init_param_ref(self, category: str) -> str:
        """Where the parameters a player of ``category`` starts from (and resets to) are: ``init_param_ref``, or in
        a league of roles, each role's own (``init_param_ref + '_' + category``)."""
        return f'{self.cfg.init_param_ref}_{category}' if self.cfg.get('roles') else self.cfg.init_param_ref

    # ------------------------------------------------------------------------------ players
    @property
    def categories(self) -> List[str]:
        """The league's player categories, in config order (``['default']`` when it names none)."""
        return list(self.cfg.player_category)

    @property
    def active_players(self) -> List[ActivePlayer]:
        return list(self.roster.active().players)

    @property
    def historical_players(self) -> List[HistoricalPlayer]:
        return list(self.roster.historical().players)

    @property
    def reference_players(self) -> List[ReferencePlayer]:
        return list(self.roster.reference().players)

    def opponent_ages(self) -> Dict[str, int]:
        """Every player's age in snapshots, as a self-play replay forgets by it: 0 for active and reference
        players, and k for the k-th newest snapshot of its parent (the newest is 1)."""
        ages = {p.player_id: 0 for p in self.active_players + self.reference_players}
        by_parent: Dict[str, List[HistoricalPlayer]] = {}
        for snapshot in self.historical_players:
            by_parent.setdefault(snapshot.parent_id, []).append(snapshot)
        for snapshots in by_parent.values():  # in the order they were taken: the last is the newest
            for age, snapshot in enumerate(reversed(snapshots), start=1):
                ages[snapshot.player_id] = age
        return ages

    def get_player(self, player_id: str) -> Player:
        return self.roster.get(player_id)

    def _active(self, player_id: str, where: str) -> ActivePlayer:
        player = self.roster.get(player_id, where)
        if player.kind != 'active':
            raise LeagueError(f'{where}: {player_id!r} is a {player.kind} player; expected an active player '
                              f'({", ".join(p.player_id for p in self.roster.active().players)})')
        return player

    # ------------------------------------------------------------------------------ meta-game
    def set_meta_game_source(self, source) -> None:
        """Where :meth:`meta_game` comes from: ``source(player_ids) -> [n, n]`` antisymmetric matrix (e.g. an
        exact evaluation of the players' policies), or None for the shared payoff's win rates."""
        self._meta_game_source = source

    def set_meta_strategy_source(self, source) -> None:
        """Where :meth:`meta_strategy` comes from: ``source(player_ids) -> [n]`` a mixture over them, or None."""
        self._meta_strategy_source = source

    def meta_strategy(self, player_ids: Sequence[str]) -> Optional[np.ndarray]:
        """The mixture over ``player_ids`` the ``nash`` branch draws from, where a source gives it directly (an exact
        S-player meta-strategy in a game of three or more seats); None: the branch solves :meth:`meta_game` itself."""
        if self._meta_strategy_source is None:
            return None
        return np.asarray(self._meta_strategy_source(list(player_ids)), np.float64)

    def meta_game(self, player_ids: Sequence[str]) -> np.ndarray:
        """The zero-sum meta-game of ``player_ids`` (entry i, j: i's advantage against j) that the
        ``nash`` branch solves: from the configured source, else the payoff's scores minus 1/2."""
        if self._meta_game_source is None:
            return meta_game(self.payoff, player_ids)
        return np.asarray(self._meta_game_source(list(player_ids)), np.float64)

    def category_payoff(self):
        """``(categories, win rates, games)``: the payoff between categories, entry ``[i, j]`` the decayed games of
        every active and historical player of category i against every one of category j (games within one
        category count from both sides, so the diagonal's rate is 0.5), and the win rate over them (wins plus
        half the draws, by games; 0.5 with no game). Reference players belong to no category and are left out."""
        with self._lock:
            categories = self.categories
            at = {c: i for i, c in enumerate(categories)}
            score = np.zeros((len(categories), len(categories)))
            games = np.zeros_like(score)
            for home_id, away_id, record in self.payoff.played_pairs():
                home_player, away_player = self.roster.get(home_id), self.roster.get(away_id)
                if 'reference' in (home_player.kind, away_player.kind):
                    continue  # the bots, even those that play a role, are no category's population
                home, away = home_player.category, away_player.category
                i, j = at[home], at[away]
                won = record['wins'] + 0.5 * record['draws']
                score[i, j] += won
                games[i, j] += record['games']
                score[j, i] += record['games'] - won
                games[j, i] += record['games']
            rates = np.divide(score, games, out=np.full_like(score, 0.5), where=games > 0)
            return categories, rates, games

    # ------------------------------------------------------------------------------ jobs
    def get_job_info(self, player_id: Optional[str] = None, eval_flag: bool = False) -> JobInfo:
        """The next job of ``player_id`` (an active player; None: one drawn uniformly)."""
        with self._lock:
            if player_id is None:
                active = self.roster.active()
                player = active.players[min(int(self.rng.random() * len(active)), len(active) - 1)]
            else:
                player = self._active(player_id, 'get_job_info')
            job = self._get_job_info(player, bool(eval_flag))
            self._job_count += 1
            return job

    def _get_job_info(self, player: ActivePlayer, eval_flag: bool) -> JobInfo:
        if self.cfg.seats > 2:
            return self._get_multiseat_job_info(player, eval_flag)
        opponent: Player
        if eval_flag:
            opponent, branch = self._eval_opponent(player), 'eval'
        else:
            opponent, branch = player.get_opponent()
        return JobInfo(job_id=self._job_count, launch_player=player.player_id,
                       player_ids=[player.player_id, opponent.player_id], branch=branch, eval_flag=eval_flag,
                       episode_num=self.cfg.episode_num, players=[player.info(), opponent.info()])

    def _get_multiseat_job_info(self, player: ActivePlayer, eval_flag: bool) -> JobInfo:
        """A job of ``seats`` players (see :mod:`sparring.league.multiseat`): the player and a tuple of opponents,
        reference players in turn for an evaluation."""
        count = self.cfg.seats - 1
        if eval_flag:
            opponents: List[Player] = [self._eval_opponent(player) for _ in range(count)]
            branches = ['eval'] * count
        else:
            opponents, branches = draw_opponents(player, count)
        players = [player] + opponents
        return JobInfo(job_id=self._job_count, launch_player=player.player_id,
                       player_ids=[p.player_id for p in players], branch='eval' if eval_flag else '+'.join(branches),
                       eval_flag=eval_flag, episode_num=self.cfg.episode_num, players=[p.info() for p in players],
                       branches=branches)

    def _eval_opponent(self, player: ActivePlayer) -> ReferencePlayer:
        """Reference players in turn, so every evaluation covers all of them equally."""
        references = self.roster.reference()
        if not len(references):
            raise LeagueError('get_job_info(eval_flag=True): the league has no reference players; '
                              'add fixed opponents under league.reference_players')
        turn = self._eval_cursor.get(player.player_id, 0)
        self._eval_cursor[player.player_id] = turn + 1
        return references.players[turn % len(references)]

    def eval_opponents(self) -> List[dict]:
        """Infos of the reference players, for an evaluator that plays all of them."""
        return [p.info() for p in self.roster.reference().players]

    def finish_job(self, job_result: dict) -> None:
        """Record a finished job's games; see the module docstring for ``job_result`` (and
        :mod:`sparring.league.multiseat` for a league of three or more seats)."""
        with self._lock:
            if self.cfg.seats > 2:
                players, ranks, teams = parse_ranked_job_result(job_result, self.roster, self.cfg.seats)
                self._record_rankings(players, ranks, teams)
                return
            home, away, codes = self._parse_job_result(job_result)
            self._record_games(home, away, codes)

    def _record_rankings(self, players: List[Player], ranks: np.ndarray, teams: Optional[np.ndarray]) -> None:
        """Rankings of S-seat games: their pairwise games in the payoff, Elo and the players' hooks; TrueSkill
        rates each ranking (see :mod:`sparring.league.multiseat`)."""
        pairs = pairwise_games([p.index for p in players], ranks, teams)
        by_index = {p.index: p for p in players}
        for (home, away), codes in pairs.items():
            self.payoff.record_codes(home, away, codes)
            for player, opponent, seen in ((by_index[home], by_index[away], codes),
                                           (by_index[away], by_index[home], [REVERSED_CODE[c] for c in codes])):
                if player.kind == 'active':
                    cast(ActivePlayer, player).on_game_result(opponent, seen)
        for player in {p.index: p for p in players if p.kind == 'active'}.values():
            if sum(p is player for p in players) > 1:
                cast(ActivePlayer, player).self_play_games += len(ranks)
        rated = first_seats([p.player_id for p in players])
        self.ratings.update_rankings({(by_index[h].player_id, by_index[a].player_id): c for (h, a), c in pairs.items()},
                                     [players[k].player_id for k in rated], ranks[:, rated],
                                     None if teams is None else teams[rated])

    def _parse_job_result(self, job_result):
        return parse_job_result(job_result, self.roster)

    def _record_games(self, home: Player, away: Player, codes: Sequence[int]) -> None:
        if home is away:  # only an active player plays itself; no information about strength: not in payoff or ratings
            cast(ActivePlayer, home).self_play_games += len(codes)
            return
        self.payoff.record_codes(home.index, away.index, codes)
        self.ratings.update_codes(home.player_id, away.player_id, codes)
        if home.kind == 'active':
            cast(ActivePlayer, home).on_game_result(away, codes)
        if away.kind == 'active':
            cast(ActivePlayer, away).on_game_result(home, [REVERSED_CODE[c] for c in codes])

    def record_eval_result(self, player_id: str, opponent_id: str, result: Sequence[str]) -> None:
        """An evaluator's games (same effect as ``finish_job`` with those player ids)."""
        self.finish_job(dict(player_ids=[player_id, opponent_id], result=result))

    # ------------------------------------------------------------------------------ training
    def update_active_player(self, player_info: PlayerProgress) -> None:
        """A learner's progress report; see the module docstring for ``player_info``."""
        with self._lock:
            player = check_player_info(player_info, self._active)
            self._update_player(player, player_info)
            self.ratings.record_history(player.player_id, player.step)

    def _update_player(self, player: ActivePlayer, player_info: PlayerProgress) -> None:
        player.step = int(player_info['train_iteration'])
        if 'agent_steps' in player_info:
            player.agent_steps = int(player_info['agent_steps'])
        if 'param_ref' in player_info:
            player.param_ref = player_info['param_ref']
        if 'model' in player_info:
            player.model = to_plain(player_info['model'])

    def judge_snapshot(self, player_id: str) -> SnapshotVerdict:
        """Snapshot ``player_id`` if it is trained enough, then maybe reset it; see the module docstring."""
        with self._lock:
            player = self._active(player_id, 'judge_snapshot')
            outcome = no_snapshot(player_id)
            if not player.is_trained_enough():
                return outcome
            historical = self._add_snapshot(player)
            outcome['snapshot'], outcome['historical_player'] = True, historical.info()
            outcome['source_param_ref'] = player.param_ref
            reset_ref = self._mutate_player(player)
            if reset_ref is not None:
                player.reset(self.cfg.model)
                self.ratings.reset(player.player_id)
                outcome['reset'], outcome['reset_param_ref'] = True, reset_ref
            self.ratings.record_history(player.player_id, player.step)
            return outcome

    def _mutate_player(self, player: ActivePlayer) -> Optional[str]:
        """The parameters to reset ``player`` to after a snapshot, or None to keep training it."""
        return self.init_param_ref(player.category) if player.mutate(self.rng) else None

    # ------------------------------------------------------------------------------ display
    def table(self, sort_by: str = 'elo', max_rows: int = 0) -> str:
        """Players with their games, overall win rate and ratings, as text (``max_rows`` 0: all); with several
        categories, each player's category and the payoff between categories below."""
        from sparring.league.report import league_table
        with self._lock:
            return league_table(self, sort_by=sort_by, max_rows=max_rows)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return (f'{type(self).__name__}(active={len(self.roster.active())}, '
                f'historical={len(self.roster.historical())}, reference={len(self.roster.reference())})')

    def plot_payoff(self, path: str, **kwargs) -> str:
        """Win-rate heatmap of the active players against everyone, as an SVG file (league/svg_chart)."""
        from sparring.league.plots import plot_payoff
        with self._lock:
            return plot_payoff(self, path, **kwargs)

    def plot_ratings(self, path: str, **kwargs) -> str:
        """Rating curves of the active players over training steps, as an SVG file (league/svg_chart)."""
        from sparring.league.plots import plot_ratings
        with self._lock:
            return plot_ratings(self, path, **kwargs)


def _active_player_class(name, where: str) -> Type[ActivePlayer]:
    try:
        player_cls = PLAYER_REGISTRY.get(name)
    except RegistryError as err:
        raise ConfigError(f'config key "{where}": {err}') from None
    if not (isinstance(player_cls, type) and issubclass(player_cls, ActivePlayer)):
        raise ConfigError(f'config key "{where}": {name!r} is not an active player type')
    return player_cls


def build_league(cfg: dict) -> BaseLeague:
    """The league class named by ``cfg['type']``, built from ``cfg``."""
    if not isinstance(cfg, Mapping) or 'type' not in cfg:
        raise ConfigError(f'config section "league" needs a "type"; one of {", ".join(LEAGUE_REGISTRY.names())}')
    try:
        league_cls = LEAGUE_REGISTRY.get(cfg['type'])
    except RegistryError as err:
        raise ConfigError(f'config key "league.type": {err}') from None
    return league_cls(cfg)
