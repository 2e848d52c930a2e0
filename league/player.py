"""Players: the frozen kinds (historical snapshots, reference bots) and trainable active players.

An :class:`ActivePlayer` chooses its opponent through *branches*. ``branch_probs`` in its
config maps branch names to probabilities and a branch ``name`` is the method
``_<name>_branch(self)``, returning the opponent (any player of the league) or ``None`` when it
has no candidate, in which case the player falls back to its ``_sp_branch``. To add an
opponent rule, subclass a player, write the method, register the class and name the branch in
the config::

    @PLAYER_REGISTRY.register('newest_snapshot_sp')
    class NewestSnapshotPlayer(NaiveSpPlayer):
        def _newest_branch(self):
            mine = self.league.roster.snapshots_of(self.player_id)
            return mine.players[-1] if len(mine) else None

    league=dict(type='one_vs_one', active_players=dict(newest_snapshot_sp=1),
                players=dict(newest_snapshot_sp=dict(branch_probs=dict(sp=0.5, newest=0.5))))

The league owns no network parameters: every player carries a parameter *reference*
(``param_ref``: a key or checkpoint path for the training pipeline) and its model config.

Every active and historical player has a *category* (DI-engine's ``player_category``, AlphaStar's races):
the league creates its active players once per category of ``league.player_category`` and a snapshot keeps
its parent's. Branches draw from every category unless a player's ``opponent_categories`` says ``'own'``
or ``'others'``; a league with one category (the default, ``['default']``) is the league without them.
Reference players (bots) belong to no category: every player may meet them.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, NotRequired, Optional, Sequence, Tuple, TypedDict, cast

import numpy as np

from sparring.config.schema import ConfigError, in_range, mean_and_spread, non_empty_text, of_type
from sparring.config.registry import PLAYER_REGISTRY
from sparring.league.config_util import check_probabilities, merge_section, to_easydict, to_plain
from sparring.league.errors import LeagueError
from sparring.league.meta_strategy import solve_zero_sum_matrix, symmetric_nash
from sparring.league.roster import PlayerGroup
from sparring.league.sampling import PFSP_WEIGHTINGS, FixedSampler, pfsp_sample, sample_weighted, uniform_sample

DEFAULT_CATEGORY = 'default'  # the one category of a league that names none
# A player's ``opponent_categories``: which categories its branches draw opponents from.
OPPONENT_CATEGORIES = ('all', 'own', 'others')


class PlayerInfo(TypedDict):
    """What a collector needs to play a player (:meth:`Player.info`): a job info's ``players`` and a
    snapshot verdict's ``historical_player``."""
    player_id: str
    kind: str  # 'active' | 'historical' | 'reference'
    param_ref: Optional[str]
    model: Optional[dict]
    step: int
    parent_id: NotRequired[str]  # a historical player's
    parent_type: NotRequired[str]
    snapshot_index: NotRequired[int]
    player_type: NotRequired[str]  # an active player's registered type


class Player:
    """Anything that can sit in the payoff: an id, a parameter reference, a model config and a category
    (None for a reference player, which belongs to none)."""

    kind = 'player'

    def __init__(self, player_id: str, param_ref: Optional[str] = None, model: Optional[dict] = None,
                 step: int = 0, category: Optional[str] = None) -> None:
        if not isinstance(player_id, str) or not player_id:
            raise LeagueError(f'a player id must be a non-empty string, got {player_id!r}')
        if category is not None and (not isinstance(category, str) or not category):
            raise LeagueError(f'player {player_id!r}: a category must be a non-empty string or None, got {category!r}')
        self.player_id = player_id
        self.category = category
        self.param_ref = param_ref
        self.model = to_plain(model or {})
        self.step = int(step)
        self.index: int = -1  # the payoff column, set when the player joins a league
        self.league: Any = None  # the BaseLeague that attached it (not imported: it imports this module)

    def attach(self, league, index: int) -> None:
        self.league, self.index = league, index

    def info(self) -> PlayerInfo:
        """What a collector needs to play this player: id, kind, parameters, model, step."""
        return PlayerInfo(player_id=self.player_id, kind=self.kind, param_ref=self.param_ref,
                          model=copy.deepcopy(self.model), step=self.step)

    def state_dict(self) -> dict:
        return dict(kind=self.kind, player_id=self.player_id, param_ref=self.param_ref,
                    model=to_plain(self.model), step=self.step, category=self.category)

    def __repr__(self) -> str:
        return f'{type(self).__name__}({self.player_id!r}, step={self.step})'


class HistoricalPlayer(Player):
    """A frozen snapshot of an active player: it keeps the parent's step, model config, category and a
    reference to a frozen copy of its parameters, so it can be played after the parent's
    network changes or is reset."""

    kind = 'historical'

    def __init__(self, player_id: str, parent_id: str, parent_type: str, step: int,
                 param_ref: Optional[str], model: Optional[dict], snapshot_index: int,
                 category: str = DEFAULT_CATEGORY) -> None:
        super().__init__(player_id, param_ref, model, step, category)
        self.parent_id = parent_id
        self.parent_type = parent_type
        self.snapshot_index = int(snapshot_index)

    def info(self) -> PlayerInfo:
        return PlayerInfo(**super().info(), parent_id=self.parent_id, parent_type=self.parent_type,
                          snapshot_index=self.snapshot_index)

    def state_dict(self) -> dict:
        return dict(super().state_dict(), parent_id=self.parent_id, parent_type=self.parent_type,
                    snapshot_index=self.snapshot_index)

    @classmethod
    def from_state_dict(cls, state: dict) -> 'HistoricalPlayer':
        try:
            return cls(state['player_id'], state['parent_id'], state['parent_type'], state['step'],
                       state['param_ref'], state['model'], state['snapshot_index'], state['category'])
        except KeyError as err:
            raise LeagueError(f'historical player state: missing key {err.args[0]!r} in {state!r}') from None


class ReferencePlayer(Player):
    """A fixed opponent (e.g. a bot) for evaluation and the ``reference`` branch.

    By default the league's first reference player anchors the rating scale (its ratings never move) and
    the others are rated like any player from their starting ratings (``anchor`` in the config).
    """

    kind = 'reference'

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            player_id='',  # its name in the league table, payoff and ratings
            param_ref=None,  # a key the pipeline understands, e.g. 'bot:random'
            model={},  # a model config recorded with the player, as league.model is with the learning ones
            elo=None,  # its fixed Elo; None = the league's initial Elo
            trueskill=None,  # its fixed (mu, sigma); None = the league's initial TrueSkill rating
            anchor=None,  # True: its ratings stay fixed (anchor the scale); False: rated like any player, from
            # the above; None: the league's first reference player anchors, unless another one is set True
            category=None,  # the category (a game's role) it plays: only the others' players meet it; None: any
        )

    # Checked where the defaults cannot tell the type (None) or the value matters.
    config_constraints = {
        'player_id': non_empty_text(),
        'param_ref': of_type(str, allow_none=True),
        'anchor': of_type(bool, allow_none=True),
        'elo': of_type(int, float, allow_none=True),
        'trueskill': mean_and_spread(allow_none=True),
        'category': of_type(str, allow_none=True),
    }

    @classmethod
    def resolve_config(cls, user, path: str) -> dict:
        return merge_section(cls, user, path)


class ActivePlayer(Player):
    """A trainable player: chooses opponents through branches, snapshots and may be reset.

    Config keys (``default_config``): ``branch_probs``; ``one_phase_step`` and
    ``strong_win_rate`` for AlphaStar's snapshot rule (:meth:`is_trained_enough`);
    ``pfsp_weighting`` for the PFSP branches; ``mutate_prob``, the chance of a reset after each
    snapshot.

    A new opponent rule is a method ``_<name>_branch(self) -> Player`` of a subclass, chosen with the
    probability ``branch_probs[name]`` (the module docstring has the recipe).

    Args:
        player_id: the player's name in the league.
        cfg: the player's config, over :meth:`default_config` (checked, unknown keys refused).
        player_type: its registered type name (default: the class's).
        param_ref: where its parameters live (default: ``player_id``).
        model: the model config recorded with it.
        category: its category (DI-engine's ``player_category``, AlphaStar's race).
    """

    kind = 'active'
    category: str  # always one: the league's categories
    # Player types that must also be in the league (e.g. a main exploiter needs a main player).
    requires: Tuple[type, ...] = ()
    # Whether this player's rules count the agent steps it trained on (ML-Agents' trainer steps), so
    # every ``update_active_player`` report must carry ``agent_steps``; others count train iterations.
    counts_agent_steps = False

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            branch_probs=dict(sp=1.0),  # opponent rule -> probability; each rule is a _<name>_branch method
            one_phase_step=20000,  # training steps (train_iteration units) in one phase
            strong_win_rate=0.7,  # beating every relevant opponent above this ends a phase early
            pfsp_weighting='squared',  # how the PFSP branches weigh opponents by win rate (see league.sampling)
            mutate_prob=0.0,  # the chance of a reset to the initial parameters after each snapshot
            opponent_categories='all',  # whose players its branches draw: 'all' categories, its 'own', or the 'others'
        )

    config_constraints = {
        'one_phase_step': in_range(1, None),
        'strong_win_rate': in_range(0.0, 1.0),
        'mutate_prob': in_range(0.0, 1.0),
    }

    # ------------------------------------------------------------------------------- config
    @classmethod
    def available_branches(cls) -> List[str]:
        """Branch names this class implements, from its ``_<name>_branch`` methods."""
        return sorted(name[1:-len('_branch')] for name in dir(cls)
                      if name.startswith('_') and not name.startswith('__') and name.endswith('_branch')
                      and len(name) > len('__branch') and callable(getattr(cls, name)))

    @classmethod
    def branch_probs_of(cls, cfg: dict) -> Dict[str, float]:
        """The branch probabilities a config implies (ML-Agents / OpenAI Five players derive them)."""
        return cfg['branch_probs']

    @classmethod
    def validate_config(cls, cfg: dict, path: str) -> None:
        name = cls.__dict__.get('registry_name', cls.__name__)
        key = f'{path}.branch_probs' if 'branch_probs' in cfg else path
        probs = check_probabilities(cls.branch_probs_of(cfg), key)
        available = cls.available_branches()
        for branch in probs:
            if branch not in available:
                raise ConfigError(
                    f'config key "{key}": unknown branch {branch!r} for player type {name!r} '
                    f'({cls.__name__}); available branches (methods _<name>_branch): {", ".join(available)}')
        choice = cfg.get('opponent_categories', 'all')
        if choice not in OPPONENT_CATEGORIES:
            raise ConfigError(f'config key "{path}.opponent_categories": expected one of '
                              f'{", ".join(map(repr, OPPONENT_CATEGORIES))}, got {choice!r}')
        weighting = cfg.get('pfsp_weighting')
        if weighting is not None and weighting not in PFSP_WEIGHTINGS:
            raise ConfigError(f'config key "{path}.pfsp_weighting": unknown weighting {weighting!r}; expected one of '
                              f'{", ".join(sorted(PFSP_WEIGHTINGS))} (register more with register_pfsp_weighting)')

    @classmethod
    def resolve_config(cls, user=None, path: str = 'player') -> dict:
        """``user`` merged over the defaults and validated; ``branch_probs`` is replaced, not merged."""
        merged = merge_section(cls, user, path, replace_keys=('branch_probs',))
        cls.validate_config(merged, path)
        return merged

    # ------------------------------------------------------------------------------- life
    def __init__(self, player_id: str, cfg: Optional[dict] = None, player_type: Optional[str] = None,
                 param_ref: Optional[str] = None, model: Optional[dict] = None,
                 category: str = DEFAULT_CATEGORY) -> None:
        super().__init__(player_id, param_ref if param_ref is not None else player_id, model, step=0,
                         category=category)
        # The registry name of this very class (an unregistered subclass would inherit its parent's).
        self.player_type = player_type or type(self).__dict__.get('registry_name') or type(self).__name__
        self.cfg = to_easydict(self.resolve_config(cfg, f'players.{self.player_type}'))
        probs = self.branch_probs_of(self.cfg)
        self._branch_names = tuple(probs)
        self._branch_methods = tuple(getattr(self, f'_{b}_branch') for b in self._branch_names)
        self._branch_sampler = FixedSampler(probs.values())
        self.last_snapshot_step = 0
        # Agent steps trained on, as reported (0 when the pipeline does not report them); saved with the
        # state of the players that count them (``counts_agent_steps``).
        self.agent_steps = 0
        self.snapshot_count = 0
        self.reset_count = 0
        self.self_play_games = 0
        # (candidate ids, meta-game, Nash mixture) of the last ``nash`` branch: solved again only when they change
        self._nash_memo: Optional[Tuple[Tuple[str, ...], np.ndarray, np.ndarray]] = None

    def _require_league(self):
        if self.league is None:
            raise LeagueError(f'player {self.player_id!r} is not in a league; build players through a league')
        return self.league

    @property
    def rng(self) -> np.random.Generator:
        return self._require_league().rng

    # ------------------------------------------------------------------------------- opponents
    def opponent_categories(self) -> Optional[Tuple[str, ...]]:
        """The categories its branches draw from (``opponent_categories`` in its config): None for every
        category, else its own or the league's others (always the others in a league of roles)."""
        choice = 'others' if self._require_league().cfg.get('roles') else self.cfg.get('opponent_categories', 'all')
        if choice == 'all':
            return None
        if choice == 'own':
            return (self.category,)
        return tuple(c for c in self._require_league().categories if c != self.category)

    def get_opponent(self) -> Tuple[Player, str]:
        """(opponent, branch name) for the next job."""
        league = self._require_league()
        i = self._branch_sampler.sample(league.rng)
        opponent = self._branch_methods[i]()
        if opponent is not None:
            return opponent, self._branch_names[i]
        return self._sp_branch(), 'sp'

    def _sp_branch(self) -> Player:
        """Self-play: the player against its current self; in a league of roles, which never meets its own role,
        against a current player of another role (one of its own type where there is one)."""
        league = self._require_league()
        if not league.cfg.get('roles'):
            return self
        others = self.opponent_categories()
        same_type = league.roster.active(type(self), others)
        return cast(Player, self._uniform(same_type if len(same_type) else league.roster.active(None, others)))

    def _pfsp_branch(self) -> Optional[Player]:
        """PFSP over every historical player of the league (of the categories it draws from)."""
        return self._pfsp(self.league.roster.historical(categories=self.opponent_categories()))

    def _reference_branch(self) -> Optional[Player]:
        """PFSP over the league's reference players (fixed bots or pretrained models), e.g. to train
        against scripted opponents beside self-play, as OpenAI Five began against its scripted bot."""
        return self._pfsp(self.league.roster.reference(self.opponent_categories()))

    def win_rates(self, group: PlayerGroup) -> np.ndarray:
        return self.league.payoff.win_rates_by_index(self.index, group.indices)

    def _pfsp(self, group: PlayerGroup, weighting=None, win_rates: Optional[np.ndarray] = None) -> Optional[Player]:
        """The PFSP choice among ``group`` (None if empty); ``weighting`` defaults to the config's."""
        if not len(group):
            return None
        rates = self.win_rates(group) if win_rates is None else win_rates
        return group.players[pfsp_sample(rates, self.league.rng, weighting or self.cfg.get('pfsp_weighting', 'squared'))]

    def _uniform(self, group: PlayerGroup) -> Optional[Player]:
        return group.players[uniform_sample(len(group), self.league.rng)] if len(group) else None

    def _nash_branch(self) -> Optional[Player]:
        """PSRO's meta-strategy: an opponent drawn from the Nash mixture of the candidates' meta-game
        (``league.meta_game``: by default scores from the shared payoff, unplayed pairs even; an exact
        evaluation where the run provides one); in a game of three or more seats with an exact analysis, from the
        league's S-player meta-strategy (``league.meta_strategy``), each seat's opponent drawn on its own. None
        without candidates. Needs scipy (``pip install sparring[league]``)."""
        group = self._nash_candidates()
        if not len(group):
            return None
        return group.players[sample_weighted(self.nash_mixture(group), self.league.rng)]

    def _nash_candidates(self) -> PlayerGroup:
        """Whom the ``nash`` branch mixes over: every historical player of the categories it draws from
        (override to add active ones)."""
        return self.league.roster.historical(categories=self.opponent_categories())

    def nash_mixture(self, group: PlayerGroup) -> np.ndarray:
        """The Nash mixture over ``group`` (in its order). Reading the meta-game is O(n^2) but the linear
        program is far dearer, so it is solved again only when the candidates or their results changed;
        the answer depends on the payoff alone, so a restored league draws the same opponents.

        Candidates of other categories only (a league of roles, or ``opponent_categories='others'``) never meet
        one another, so their meta-game among themselves is empty. The meta-game is then the two populations':
        this player's side (its category's snapshots and itself) against the candidates, each entry the side's
        advantage; win rates between the two sides add up to one, so it is zero-sum, and the mixture is the
        candidates' (column player's) Nash strategy of it."""
        ids = tuple(group.ids)
        given = self.league.meta_strategy(ids)  # a game of three or more seats: the source solves it (and keeps it)
        if given is not None:
            return given
        side = self._own_side(group)
        if side:
            both = self.league.meta_game(list(side + ids))
            game = both[:len(side), len(side):]
        else:
            game = self.league.meta_game(ids)
        memo = self._nash_memo
        if memo is None or memo[0] != side + ids or not np.array_equal(memo[1], game):
            mixture = solve_zero_sum_matrix(game)[1] if side else symmetric_nash(game)
            memo = self._nash_memo = (side + ids, game, mixture)
        return memo[2]

    def _own_side(self, group: PlayerGroup) -> Tuple[str, ...]:
        """This player's population when ``group`` holds only players of other categories (its category's
        snapshots, then itself); empty when the candidates include its own category."""
        if any(p.category == self.category for p in group.players):
            return ()
        own = self._require_league().roster.historical(categories=(self.category,))
        return tuple(own.ids) + (self.player_id,)

    # ------------------------------------------------------------------------------- snapshots
    def _snapshot_opponents(self) -> PlayerGroup:
        """Whom the player must beat to snapshot after one phase (AlphaStar: all historical, here of the
        categories it draws from)."""
        return self.league.roster.historical(categories=self.opponent_categories())

    def is_trained_enough(self) -> bool:
        """AlphaStar's rule: never before one phase of steps since the last snapshot, always after
        two, and in between when the win rate against every relevant opponent exceeds
        ``strong_win_rate`` (no relevant opponent: wait for the second phase)."""
        passed = self.step - self.last_snapshot_step
        phase = self.cfg.one_phase_step
        if passed < phase:
            return False
        if passed >= 2 * phase:
            return True
        opponents = self._snapshot_opponents()
        return bool(len(opponents)) and float(self.win_rates(opponents).min()) > self.cfg.strong_win_rate

    @property
    def next_snapshot_id(self) -> str:
        return f'{self.player_id}_h{self.snapshot_count}'

    def snapshot(self, param_ref: Optional[str] = None) -> HistoricalPlayer:
        """A frozen copy of this player now; ``param_ref`` defaults to the snapshot's id."""
        snapshot_id = self.next_snapshot_id
        historical = HistoricalPlayer(snapshot_id, parent_id=self.player_id, parent_type=self.player_type,
                                      step=self.step, param_ref=snapshot_id if param_ref is None else param_ref,
                                      model=self.model, snapshot_index=self.snapshot_count, category=self.category)
        self.snapshot_count += 1
        self.last_snapshot_step = self.step
        return historical

    def mutate(self, rng: np.random.Generator) -> bool:
        """Whether to reset after a snapshot: with probability ``mutate_prob``."""
        p = self.cfg.get('mutate_prob', 0.0)
        if p <= 0.0:
            return False
        return p >= 1.0 or rng.random() < p  # a draw only when it can go either way

    def reset(self, model: dict) -> None:
        """Back to the initial network (the pipeline reloads the parameters)."""
        self.model = to_plain(model)
        self.reset_count += 1

    # ------------------------------------------------------------------------------- hooks
    def on_snapshot(self, historical: HistoricalPlayer) -> None:
        """Called when one of this player's snapshots joins the league."""

    def on_game_result(self, opponent: Player, codes: Sequence[int]) -> None:
        """Called after games against ``opponent`` are recorded (codes from this player's view)."""

    # ------------------------------------------------------------------------------- state
    def info(self) -> PlayerInfo:
        return PlayerInfo(**super().info(), player_type=self.player_type)

    def state_dict(self) -> dict:
        return dict(super().state_dict(), player_type=self.player_type, last_snapshot_step=self.last_snapshot_step,
                    snapshot_count=self.snapshot_count, reset_count=self.reset_count,
                    self_play_games=self.self_play_games, extra=self._extra_state())

    def load_state_dict(self, state: dict) -> None:
        """Restore counters (and subclass state); the league restores the roster first."""
        if state.get('player_type') != self.player_type:
            raise LeagueError(f'player {self.player_id!r}: saved as type {state.get("player_type")!r}, '
                              f'configured as {self.player_type!r}')
        if state.get('category') != self.category:
            raise LeagueError(f'player {self.player_id!r}: saved in category {state.get("category")!r}, '
                              f'configured in {self.category!r}')
        try:
            self.param_ref, self.model, self.step = state['param_ref'], to_plain(state['model']), int(state['step'])
            self.last_snapshot_step = int(state['last_snapshot_step'])
            self.snapshot_count, self.reset_count = int(state['snapshot_count']), int(state['reset_count'])
            self.self_play_games = int(state['self_play_games'])
            extra = state['extra']
        except KeyError as err:
            raise LeagueError(f'player {self.player_id!r} state: missing key {err.args[0]!r}') from None
        self._load_extra_state(extra)

    def _extra_state(self) -> dict:
        return {}

    def _load_extra_state(self, extra: dict) -> None:
        if extra:
            raise LeagueError(f'player {self.player_id!r} state: unexpected extra state {sorted(extra)}')


@PLAYER_REGISTRY.register('naive_sp')
class NaiveSpPlayer(ActivePlayer):
    """Naive self-play: PFSP over all snapshots (``pfsp``) or its current self (``sp``)."""

    @classmethod
    def default_config(cls) -> dict:
        return dict(super().default_config(), branch_probs=dict(pfsp=0.5, sp=0.5))
