"""Self-play schedules from ML-Agents and OpenAI Five, as active players.

Both snapshot every ``save_steps`` training steps and play their *latest* self (the live
network) with a fixed probability; they differ in how they pick a *past* self:

* :class:`MLAgentsSelfPlayPlayer` (``mlagents_sp``) — uniformly among its last ``window``
  snapshots (older ones leave the window, not the league), and it keeps an opponent for
  ``swap_steps`` training steps before drawing the next one, with probability
  ``play_against_latest_model_ratio`` of the latest self.
* :class:`OpenAIFiveSelfPlayPlayer` (``openai_five_sp``) — the latest self with probability
  ``latest_prob`` (0.8), else a past snapshot drawn by softmax over *quality scores*: a new
  snapshot enters at the highest current score, and each win against snapshot ``i`` lowers
  its score by ``quality_lr / (N p_i)`` (N snapshots, p_i its current probability).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from sparring.config.schema import in_range
from sparring.config.registry import PLAYER_REGISTRY
from sparring.league.errors import LeagueError
from sparring.league.outcome import WIN
from sparring.league.player import ActivePlayer, HistoricalPlayer, Player
from sparring.league.sampling import sample_weighted, softmax


class PeriodicSelfPlayPlayer(ActivePlayer):
    """Snapshots every ``save_steps``; branch ``latest`` with probability ``cfg[latest_key]``,
    else the branch named by ``past_branch``."""

    latest_key = ''
    past_branch = ''

    @classmethod
    def branch_probs_of(cls, cfg: dict) -> Dict[str, float]:
        latest = cfg[cls.latest_key]
        return {'latest': latest, cls.past_branch: 1.0 - latest}

    def is_trained_enough(self) -> bool:
        return self.step - self.last_snapshot_step >= self.cfg.save_steps

    def _latest_branch(self) -> Player:
        return self


@PLAYER_REGISTRY.register('mlagents_sp')
class MLAgentsSelfPlayPlayer(PeriodicSelfPlayPlayer):
    """ML-Agents' self-play (see the module docstring)."""

    latest_key = 'play_against_latest_model_ratio'
    past_branch = 'window'

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            save_steps=20000,  # training steps between snapshots
            swap_steps=10000,  # training steps an opponent is kept before the next draw
            window=10,  # how many of the latest snapshots can be drawn
            play_against_latest_model_ratio=0.5,
        )

    config_constraints = {
        'save_steps': in_range(1, None),
        'swap_steps': in_range(0, None),
        'window': in_range(1, None),
        'play_against_latest_model_ratio': in_range(0.0, 1.0),
    }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._opponent: Optional[Tuple[Player, str]] = None
        self._last_swap_step = 0

    def get_opponent(self) -> Tuple[Player, str]:
        if self._opponent is None or self.step - self._last_swap_step >= self.cfg.swap_steps:
            self._opponent = super().get_opponent()
            self._last_swap_step = self.step
        return self._opponent

    def _window_branch(self) -> Optional[Player]:
        return self._uniform(self.league.roster.snapshots_of(self.player_id).last(self.cfg.window))

    def _extra_state(self) -> dict:
        opponent = None if self._opponent is None else [self._opponent[0].player_id, self._opponent[1]]
        return dict(opponent=opponent, last_swap_step=self._last_swap_step)

    def _load_extra_state(self, extra: dict) -> None:
        try:
            opponent, self._last_swap_step = extra['opponent'], int(extra['last_swap_step'])
        except KeyError as err:
            raise LeagueError(f'player {self.player_id!r} state: missing key {err.args[0]!r}') from None
        self._opponent = None if opponent is None else (self.league.roster.get(opponent[0]), opponent[1])


@PLAYER_REGISTRY.register('openai_five_sp')
class OpenAIFiveSelfPlayPlayer(PeriodicSelfPlayPlayer):
    """OpenAI Five's opponent sampling (see the module docstring)."""

    latest_key = 'latest_prob'
    past_branch = 'past'

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            save_steps=10,  # OpenAI Five added a snapshot every 10 iterations
            latest_prob=0.8,
            quality_lr=0.01,
        )

    config_constraints = {
        'save_steps': in_range(1, None),
        'latest_prob': in_range(0.0, 1.0),
        'quality_lr': in_range(0.0, None),
    }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._past_ids: List[str] = []
        self._position: Dict[str, int] = {}
        self._quality = np.zeros(0)

    @property
    def quality_scores(self) -> Dict[str, float]:
        return dict(zip(self._past_ids, self._quality.tolist()))

    def past_probabilities(self) -> np.ndarray:
        """Probabilities of drawing each past snapshot (in snapshot order) in the ``past`` branch."""
        return softmax(self._quality) if len(self._quality) else self._quality

    def on_snapshot(self, historical: HistoricalPlayer) -> None:
        start = float(self._quality.max()) if len(self._quality) else 0.0
        self._position[historical.player_id] = len(self._past_ids)
        self._past_ids.append(historical.player_id)
        self._quality = np.append(self._quality, start)

    def on_game_result(self, opponent: Player, codes: Sequence[int]) -> None:
        i = self._position.get(opponent.player_id)
        if i is None:
            return  # not one of its own past selves: quality scores only rank those
        n = len(self._quality)
        for code in codes:
            if code == WIN:
                self._quality[i] -= self.cfg.quality_lr / (n * softmax(self._quality)[i])

    def _past_branch(self) -> Optional[Player]:
        if not self._past_ids:
            return None
        chosen = sample_weighted(softmax(self._quality), self.league.rng)
        return self.league.roster.get(self._past_ids[chosen])

    def _extra_state(self) -> dict:
        return dict(past_ids=list(self._past_ids), quality=self._quality.tolist())

    def _load_extra_state(self, extra: dict) -> None:
        try:
            ids, quality = [str(i) for i in extra['past_ids']], [float(q) for q in extra['quality']]
        except KeyError as err:
            raise LeagueError(f'player {self.player_id!r} state: missing key {err.args[0]!r}') from None
        if len(ids) != len(quality):
            raise LeagueError(f'player {self.player_id!r} state: {len(ids)} past ids but {len(quality)} scores')
        self._past_ids, self._quality = ids, np.asarray(quality, dtype=np.float64)
        self._position = {pid: i for i, pid in enumerate(ids)}
