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
(:meth:`SearchActing.exact_labels`); the collector records it as ``value_target`` (and where, ``value_labelled``) and the search objective
fits the value to it there instead of to the game's result, which a mistake later in the game can flip.

With ``exact_policy_empty_cells`` = N (likewise), each such position whose legal moves do not all lead to the
same outcome is labelled with the solver's moves: uniform over the legal moves whose outcome (win, draw or
loss) equals the best one's, recorded as ``policy_target`` (and where, ``policy_labelled``); the search
objective trains the policy towards it there instead of towards the search's visits. Uniform over the
outcome-best moves, not a softmax over exact scores: it is what perfect play's verdict on a move says (the
benchmark of docs/guides/perfect-play.md counts a move an error only when its outcome is worse), it needs no
temperature, and it does not push down a slower win the network may find more reliably. Where every move has
the same outcome no move is an error, and the search's visits (which still prefer the slower loss) stay the
target. With ``exact_policy_target='score'`` the best moves are those of the best exact score instead (the
fastest win, the slowest loss), and a position is labelled wherever the scores differ: the network is then
taught to take a win in one rather than any move that still wins, which is what it most often fails to do
on positions of random play (docs/perfect-play-levers.md, "What the errors are"). Both labels of a position
come from one solve.

With ``tactics_weight`` = w > 0 (any line game; no solver), each position where the mover can complete a line
gets its winning moves as the policy target (uniform over them), and each where it cannot but the other player
could on exactly one cell gets that cell; the collector records them as ``policy_target`` / ``policy_labelled``
(in place of the solver's there) and ``policy_weight``, w on those positions and 1 elsewhere, which the search
objective weighs each step's policy loss by (as if those positions were drawn w times as often). The search's
visits already favour those moves; the weight is for the network, which meets a win in one in one position of
dozens and, fitted to all alike, does not learn to take it at a glance (docs/guides/perfect-play.md).

Cost, one core's CPU time per position of random play (``benchmarks/perfect_play.py label-cost``: 300 per size,
the solver's table kept between them as in the collector; load 6.5): every move's score 0.12-0.16 ms with 8-16
empty cells, 0.30 with 18, 0.64 with 20, 2.6 with 22, 4.3 with 24, 23 with 28 (the value alone: a third to a half
of that). A step of expert iteration's self-play costs several milliseconds per env step here, so N = 20 keeps
labelling a small share of it; the middle-easy positions of the benchmark (14-27 empty cells) are reached only
in part at that N.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from sparring.config.compile import merge_class_section
from sparring.config.schema import ConfigError, in_range, one_of
from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.guided_search import LockstepPUCT, policy_evaluator
from sparring.dizoo.board_games.solver import SearchBudgetExceeded, Solver, outcome
from sparring.policy.base import ActOutput, Policy
from sparring.policy.bot import choose_best

KEY = 'battle.collect_search'
# A position near the end that the solver cannot prove within this many nodes keeps the game's result and the
# search's visits as its targets: it bounds the collector's time on any one position (with 16 empty cells a few
# hundred suffice for its value; its every move's score takes several times that).
EXACT_MAX_NODES = 200_000


class SearchActing:
    """Moves by guided search for the batches a collector's arena asks its home policy for."""

    @classmethod
    def default_config(cls) -> dict:
        return dict(num_simulations=50,  # PUCT simulations per move, guided by the network's priors and values
                    c_puct=1.5,  # PUCT's exploration constant: how far the priors outweigh the values found
                    sample_moves=12,  # below this many stones the move played is drawn from the visits, after it the most visited
                    root_noise=0.25,  # the share of Dirichlet noise mixed into the root's priors (AlphaZero's epsilon)
                    noise_alpha=1.0,  # the Dirichlet noise's concentration
                    random_moves=0.0,  # the chance that an opening move (below sample_moves stones) is uniformly random
                    exact_value_empty_cells=0,  # value targets: the solver's outcome where at most this many cells are empty (connect four; 0: the game's result everywhere)
                    exact_policy_empty_cells=0,  # policy targets: the solver's best moves where at most this many cells are empty (connect four; 0: the search's visits everywhere)
                    exact_policy_target='outcome',  # which moves are best there: 'outcome' (every move of the best outcome) or 'score' (the best exact score: the fastest win, the slowest loss)
                    tactics_weight=0.0,  # positions with a win in one (else a single cell to block): those moves as the policy target, its loss weighed this many times an ordinary move's (any board game; 0: off)
                    )

    config_constraints = dict(num_simulations=in_range(1, None), c_puct=in_range(0.0, None, open_lo=True),
                              sample_moves=in_range(0, None), root_noise=in_range(0.0, 1.0),
                              noise_alpha=in_range(0.0, None, open_lo=True), random_moves=in_range(0.0, 1.0),
                              exact_value_empty_cells=in_range(0, None), exact_policy_empty_cells=in_range(0, None),
                              exact_policy_target=one_of('outcome', 'score'), tactics_weight=in_range(0.0, None))

    def __init__(self, cfg: dict, geometry: BoardGeometry, seed: int = 0) -> None:
        if not isinstance(cfg, dict):
            raise ConfigError(f'config key "{KEY}": expected None or a dict of '
                              f'{sorted(self.default_config())}, got {cfg!r}')
        self.cfg = merge_class_section(type(self), cfg, KEY, validate=False)
        self.geometry = geometry
        self.rng = np.random.default_rng(seed)
        self._guide: Optional[Policy] = None  # the arena's home policy
        self._search: Optional[LockstepPUCT] = None  # and the search it guides
        exact = self.cfg['exact_value_empty_cells'] > 0 or self.cfg['exact_policy_empty_cells'] > 0
        self._solver = self._exact_solver() if exact else None

    @property
    def label_columns(self) -> Dict[str, Tuple[tuple, type]]:
        """The labels :meth:`exact_labels` gives, as ``name: (shape past the rows, dtype)``: the collector
        records each as a column, which the search objective trains towards; empty when the options are off."""
        columns: Dict[str, Tuple[tuple, type]] = {}
        if self.cfg['exact_value_empty_cells'] > 0:
            columns.update(value_target=((), np.float32), value_labelled=((), np.bool_))
        if self.cfg['exact_policy_empty_cells'] > 0 or self.cfg['tactics_weight'] > 0:
            columns.update(policy_target=((self.geometry.num_actions,), np.float32), policy_labelled=((), np.bool_))
        if self.cfg['tactics_weight'] > 0:
            columns.update(policy_weight=((), np.float32))
        return columns

    def _exact_solver(self) -> Solver:
        g = self.geometry
        if not (g.gravity and g.win_length == 4):
            key = next(k for k in ('exact_value_empty_cells', 'exact_policy_empty_cells') if self.cfg[k] > 0)
            raise ConfigError(f'config key "{KEY}.{key}": the solver knows connect four (four in a '
                              f'row, stones dropped into columns), not {g.win_length} in a row'
                              f'{"" if g.gravity else " on cells"}; expected 0 for this game')
        # A small table: positions this near the end are solved in microseconds and share little work.
        return Solver(width=g.cols, height=g.rows, table_bits=20, max_nodes=EXACT_MAX_NODES)

    def exact_labels(self, obs: np.ndarray, action_mask: np.ndarray) -> Dict[str, np.ndarray]:
        """The solver's labels of the positions ``[n, 3, rows, cols]`` where a seat is to move, the columns of
        :attr:`label_columns`: ``value_target`` ``[n]``, the outcome for the player to move under perfect play
        (+1 / 0 / -1; 0 where not labelled), and ``value_labelled`` where at most ``exact_value_empty_cells`` cells
        are empty; ``policy_target`` ``[n, A]``, uniform over the legal moves of the best outcome (0 where not
        labelled; ``exact_policy_target='score'``: over the legal moves of the best exact score), and
        ``policy_labelled`` where at most ``exact_policy_empty_cells`` cells are empty and some legal move is worse
        by that measure. A position the solver cannot prove within its node budget is not labelled
        (the game's result and the search's visits stay its targets). With ``tactics_weight`` = w > 0 (no solver
        needed), a position where the mover can complete a line gets its winning moves as ``policy_target`` (uniform
        over them), else one where the other player could complete a line on exactly one cell gets that cell, and
        ``policy_weight`` ``[n]`` is w there (1 elsewhere); these labels take the place of the solver's."""
        obs, action_mask = np.asarray(obs), np.asarray(action_mask, bool)
        g, n = self.geometry, len(obs)
        labels = dict(value_target=np.zeros(n, np.float32), value_labelled=np.zeros(n, bool),
                      policy_target=np.zeros((n, g.num_actions), np.float32), policy_labelled=np.zeros(n, bool))
        if self._solver is not None:
            self._solver_labels(self._solver, obs, action_mask, labels)
        if self.cfg['tactics_weight'] > 0:
            labels['policy_weight'] = np.ones(n, np.float32)
            self._tactics_labels(obs, action_mask, labels)
        return {name: labels[name] for name in self.label_columns}

    def _solver_labels(self, solver: Solver, obs: np.ndarray, action_mask: np.ndarray,
                       labels: Dict[str, np.ndarray]) -> None:
        """The solver's values and best moves near the end (in ``labels``), as :meth:`exact_labels` says."""
        g = self.geometry
        value_cells, policy_cells = self.cfg['exact_value_empty_cells'], self.cfg['exact_policy_empty_cells']
        by_score = self.cfg['exact_policy_target'] == 'score'
        empty = g.num_cells - obs[:, :2].sum(axis=(1, 2, 3))
        rows = np.flatnonzero(action_mask.any(axis=1) & (empty <= max(value_cells, policy_cells)))
        for row, own, opp in zip(rows, g.stones_from_plane(obs[rows, 0]), g.stones_from_plane(obs[rows, 1])):
            legal = action_mask[row]
            try:
                if empty[row] <= policy_cells:  # every move's score; the position's outcome is the best one's
                    scores = solver.move_scores(own, opp)
                    moves = scores if by_score else outcome(scores)
                    best = legal & (moves == moves[legal].max())
                    if not best[legal].all():  # the solver tells the moves apart: it has a move to teach
                        labels['policy_target'][row] = best / best.sum()
                        labels['policy_labelled'][row] = True
                    value = outcome(scores[legal].max())
                else:
                    value = outcome(solver.solve(own, opp))
            except SearchBudgetExceeded:
                continue
            if empty[row] <= value_cells:
                labels['value_target'][row], labels['value_labelled'][row] = value, True

    def _tactics_labels(self, obs: np.ndarray, action_mask: np.ndarray, labels: Dict[str, np.ndarray]) -> None:
        """Where the mover has a win in one, its winning moves; else where the other player has exactly one cell
        to complete a line on, that cell: as the policy target, weighed ``tactics_weight`` times (in ``labels``).

        Expert iteration's search already puts most of its visits there, but such a position is one in dozens of a
        game and the network, fitted to all of them alike, does not learn to take a win it sees
        (docs/perfect-play-levers.md, "What the errors are"); the weight is what oversampling them would do. Two
        or more cells to block: every move loses, nothing to teach."""
        g = self.geometry
        rows = np.flatnonzero(action_mask.any(axis=1))
        moves = g.tactic_moves(g.stones_from_plane(obs[rows, 0]), g.stones_from_plane(obs[rows, 1]))
        tactic = moves.any(axis=1)
        rows, moves = rows[tactic], moves[tactic]
        labels['policy_target'][rows] = moves / moves.sum(axis=1, keepdims=True)
        labels['policy_labelled'][rows] = True
        labels['policy_weight'][rows] = self.cfg['tactics_weight']

    def _search_for(self, policy) -> LockstepPUCT:
        if self._search is None or policy is not self._guide:
            if getattr(policy, 'recurrent', False):
                raise ConfigError(f'config key "{KEY}": the search evaluates single positions; a recurrent '
                                  f'policy\'s value depends on its state')
            cfg = self.cfg
            search = LockstepPUCT(self.geometry, policy_evaluator(policy, self.geometry), cfg['num_simulations'],
                                  cfg['c_puct'], self.rng, root_noise=cfg['root_noise'], noise_alpha=cfg['noise_alpha'])
            self._guide, self._search = policy, search
            return search
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
