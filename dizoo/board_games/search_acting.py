"""Expert iteration's acting: a learning player's moves chosen by the search its own network guides.

With ``battle.collect_search = dict(num_simulations=N, ...)`` a league player collects its games by
:class:`~sparring.dizoo.board_games.guided_search.LockstepPUCT` over the game's rules, guided by its
current policy (priors) and value (leaves), as AlphaZero's self-play does (Silver et al. 2017;
Anthony et al. 2017 call it expert iteration). The search is the expert; the network learns to
imitate it: each move it records the root's visit distribution as ``search_policy``, which PPO's
``objective='search'`` trains the policy towards (and the value towards the game's result), and the
root's searched value as ``search_value`` (``learn.search_value_weight`` blends it into the value's target).

The move played is drawn from the visit distribution while fewer than ``sample_moves`` stones are
on the board, so self-play games start differently, and is the most visited move after that. As in
AlphaZero, the root's priors are mixed with ``root_noise`` of Dirichlet(``noise_alpha``) noise, so the
search also tries moves the network dismisses and the network can learn where it was wrong. The
recorded log-probability and value are the network's own, for its statistics.

Self-play by search keeps to the positions good play reaches; a weaker opponent leads the network
into others, where it has never learnt to see a plain threat. With ``random_moves`` = p, each move of
the opening (fewer than ``sample_moves`` stones) is, with probability p, a uniformly random legal
move instead, so the games also pass through the odd positions weaker players make. The search still
runs there and its visits are still the target: what it recommends does not depend on the move played.

With ``exact_value_empty_cells`` = N (connect four; the solver needs the ``perfect`` extra), each position
the player moves from with at most N empty cells is labelled with the solver's exact outcome
(:meth:`SearchActing.exact_values`); the collector records it as ``value_target`` (and where, ``value_labelled``) and the search objective
fits the value to it there instead of to the game's result, which a mistake later in the game can flip.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from sparring.config.compile import merge_class_section
from sparring.config.schema import ConfigError, in_range
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.guided_search import LockstepPUCT, policy_evaluator
from sparring.dizoo.board_games.solver import SearchBudgetExceeded, Solver, outcome
from sparring.policy.base import ActOutput
from sparring.policy.bot import choose_best

KEY = 'battle.collect_search'
# A position near the end that the solver cannot prove within this many nodes keeps the game's result as its
# value target: it bounds the collector's time on any one position (with 16 empty cells a few hundred suffice).
EXACT_VALUE_MAX_NODES = 200_000


class SearchActing:
    """Moves by guided search for the batches a collector's arena asks its home policy for."""

    @classmethod
    def default_config(cls) -> dict:
        return dict(num_simulations=50, c_puct=1.5, sample_moves=12, root_noise=0.25, noise_alpha=1.0,
                    random_moves=0.0,
                    exact_value_empty_cells=0,  # value targets: the solver's outcome where at most this many cells are empty (connect four; 0: the game's result everywhere)
                    )

    config_constraints = dict(num_simulations=in_range(1, None), c_puct=in_range(0.0, None, open_lo=True),
                              sample_moves=in_range(0, None), root_noise=in_range(0.0, 1.0),
                              noise_alpha=in_range(0.0, None, open_lo=True), random_moves=in_range(0.0, 1.0),
                              exact_value_empty_cells=in_range(0, None))

    def __init__(self, cfg: dict, geometry: BoardGeometry, seed: int = 0) -> None:
        if not isinstance(cfg, dict):
            raise ConfigError(f'config key "{KEY}": expected None or a dict of '
                              f'{sorted(self.default_config())}, got {cfg!r}')
        self.cfg = merge_class_section(type(self), cfg, KEY, validate=False)
        self.geometry = geometry
        self.rng = np.random.default_rng(seed)
        self._guide, self._search = None, None  # the arena's home policy and the search it guides
        self._solver = self._exact_solver() if self.labels_values else None

    @property
    def labels_values(self) -> bool:
        """Whether :meth:`exact_values` labels positions near the end (``exact_value_empty_cells`` > 0): the
        collector then records a ``value_target`` column, which the search objective trains the value towards."""
        return self.cfg['exact_value_empty_cells'] > 0

    def _exact_solver(self) -> Solver:
        g = self.geometry
        if not (g.gravity and g.win_length == 4):
            raise ConfigError(f'config key "{KEY}.exact_value_empty_cells": the solver knows connect four (four in a '
                              f'row, stones dropped into columns), not {g.win_length} in a row'
                              f'{"" if g.gravity else " on cells"}; expected 0 for this game')
        # A small table: positions this near the end are solved in microseconds and share little work.
        return Solver(width=g.cols, height=g.rows, table_bits=20, max_nodes=EXACT_VALUE_MAX_NODES)

    def exact_values(self, obs: np.ndarray, action_mask: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """The solver's outcome for the player to move, +1 / 0 / -1 (a win, a draw, a loss under perfect play),
        of the positions ``[n, 3, rows, cols]`` where a seat is to move and at most ``exact_value_empty_cells``
        cells are empty, ``[n]`` float32 (0 elsewhere), and which positions it labelled ``[n]`` bool: not the
        others, nor one the solver could not prove within its node budget (the game's result stays the target)."""
        obs, action_mask = np.asarray(obs), np.asarray(action_mask, bool)
        values, labelled = np.zeros(len(obs), np.float32), np.zeros(len(obs), bool)
        empty = self.geometry.num_cells - obs[:, :2].sum(axis=(1, 2, 3))
        rows = np.flatnonzero(action_mask.any(axis=1) & (empty <= self.cfg['exact_value_empty_cells']))
        g = self.geometry
        for row, own, opp in zip(rows, g.stones_from_plane(obs[rows, 0]), g.stones_from_plane(obs[rows, 1])):
            try:
                values[row] = outcome(self._solver.solve(own, opp))
            except SearchBudgetExceeded:
                continue
            labelled[row] = True
        return values, labelled

    def _search_for(self, policy) -> LockstepPUCT:
        if policy is not self._guide:
            if getattr(policy, 'recurrent', False):
                raise ConfigError(f'config key "{KEY}": the search evaluates single positions; a recurrent '
                                  f'policy\'s value depends on its state')
            cfg = self.cfg
            search = LockstepPUCT(self.geometry, policy_evaluator(policy, self.geometry), cfg['num_simulations'],
                                  cfg['c_puct'], self.rng, root_noise=cfg['root_noise'], noise_alpha=cfg['noise_alpha'])
            self._guide, self._search = policy, search
        return self._search

    def act(self, policy, obs: np.ndarray, action_mask: np.ndarray) -> Tuple[ActOutput, np.ndarray, np.ndarray]:
        """The moves for a batch of one seat's observations ``[n, 3, rows, cols]`` (rows without a legal
        action: seats not to move, action 0), the search's visit distribution ``[n, A]`` and its value of
        each position for the player to move ``[n]`` (zeros where no move is made)."""
        obs, action_mask = np.asarray(obs), np.asarray(action_mask, bool)
        n, num_actions = action_mask.shape
        target = np.zeros((n, num_actions), np.float32)
        searched_value = np.zeros(n, np.float32)
        action = np.zeros(n, np.int64)
        rows = np.flatnonzero(action_mask.any(axis=1))
        if len(rows):
            g = self.geometry
            own, opp = g.stones_from_plane(obs[rows, 0]), g.stones_from_plane(obs[rows, 1])
            visits, searched_value[rows] = self._search_for(policy).root_visits_and_values(own, opp, action_mask[rows])
            target[rows] = visits / visits.sum(axis=1, keepdims=True)
            action[rows] = self._choose(visits, target[rows], obs[rows, :2].sum(axis=(1, 2, 3)), action_mask[rows])
        probs, value = policy.probabilities_and_value(obs, action_mask=action_mask)
        chosen = np.maximum(probs[np.arange(n), action], np.finfo(np.float32).tiny)
        return ActOutput(action, np.log(chosen).astype(np.float32), value), target, searched_value

    def _choose(self, visits: np.ndarray, distribution: np.ndarray, stones: np.ndarray,
                legal: np.ndarray) -> np.ndarray:
        best = choose_best(visits, self.rng)
        sampled = (distribution.cumsum(axis=1) < self.rng.random((len(visits), 1))).sum(axis=1)
        # Rounding may leave the last cumulative sum a hair under 1: stay on a visited action.
        sampled = np.where(visits[np.arange(len(visits)), np.minimum(sampled, visits.shape[1] - 1)] > 0,
                           np.minimum(sampled, visits.shape[1] - 1), best)
        if self.cfg['random_moves'] > 0:  # no draws otherwise, so runs without it keep their random streams
            uniform = choose_best(legal.astype(np.float64), self.rng)  # ties at random: any legal move
            sampled = np.where(self.rng.random(len(visits)) < self.cfg['random_moves'], uniform, sampled)
        return np.where(stones < self.cfg['sample_moves'], sampled, best)
