"""The kinds of run, decided in one place: a league of players in a game of two seats or of more, or one agent.

:func:`run_kind` looks at a compiled config once and returns the kind; everything that differs
between them lives here, behind the same methods, so no other module asks "is this a league?":

* :class:`LeagueKind` — a battle env (or a config with a ``league`` section): each active player
  collects with a :class:`BattleCollector` against opponents the league draws, is evaluated by games
  against the evaluation opponents, and its collector envs are seeded per player.
* :class:`MultiSeatKind` — a league in a game of three or more seats (:mod:`sparring.worker.env.multiseat_api`):
  the same, with a :class:`~sparring.worker.multiseat_collector.MultiSeatCollector` seating each job's tuple of
  opponents, and the :class:`~sparring.worker.multiseat_evaluation.MultiSeatEvaluation`.
* :class:`SingleAgentKind` — any other env: the one-player case, trained by the same coordinator
  and loops with a :class:`SampleCollector`, evaluated by episode return.

A league kind's ``collector`` takes ``sample_job(slot) -> (player ids, opponents' policies)``: the league's next
job for the player (the player's id first, then one opponent per other seat) and the policies the opponents play,
asked whenever a slot starts a game, the same in one process and in a collector worker.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, Union, cast

from sparring.config.registry import ENV_REGISTRY
from sparring.config.schema import ConfigError
from sparring.worker.battle_collector import BattleCollector
from sparring.worker.collector import SampleCollector
from sparring.worker.env.battle import battle_env_class, is_battle_env, make_battle_env
from sparring.worker.env.manager import make_env_manager
from sparring.worker.env.multiseat_api import is_multiseat_env, seat_layout
from sparring.worker.evaluation import GameEvaluation, ReturnEvaluation
from sparring.worker.multiseat_collector import MultiSeatCollector
from sparring.worker.multiseat_evaluation import MultiSeatEvaluation
from sparring.worker.policy_pool import PolicyPool, RolePools
from sparring.worker.role_arena import home_seat_of
from sparring.worker.seeds import LEAGUE_EVAL_SEED_OFFSET, SINGLE_AGENT_EVAL_SEED_OFFSET, player_seed

SINGLE_AGENT = 'agent'  # the one player of a single-agent run
SINGLE_AGENT_LEAGUE = 'single_agent'  # the league type of a single-agent run (one player, no opponents)
_UNKNOWN = object()  # a game's roles before the first probe


def is_league_run(cfg) -> bool:
    """Whether ``cfg`` trains a league (a battle env, or a ``league`` section) rather than one agent."""
    return cfg.league is not None or is_battle_env(cfg.env.type)


class LeagueKind:
    is_league = True
    evaluation_class = GameEvaluation
    keeps_initial_params = True  # every player starts from them, and a reset returns to them
    round_label = 'round'  # a round: every player collects and learns once

    @staticmethod
    def train_prefix(player_id: str) -> str:
        return f'train/{player_id}/'

    def __init__(self, cfg) -> None:
        self.cfg = cfg
        self._roles: object = _UNKNOWN

    def league_type(self) -> str:
        return self.cfg.league.type

    @property
    def acting_rows(self) -> int:
        """Rows one game's step asks of the policies at most: both seats' agents (``env.team_size`` a seat)."""
        return 2 * int(self.cfg.env.get('team_size', 1))

    def check_seats(self, seats: int) -> None:
        """The league's ``seats`` must be the game's two: a ConfigError naming both otherwise."""
        if seats != 2:
            raise ConfigError(f'config key "league.seats": {seats}, but env {self.cfg.env.type!r} is a two-seat game; '
                              f'expected 2, or an env of that many seats (e.g. type=\'openspiel_multiseat\' with '
                              f'game_params players={seats})')

    @property
    def roles(self) -> Optional[Tuple[str, ...]]:
        """The game's seat roles (its league's categories), or None for a symmetric game."""
        if self._roles is _UNKNOWN:
            probe = make_battle_env(self.cfg.env, 1, self.cfg.seed)
            try:
                self._roles = probe.roles
            finally:
                probe.close()
        return cast(Optional[Tuple[str, ...]], self._roles)

    def spaces(self, role: Optional[str] = None) -> Tuple[Any, Any]:
        """(observation space, action space) of one seat: any seat's in a symmetric game, the seat of ``role``'s in
        a game with roles."""
        probe = make_battle_env(self.cfg.env, 1, self.cfg.seed)
        try:
            if probe.roles is None and role is None:
                return probe.observation_space, probe.action_space
            seat = home_seat_of(probe, role)
            return probe.observation_spaces[seat], probe.action_spaces[seat]
        finally:
            probe.close()

    def policy_pool(self, store, seed: int):
        """The run's policy pool: one for every seat in a symmetric game, one per role in a game with roles."""
        if self.roles is None:
            return PolicyPool(store, *self.spaces(), seed=seed, env_cfg=self.cfg.env)
        return RolePools({role: PolicyPool(store, *self.spaces(role), seed=seed, env_cfg=self.cfg.env, role=role)
                          for role in dict.fromkeys(self.roles)})

    def collector(self, policy, n_steps: int, seed: int, player_id: str, player_index: int,
                  sample_job: Optional[Callable]):
        """A player's collector on envs of its own; ``sample_job(slot)`` draws each game's job (see the module
        docstring). In a game with roles the player plays its policy's ``role``."""
        if sample_job is None:
            raise ValueError(f'a league collector of {player_id!r} needs sample_job(slot): who each game is against')
        search = collect_search(self.cfg, policy, player_seed(seed, player_index))
        env = make_battle_env(self.cfg.env, self.cfg.env.collector_env_num, player_seed(seed, player_index),
                              training=True)

        def sample_opponent(slot: int):
            player_ids, policies = sample_job(slot)
            return player_ids[1], policies[0]
        return BattleCollector(env, policy, n_steps, sample_opponent, player_id=player_id,
                               train_both_sides=self.cfg.battle.train_both_sides, search=search, role=policy.role)

    def evaluation(self, seed_shift: int = 0) -> GameEvaluation:
        # Every league evaluation replays the same seeds, so evaluations differ only by the players.
        return GameEvaluation(self.cfg, self.cfg.seed + LEAGUE_EVAL_SEED_OFFSET)


class MultiSeatKind(LeagueKind):
    """A league in a game of three or more seats (see the module docstring): every seat has the same spaces (no
    roles), each job seats a tuple of opponents, results are rankings."""

    evaluation_class = MultiSeatEvaluation  # type: ignore[assignment]

    def __init__(self, cfg) -> None:
        super().__init__(cfg)
        self.env_cls = ENV_REGISTRY.get(cfg.env.type)
        self._layout: Optional[Tuple[Any, Any, int]] = None
        self._roles = None  # one policy plays any seat

    def _seat_layout(self) -> Tuple[Any, Any, int]:
        if self._layout is None:
            self._layout = seat_layout(self.env_cls, self.cfg.env, self.cfg.seed)
        return self._layout

    @property
    def seats(self) -> int:
        """The game's seats (S)."""
        return self._seat_layout()[2]

    @property
    def acting_rows(self) -> int:
        """Rows one game's step asks of the policies at most: one a seat (a team game's ``env.team_size`` groups
        seats, each still one row)."""
        return self.seats

    def check_seats(self, seats: int) -> None:
        """The league must seat as many players as the game has seats: a ConfigError naming both otherwise."""
        if seats != self.seats:
            env = self.cfg.env
            raise ConfigError(f'config key "league.seats": {seats}, but env {env.type!r} ({env.get("game", "")} '
                              f'{dict(env.get("game_params") or {})}) has {self.seats} seats; expected '
                              f'league.seats={self.seats}')

    def spaces(self, role: Optional[str] = None) -> Tuple[Any, Any]:
        """(observation space, action space) of every seat."""
        observation_space, action_space, _ = self._seat_layout()
        return observation_space, action_space

    def policy_pool(self, store, seed: int):
        return PolicyPool(store, *self.spaces(), seed=seed, env_cfg=self.cfg.env)

    def collector(self, policy, n_steps: int, seed: int, player_id: str, player_index: int,
                  sample_job: Optional[Callable]):
        """A player's collector on S-seat games of its own; ``sample_job(slot)`` draws each game's job."""
        if sample_job is None:
            raise ValueError(f'a league collector of {player_id!r} needs sample_job(slot): who each game is against')
        env = self.env_cls(self.cfg.env, self.cfg.env.collector_env_num, player_seed(seed, player_index))
        return MultiSeatCollector(env, policy, n_steps, sample_job, player_id=player_id,
                                  train_own_seats=self.cfg.battle.train_both_sides)

    def evaluation(self, seed_shift: int = 0) -> MultiSeatEvaluation:  # type: ignore[override]
        # Every evaluation replays the same seeds, so evaluations differ only by the players.
        return MultiSeatEvaluation(self.cfg, self.cfg.seed + LEAGUE_EVAL_SEED_OFFSET)


class SingleAgentKind:
    is_league = False
    evaluation_class = ReturnEvaluation
    keeps_initial_params = False  # one player that is never reset: nothing to return to
    round_label = 'it'  # one learner iteration

    @staticmethod
    def train_prefix(player_id: str) -> str:
        return 'train/'

    def __init__(self, cfg) -> None:
        self.cfg = cfg

    roles = None  # one agent: no seats
    acting_rows = 1  # rows one env's step asks of the policy

    def league_type(self) -> str:
        return SINGLE_AGENT_LEAGUE

    def check_seats(self, seats: int) -> None:
        pass  # one agent: no seats

    def policy_pool(self, store, seed: int):
        return PolicyPool(store, *self.spaces(), seed=seed, env_cfg=self.cfg.env)

    def spaces(self, role: Optional[str] = None) -> Tuple[Any, Any]:
        return _spaces_of(make_env_manager(self.cfg.env, 1, self.cfg.seed, self.cfg.import_names))

    def collector(self, policy, n_steps: int, seed: int, player_id: str, player_index: int,
                  sample_opponent: Optional[Callable]):
        if self.cfg.battle.collect_search is not None or needs_search(policy):
            raise ConfigError(f'config key "battle.collect_search" (and policy.learn.objective=\'search\'): a search '
                              f'over a game\'s rules is for two-player games; env {self.cfg.env.type!r} is single-agent')
        env = make_env_manager(self.cfg.env, self.cfg.env.collector_env_num, seed, self.cfg.import_names)
        return SampleCollector(env, policy, n_steps, player_id=player_id)

    def evaluation(self, seed_shift: int = 0) -> ReturnEvaluation:
        """``seed_shift``: a resumed run's evaluation episodes start where the run got, not at the first ones."""
        return ReturnEvaluation(self.cfg, self.cfg.seed + seed_shift + SINGLE_AGENT_EVAL_SEED_OFFSET)


def needs_search(policy) -> bool:
    """Whether ``policy`` learns from a search's visit counts (PPO's ``objective='search'``)."""
    return bool(getattr(policy, 'learns_from_search', False))


def collect_search(cfg, policy, seed: int):
    """The search a league player collects its moves by (``battle.collect_search``), or None."""
    spec = cfg.battle.collect_search
    if spec is None:
        if needs_search(policy):
            raise ConfigError('config key "policy.learn.objective": \'search\' trains towards the visit counts of a '
                              'search the player collects by; set "battle.collect_search", e.g. '
                              'dict(num_simulations=50)')
        return None
    make = getattr(battle_env_class(cfg.env.type), 'search_acting', None)
    if make is None:
        raise ConfigError(f'config key "battle.collect_search": env {cfg.env.type!r} offers no search over its '
                          f'rules; expected a game that does (tictactoe, connect_four)')
    search = make(cfg.env, dict(spec), seed)
    labels = sorted(getattr(search, 'label_columns', None) or {})
    if labels and not needs_search(policy):  # the labels are targets of that objective alone: refuse, not ignore
        raise ConfigError(f'config key "battle.collect_search": its labelling options record {", ".join(labels)}, '
                          f'targets that only policy.learn.objective=\'search\' trains towards; this player '
                          f'would ignore them: set that objective, or turn the labelling options off')
    return search


def _spaces_of(probe):
    """A probe env's spaces; the probe is closed."""
    try:
        return probe.observation_space, probe.action_space
    finally:
        probe.close()


RunKind = Union[LeagueKind, MultiSeatKind, SingleAgentKind]


def is_multiseat_run(cfg) -> bool:
    """Whether a compiled config's env is a game of three or more seats (:mod:`sparring.worker.env.multiseat_api`)."""
    return cfg.env.type in ENV_REGISTRY and is_multiseat_env(ENV_REGISTRY.get(cfg.env.type))


def run_kind(cfg) -> RunKind:
    """The kind of run ``cfg`` (compiled) makes."""
    if is_multiseat_run(cfg):
        return MultiSeatKind(cfg)
    return LeagueKind(cfg) if is_league_run(cfg) else SingleAgentKind(cfg)

