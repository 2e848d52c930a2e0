"""Any two-player PettingZoo env as a battle env: ``env=dict(type='pettingzoo', env='classic.connect_four_v3')``.

:class:`PettingZooBattleEnv` is one game in sparring's single-game battle shape (the PettingZoo
parallel API with ``action_mask`` and ``result`` in the infos); :func:`make_battle_env` steps B of
them in a :class:`~sparring.worker.env.battle.DictBattleVecEnv`, which checks every step.

* AEC envs (the turn-based classic games) become turn-based: only ``agent_selection`` acts in a
  step, the other seat's action mask is all False.
* Parallel envs stay simultaneous: both seats act every step.
* Observations: the ``'observation'`` entry of a dict observation (the whole observation
  otherwise), flattened to float32 with Gymnasium's ``flatten`` (a Discrete one becomes one-hot).
* Action masks: the observation's ``'action_mask'`` if it has one, else ``infos[agent]['action_mask']``,
  else every action. ``Box`` actions (continuous, parallel envs) have none: they go to the env as
  arrays of the space's dtype, already clipped to it.
* ``render()`` gives text: the env's own ``'ansi'`` mode where it has one (it is built so), else
  the board of connect four, tic-tac-toe or go drawn from the observation planes.
* The game ends for both seats when it ends for one; the seat whose rewards sum higher over the
  game wins, equal sums draw (for zero-sum games: the sign of each seat's own sum).

Options: ``env`` (see :mod:`.loading` for the names), ``kwargs`` (passed to the env's constructor),
``api`` (``'auto'``, ``'aec'`` or ``'parallel'``).
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np
from gymnasium import spaces

from sparring.config.schema import ConfigError, one_of
from sparring.dizoo.pettingzoo.board_text import board_from_planes
from sparring.dizoo.pettingzoo.loading import APIS, make_pettingzoo_env
from sparring.config.registry import ENV_REGISTRY
from sparring.worker.env.battle_api import (BATTLE_ENV_CONSTRAINTS, NUM_SEATS, RESULT_NAME, BattleEnv,
                                            battle_env_defaults)
from sparring.worker.env.errors import EnvError

OBSERVATION_KEY = 'observation'
MASK_KEY = 'action_mask'
TEXT_MODE = 'ansi'  # PettingZoo's render mode that returns text


def _env_name(value) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"expected a PettingZoo env such as 'classic.connect_four_v3', got {value!r}")


def _observation_part(space: spaces.Space) -> Tuple[spaces.Space, bool]:
    """The part of an agent's observation space that the policy sees, and whether it is a dict entry."""
    if isinstance(space, spaces.Dict) and OBSERVATION_KEY in space.spaces:
        return space.spaces[OBSERVATION_KEY], True
    return space, False


@ENV_REGISTRY.register('pettingzoo')
class PettingZooBattleEnv(BattleEnv):
    """One game of a two-player PettingZoo env (see the module docstring)."""

    cfg: Any  # the compiled section (an EasyDict), always given: see __init__

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            battle_env_defaults(),
            env='',  # the PettingZoo env by module path, e.g. 'classic.connect_four_v3'
            kwargs={},  # keyword arguments of the env's constructor
            api='auto',  # 'aec' (turn by turn), 'parallel' (all agents at once) or 'auto' (whichever the env offers)
        )

    config_constraints = dict(BATTLE_ENV_CONSTRAINTS, env=_env_name, api=one_of(*APIS))

    def __init__(self, cfg: Optional[Mapping]) -> None:
        if cfg is None:
            raise ConfigError('pettingzoo battle env: expected its config section, e.g. '
                              "dict(type='pettingzoo', env='classic.connect_four_v3')")
        super().__init__(cfg)
        self.env, self.api = make_pettingzoo_env(self.cfg.env, self.cfg.kwargs, self.cfg.api)
        name = self.cfg.env
        if 'render_mode' not in self.cfg.kwargs and TEXT_MODE in self.env.metadata.get('render_modes', ()):
            # An env that can draw itself as text does so for `sparring play`; the others are drawn from
            # their observation where it is a board (see render()).
            self.env.close()
            self.env, self.api = make_pettingzoo_env(name, dict(self.cfg.kwargs, render_mode=TEXT_MODE), self.cfg.api)
        self.turn_based = self.api == 'aec'
        agents = list(getattr(self.env, 'possible_agents', []))
        if len(agents) != NUM_SEATS:
            raise ConfigError(f'config key "env.env": PettingZoo env {name!r} has agents {agents}; expected '
                              f'{NUM_SEATS} (one per seat)')
        self.possible_agents = agents
        self._parts: Dict[str, Tuple[spaces.Space, bool]] = {}
        self._flat_spaces: Dict[str, spaces.Box] = {}
        for agent in agents:
            part, in_dict = _observation_part(self.env.observation_space(agent))
            try:
                flat = spaces.flatten_space(part)
            except NotImplementedError:
                flat = None
            if not isinstance(flat, spaces.Box):
                raise ConfigError(f'config key "env.env": {name!r} observes {part} for {agent!r}; expected a space '
                                  f'Gymnasium can flatten (Box, Discrete, MultiDiscrete, Tuple, Dict)')
            self._parts[agent] = part, in_dict
            self._flat_spaces[agent] = spaces.Box(flat.low.astype(np.float32), flat.high.astype(np.float32),
                                                  flat.shape, np.float32)
        self._num_actions = {agent: int(getattr(self.env.action_space(agent), 'n', 0)) for agent in agents}
        self.continuous = isinstance(self.env.action_space(agents[0]), spaces.Box)
        self._totals = [0.0, 0.0]

    def observation_space(self, agent: str) -> spaces.Box:
        return self._flat_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.env.action_space(agent)

    # -- the game --------------------------------------------------------------------------------

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None):
        out = self.env.reset(seed=seed, options=options)
        self._totals = [0.0, 0.0]
        self.agents = list(self.possible_agents)
        if self.api == 'aec':
            return self._aec_view(over=False)
        observations, infos = out
        return self._parallel_view(observations, infos, over=False)

    def step(self, actions: Dict[str, Any]):
        if not self.agents:
            raise EnvError(f'pettingzoo env {self.cfg.env!r}: step() after the game ended; call reset() first')
        if self.api == 'aec':
            mover = self.env.agent_selection
            self.env.step(int(actions[mover]))
            rewards, terminations, truncations = self.env.rewards, self.env.terminations, self.env.truncations
        else:
            observations, rewards, terminations, truncations, infos = self.env.step(
                {agent: self._action(agent, actions[agent]) for agent in self.env.agents})
        rewards = {agent: float(rewards.get(agent, 0.0)) for agent in self.possible_agents}
        for seat, agent in enumerate(self.possible_agents):
            self._totals[seat] += rewards[agent]
        terminated = any(bool(terminations.get(agent, False)) for agent in self.possible_agents)
        truncated = not terminated and any(bool(truncations.get(agent, False)) for agent in self.possible_agents)
        over = terminated or truncated
        if self.api == 'aec':
            observations, infos = self._aec_view(over)
        else:
            observations, infos = self._parallel_view(observations, infos, over)
        if over:
            seat_0 = (self._totals[0] > self._totals[1]) - (self._totals[0] < self._totals[1])
            for seat, agent in enumerate(self.possible_agents):
                infos[agent]['result'] = RESULT_NAME[seat_0 if seat == 0 else -seat_0]
            self.agents = []
        flags = {agent: terminated for agent in self.possible_agents}
        cut = {agent: truncated for agent in self.possible_agents}
        return observations, rewards, flags, cut, infos

    def render(self):
        """The position as text: the env's own ``'ansi'`` rendering, else the board of a classic board game
        drawn from its observation planes, else whatever the env's ``render()`` gives."""
        if getattr(self.env, 'render_mode', None) == TEXT_MODE:
            return self.env.render()
        if self.api == 'aec':
            first = self.possible_agents[0]
            raw = self.env.observe(first)
            part = raw[OBSERVATION_KEY] if self._parts[first][1] else raw
            mover = self.env.agent_selection if self.agents else None
            text = board_from_planes(part, self._num_actions[first], self.possible_agents, mover)
            if text is not None:
                return text
        if getattr(self.env, 'render_mode', None) is None:
            return None  # PettingZoo's render() would only warn that no render mode was given
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    # -- PettingZoo's output in the battle shape -------------------------------------------------

    def _aec_view(self, over: bool):
        """Every agent's observation; only ``agent_selection`` gets legal actions (none when ``over``)."""
        mover = None if over else self.env.agent_selection
        observations, infos = {}, {}
        for agent in self.possible_agents:
            raw = self.env.observe(agent)
            observations[agent] = self._flatten(agent, raw)
            moves = agent == mover
            infos[agent] = {MASK_KEY: self._mask(agent, raw, self.env.infos.get(agent, {}), moves)}
        return observations, infos

    def _parallel_view(self, observations: Mapping, infos: Mapping, over: bool):
        flat, out_infos = {}, {}
        for agent in self.possible_agents:
            if agent not in observations:
                raise EnvError(f'pettingzoo env {self.cfg.env!r} returned observations for {sorted(observations)}; '
                               f'expected one for {agent!r} too')
            raw = observations[agent]
            flat[agent] = self._flatten(agent, raw)
            out_infos[agent] = {} if self.continuous else {
                MASK_KEY: self._mask(agent, raw, infos.get(agent, {}), moves=not over)}
        return flat, out_infos

    def _action(self, agent: str, action: Any):
        """An int for a Discrete space; for a Box, an array of the space's own dtype."""
        if self.continuous:
            return np.asarray(action, dtype=self.env.action_space(agent).dtype)
        return int(action)

    def _flatten(self, agent: str, raw: Any) -> np.ndarray:
        part, in_dict = self._parts[agent]
        return np.asarray(spaces.flatten(part, raw[OBSERVATION_KEY] if in_dict else raw), np.float32)

    def _mask(self, agent: str, raw: Any, info: Mapping, moves: bool) -> np.ndarray:
        n = self._num_actions[agent]
        if not moves:
            return np.zeros(n, bool)
        if isinstance(raw, Mapping) and MASK_KEY in raw:
            return np.asarray(raw[MASK_KEY]).astype(bool)
        if MASK_KEY in info:
            return np.asarray(info[MASK_KEY]).astype(bool)
        return np.ones(n, bool)
