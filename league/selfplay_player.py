"""Self-play schedules from ML-Agents and OpenAI Five, as active players.

Both snapshot every ``save_steps`` and play their *latest* self (the live network) with a fixed
probability; they differ in what they count and in how they pick a *past* self:

* :class:`MLAgentsSelfPlayPlayer` (``mlagents_sp``) — counts *agent steps* as ML-Agents' trainer
  does (every step of every agent the player controls, reported by the pipeline as
  ``agent_steps``), so the guide's defaults (``save_steps`` 20,000, ``swap_steps`` 10,000) mean
  what they mean there. Uniformly among its last ``window`` snapshots (older ones leave the
  window, not the league), and it keeps an opponent for ``swap_steps`` agent steps before drawing
  the next one, with probability ``play_against_latest_model_ratio`` (the guide also calls it
  ``play_against_current_self_ratio``; either name is accepted) of the latest self.
* :class:`OpenAIFiveSelfPlayPlayer` (``openai_five_sp``) — counts training iterations; the latest
  self with probability ``latest_prob`` (0.8), else a past snapshot drawn by softmax over *quality
  scores*: a new snapshot enters at the highest current score, and each win against snapshot ``i``
  lowers its score by ``quality_lr / (N p_i)`` (N snapshots, p_i its current probability). In that
  step ``N p_i`` is floored at ``min_relative_prob``, so each win lowers a score by at most
  ``quality_lr / min_relative_prob`` and the scores stay finite however long a winning streak: a
  snapshot beaten again and again becomes rare, not impossible to draw ever again. Where
  ``N p_i >= min_relative_prob`` this is the paper's update.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from sparring.config.schema import ConfigError, in_range
from sparring.config.registry import PLAYER_REGISTRY
from sparring.league.errors import LeagueError
from sparring.league.outcome import WIN
from sparring.league.player import ActivePlayer, HistoricalPlayer, Player
from sparring.league.sampling import sample_weighted, softmax


class PeriodicSelfPlayPlayer(ActivePlayer):
    """Self-play with a snapshot every ``save_steps``: the base of ML-Agents' and OpenAI Five's players.

    Its opponent is the latest self (branch ``latest``) with probability ``cfg[latest_key]``, else a past
    snapshot drawn by the branch ``past_branch`` names. A subclass names both and implements that branch; the
    config keys are those of :meth:`default_config` (the config reference lists them under Players).

    Class attributes a subclass sets:

    * ``latest_key``: the config key holding the probability of playing the latest self;
    * ``past_branch``: the branch (a ``_<name>_branch`` method) that draws a past snapshot.

    Args:
        player_id: the player's name in the league.
        cfg: the player's config, over :meth:`default_config`.
        player_type: its registered type name (default: the class's).
        param_ref: where its parameters live (default: ``player_id``).
        model: the model config recorded with it.
    """

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
    counts_agent_steps = True
    # The self-play guide's name for the same knob (older ML-Agents configs use the other one).
    LATEST_RATIO_SYNONYM = 'play_against_current_self_ratio'

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            save_steps=20000,  # agent steps between snapshots
            swap_steps=10000,  # agent steps an opponent is kept before the next draw
            window=10,  # how many of the latest snapshots can be drawn
            play_against_latest_model_ratio=0.5,  # also accepted as play_against_current_self_ratio
        )

    config_constraints = {
        'save_steps': in_range(1, None),
        'swap_steps': in_range(0, None),
        'window': in_range(1, None),
        'play_against_latest_model_ratio': in_range(0.0, 1.0),
    }

    @classmethod
    def resolve_config(cls, user=None, path: str = 'player') -> dict:
        if isinstance(user, Mapping) and cls.LATEST_RATIO_SYNONYM in user:
            user = dict(user)
            ratio = user.pop(cls.LATEST_RATIO_SYNONYM)
            if cls.latest_key in user and user[cls.latest_key] != ratio:
                raise ConfigError(f'config keys "{path}.{cls.LATEST_RATIO_SYNONYM}" ({ratio!r}) and '
                                  f'"{path}.{cls.latest_key}" ({user[cls.latest_key]!r}) name the same setting with '
                                  f'different values; expected only one of them')
            user[cls.latest_key] = ratio
        return super().resolve_config(user, path)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._opponent: Optional[Tuple[Player, str]] = None
        self._last_swap_agent_steps = 0
        self._last_snapshot_agent_steps = 0

    def is_trained_enough(self) -> bool:
        return self.agent_steps - self._last_snapshot_agent_steps >= self.cfg.save_steps

    def on_snapshot(self, historical: HistoricalPlayer) -> None:
        self._last_snapshot_agent_steps = self.agent_steps

    def get_opponent(self) -> Tuple[Player, str]:
        if self._opponent is None or self.agent_steps - self._last_swap_agent_steps >= self.cfg.swap_steps:
            self._opponent = super().get_opponent()
            self._last_swap_agent_steps = self.agent_steps
        return self._opponent

    def _window_branch(self) -> Optional[Player]:
        return self._uniform(self.league.roster.snapshots_of(self.player_id).last(self.cfg.window))

    def _extra_state(self) -> dict:
        opponent = None if self._opponent is None else [self._opponent[0].player_id, self._opponent[1]]
        return dict(opponent=opponent, agent_steps=self.agent_steps, last_swap_agent_steps=self._last_swap_agent_steps,
                    last_snapshot_agent_steps=self._last_snapshot_agent_steps)

    def _load_extra_state(self, extra: dict) -> None:
        if 'opponent' not in extra:
            raise LeagueError(f'player {self.player_id!r} state: missing key \'opponent\'; expected the state '
                              f'an mlagents_sp player saved')
        opponent = extra['opponent']
        self.agent_steps = int(extra['agent_steps'])
        self._last_swap_agent_steps = int(extra['last_swap_agent_steps'])
        self._last_snapshot_agent_steps = int(extra['last_snapshot_agent_steps'])
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
            latest_prob=0.8,  # the share of games against the latest self; the rest against past snapshots
            quality_lr=0.01,  # how far a win against a snapshot lowers its quality score (its chance to be drawn)
            # The floor of N p_i in the score update: a win lowers a score by at most quality_lr / this, so
            # scores stay finite however long a streak; the paper's update wherever p_i >= this / N.
            min_relative_prob=0.01,
        )

    config_constraints = {
        'save_steps': in_range(1, None),
        'latest_prob': in_range(0.0, 1.0),
        'quality_lr': in_range(0.0, None),
        'min_relative_prob': in_range(0.0, 1.0, open_lo=True),
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
        floor = self.cfg.min_relative_prob
        for code in codes:
            if code == WIN:
                # n p_i floored: as p_i shrinks towards 0 the paper's step lr / (n p_i) grows without bound.
                self._quality[i] -= self.cfg.quality_lr / max(n * softmax(self._quality)[i], floor)

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
