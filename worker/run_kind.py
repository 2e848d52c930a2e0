"""The two kinds of run, decided in one place: a league of players in a battle env, or one agent.

:func:`run_kind` looks at a compiled config once and returns the kind; everything that differs
between the two lives here, behind the same methods, so no other module asks "is this a league?":

* :class:`LeagueKind` — a battle env (or a config with a ``league`` section): each active player
  collects with a :class:`BattleCollector` against opponents the league draws, is evaluated by games
  against the evaluation opponents, and its collector envs are seeded per player.
* :class:`SingleAgentKind` — any other env: the one-player case, trained by the same coordinator
  and loops with a :class:`SampleCollector`, evaluated by episode return.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, Union, cast

from sparring.config.schema import ConfigError
from sparring.worker.battle_collector import BattleCollector
from sparring.worker.collector import SampleCollector
from sparring.worker.env.battle import battle_env_class, is_battle_env, make_battle_env
from sparring.worker.env.manager import make_env_manager
from sparring.worker.evaluation import GameEvaluation, ReturnEvaluation
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
                  sample_opponent: Optional[Callable]):
        """A player's collector on envs of its own; ``sample_opponent(slot)`` draws each game's opponent. In a game
        with roles the player plays its policy's ``role``."""
        if sample_opponent is None:
            raise ValueError(f'a league collector of {player_id!r} needs sample_opponent(slot): who each game is against')
        search = collect_search(self.cfg, policy, player_seed(seed, player_index))
        env = make_battle_env(self.cfg.env, self.cfg.env.collector_env_num, player_seed(seed, player_index),
                              training=True)
        return BattleCollector(env, policy, n_steps, sample_opponent, player_id=player_id,
                               train_both_sides=self.cfg.battle.train_both_sides, search=search, role=policy.role)

    def evaluation(self, seed_shift: int = 0) -> GameEvaluation:
        # Every league evaluation replays the same seeds, so evaluations differ only by the players.
        return GameEvaluation(self.cfg, self.cfg.seed + LEAGUE_EVAL_SEED_OFFSET)


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

    def league_type(self) -> str:
        return SINGLE_AGENT_LEAGUE

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


RunKind = Union[LeagueKind, SingleAgentKind]


def run_kind(cfg) -> RunKind:
    """The kind of run ``cfg`` (compiled) makes."""
    return LeagueKind(cfg) if is_league_run(cfg) else SingleAgentKind(cfg)

