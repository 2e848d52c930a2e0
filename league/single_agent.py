"""The league of a single-agent run: one active player, no opponents, nothing to rate.

A single-agent run (CartPole, MuJoCo) is the one-player case of a league run: the same run
coordinator, loops and checkpoints drive it, and this league answers their questions the way one
player without opponents would: no jobs to draw, no games to record, never a snapshot or a reset.
It is built by the coordinator for configs without a battle env; a config never names it.
"""
from __future__ import annotations

import dataclasses
from typing import List, Optional

from sparring.config.registry import LEAGUE_REGISTRY
from sparring.league.errors import LeagueError
from sparring.league.job_protocol import JobInfo, PlayerProgress, SnapshotVerdict, no_snapshot


@dataclasses.dataclass
class SingleAgentPlayer:
    player_id: str
    train_iteration: int = 0
    kind: str = 'active'


@LEAGUE_REGISTRY.register('single_agent')
class SingleAgentLeague:
    """The league of a single-agent run: one player, ``player_id``, and the league interface the run
    coordinator uses (no jobs to draw, no games to record, never a snapshot or a reset).

    Built by the coordinator for a config without a battle env; a config never names it.

    Args:
        cfg: unused (the interface of every league's constructor).
        player_id: the one player's name.
    """

    def __init__(self, cfg=None, player_id: str = 'agent') -> None:
        self.player = SingleAgentPlayer(player_id)

    @classmethod
    def default_config(cls) -> dict:
        return {}

    @classmethod
    def validate_config(cls, section: dict, path: str = 'league') -> None:
        from sparring.config.schema import ConfigError
        raise ConfigError(f'config key "{path}.type": \'single_agent\' is the league a single-agent run makes for '
                          f'itself; expected a league type such as \'one_vs_one\' or \'alphastar\', or no league section')

    @property
    def active_players(self) -> List[SingleAgentPlayer]:
        return [self.player]

    @property
    def historical_players(self) -> list:
        return []

    @property
    def reference_players(self) -> list:
        return []

    def get_player(self, player_id: str) -> SingleAgentPlayer:
        self._check(player_id)
        return self.player

    def get_job_info(self, player_id: Optional[str] = None, eval_flag: bool = False) -> JobInfo:
        raise LeagueError('get_job_info: a single-agent run has no opponents to draw')

    def finish_job(self, job_result: dict) -> None:
        if job_result.get('result'):
            raise LeagueError(f'finish_job: a single-agent run plays no games; got {len(job_result["result"])} results')

    def eval_opponents(self) -> list:
        return []

    def record_eval_result(self, player_id: str, opponent_id: str, result) -> None:
        raise LeagueError(f'record_eval_result: a single-agent run has no rated opponents, got {opponent_id!r}')

    def update_active_player(self, player_info: PlayerProgress) -> None:
        self._check(player_info['player_id'])
        self.player.train_iteration = int(player_info['train_iteration'])

    def judge_snapshot(self, player_id: str) -> SnapshotVerdict:
        self._check(player_id)
        return no_snapshot(player_id)

    def set_meta_game_source(self, source) -> None:
        raise LeagueError('a single-agent run has no meta-game: battle.exact_analysis needs a two-player game')

    def state_dict(self) -> dict:
        return dict(player_id=self.player.player_id, train_iteration=self.player.train_iteration)

    def load_state_dict(self, state: Optional[dict]) -> None:
        if state:
            self.player.train_iteration = int(state['train_iteration'])

    def save(self, path: str) -> None:
        """Nothing to keep beside the checkpoint: a single agent's league has no payoff or ratings."""
        return None

    def table(self, sort_by: str = 'elo', max_rows: int = 0) -> str:
        return ''

    def plot_payoff(self, path: str, **kwargs) -> None:
        return None

    def plot_ratings(self, path: str, **kwargs) -> None:
        return None

    def _check(self, player_id: str) -> None:
        if player_id != self.player.player_id:
            raise LeagueError(f'unknown player {player_id!r}; the single-agent run has one: {self.player.player_id!r}')
