"""Connect-four positions labelled by perfect play, and a player's error rate on them.

The protocol of Pons' test sets, as AlphaZero.jl's benchmark uses it: positions reached by uniformly random
play, each labelled with every legal move's exact score, grouped by the stones already played (begin 0-14,
middle 15-28, end 29-42) and by the plies until the game is decided under perfect play (easy < 14, medium
14-27, hard 28+); six groups can occur. A move is an **error** when its outcome (win, draw or loss for the
mover) is worse than the best move's; a slower win is not an error.

:func:`generate` needs the solver (numba); :func:`load`, :func:`score_policy` and :func:`perfect_play_report`
need only numpy, so any installation can judge a player against a stored set.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np

from sparring.dizoo.board_games.bitboard import BoardGeometry
from sparring.dizoo.board_games.solver.solver import ILLEGAL, SearchBudgetExceeded, Solver, moves_to_end, outcome

STONE_GROUPS = (('begin', 0, 14), ('middle', 15, 28), ('end', 29, 42))
PLY_GROUPS = (('easy', 0, 13), ('medium', 14, 27), ('hard', 28, 42))
# The six groups a 7x6 position can fall in (an end position is decided within 13 plies, a middle one within 27).
GROUPS = ('end-easy', 'middle-easy', 'middle-medium', 'begin-easy', 'begin-medium', 'begin-hard')
FORMAT_VERSION = 1
# The set the figures are reported on (generated with a seed no tuning looked at); benchmarks/perfect_play.py.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
REPORT_SET = os.path.join(_ROOT, 'benchmarks', 'data', 'connect_four_positions_2.npz')


def group_of(played: int, plies_to_end: int) -> str:
    stones = next(name for name, lo, hi in STONE_GROUPS if lo <= played <= hi)
    plies = next(name for name, lo, hi in PLY_GROUPS if lo <= plies_to_end <= hi)
    return f'{stones}-{plies}'


@dataclass
class PositionSet:
    """Labelled positions: the stones of the player to move and of the other ``[N]`` (uint64, the bitboards of
    :class:`BoardGeometry` on 6 rows x 7 columns), the stones played ``[N]``, every column's score ``[N, 7]``
    (:data:`ILLEGAL` for a full one) and the group of each position ``[N]``."""

    own: np.ndarray
    opp: np.ndarray
    played: np.ndarray
    scores: np.ndarray
    group: np.ndarray
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.own)

    def save(self, path: str) -> None:
        np.savez_compressed(path, own=self.own, opp=self.opp, played=self.played, scores=self.scores,
                            group=self.group, meta=np.array(json.dumps(dict(self.meta, format=FORMAT_VERSION))))


def load(path: str) -> PositionSet:
    if not os.path.exists(path):
        raise FileNotFoundError(f'perfect play: no positions file {path}; expected one written by '
                                f'benchmarks/perfect_play.py generate')
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data['meta']))
        if meta.get('format') != FORMAT_VERSION:
            raise ValueError(f'perfect play: {path} has format {meta.get("format")!r}; expected {FORMAT_VERSION} '
                             f'(generate it again)')
        return PositionSet(data['own'], data['opp'], data['played'], data['scores'], data['group'], meta)


def random_position(rng: np.random.Generator, geometry: BoardGeometry, played: int):
    """``(own, opp)`` after ``played`` uniformly random moves, or None when the game ended before."""
    own, opp = 0, 0
    for _ in range(played):
        occupied = own | opp
        column = rng.choice(geometry.legal_actions(occupied))
        own |= (occupied + geometry.move_table[column]) & ~occupied
        if geometry.has_line(own) or (own | opp) == geometry.full_board:
            return None
        own, opp = opp, own
    return own, opp


def generate(seed: int, per_group: int, max_nodes: int = 1_000_000, max_seconds: float = 240.0,
             max_attempts: Optional[int] = None, begin_from: int = 9, solver: Optional[Solver] = None,
             log=None) -> PositionSet:
    """Up to ``per_group`` positions of each group by random play from ``seed``, labelled by the solver.

    The cheap groups come first: end positions, then middle ones, then begin positions with ``begin_from``
    to 14 stones (fewer stones need an opening book: the solver rarely labels them within a million nodes).
    A position whose labels take more than ``max_nodes`` nodes is skipped (the skips per stone count are kept
    in ``meta``: the hardest positions of the begin groups are missing, so those groups lean easy). A stone
    group closes when its groups are full or after ``max_attempts`` positions of it were labelled or skipped
    (the set then depends only on the seed); generation stops after ``max_seconds`` with what it has.
    ``meta`` also keeps, per group, the positions labelled and their CPU seconds.
    """
    rng = np.random.default_rng(seed)
    solver = solver or Solver(max_nodes=max_nodes)
    solver.max_nodes = int(max_nodes)
    g = solver.geometry
    kept: Dict[str, list] = {name: [] for name in GROUPS}
    cpu: Dict[str, float] = {name: 0.0 for name in GROUPS}
    solved: Dict[str, int] = {name: 0 for name in GROUPS}
    skipped: Dict[int, int] = {}
    started = time.perf_counter()
    attempts = {name: 0 for name, _, _ in STONE_GROUPS}
    while time.perf_counter() - started < max_seconds:
        open_stone_groups = [(stones, max(lo, begin_from) if stones == 'begin' else lo, hi)
                             for stones, lo, hi in STONE_GROUPS
                             if any(len(kept[k]) < per_group for k in GROUPS if k.startswith(stones))
                             and (max_attempts is None or attempts[stones] < max_attempts)]
        if not open_stone_groups:
            break
        stones, lo, hi = open_stone_groups[-1]  # the group with the most stones: the cheapest to label
        played = int(rng.integers(lo, min(hi, g.num_cells - 1) + 1))
        position = random_position(rng, g, played)
        if position is None:
            continue
        attempts[stones] += 1
        clock = time.process_time()
        try:
            scores = solver.move_scores(*position)
        except SearchBudgetExceeded:
            skipped[played] = skipped.get(played, 0) + 1
            continue
        name = group_of(played, moves_to_end(int(scores.max()), played, g.num_cells))
        cpu[name] += time.process_time() - clock
        solved[name] += 1
        if len(kept[name]) < per_group:
            kept[name].append((position[0], position[1], played, scores))
            if log is not None and len(kept[name]) % 100 == 0:
                log(f'{name}: {len(kept[name])} positions ({time.perf_counter() - started:.0f} s)')
    rows = [(name, *row) for name in GROUPS for row in kept[name]]
    meta = dict(seed=int(seed), per_group=int(per_group), max_nodes=int(max_nodes), attempts=attempts,
                begin_from=int(begin_from),
                seconds=round(time.perf_counter() - started, 1), skipped_over_budget=skipped,
                labelled={name: len(kept[name]) for name in GROUPS},
                # Labelling speed: the positions of each group labelled (kept or beyond the quota) and their CPU time.
                solved=solved, label_cpu_seconds={name: round(cpu[name], 6) for name in GROUPS})
    return PositionSet(own=np.array([r[1] for r in rows], np.uint64), opp=np.array([r[2] for r in rows], np.uint64),
                       played=np.array([r[3] for r in rows], np.int8),
                       scores=np.array([r[4] for r in rows], np.int8).reshape(-1, g.cols),
                       group=np.array([r[0] for r in rows]), meta=meta)


def observations(positions: PositionSet):
    """The line games' observations ``[N, 3, 6, 7]`` of the positions (own stones, opponent's, a to-move plane
    of ones) and their legal moves ``[N, 7]``."""
    g = BoardGeometry(6, 7, 4, gravity=True)
    obs = np.empty((len(positions), 3, g.rows, g.cols), np.float32)
    obs[:, 0], obs[:, 1], obs[:, 2] = g.planes(positions.own), g.planes(positions.opp), 1.0
    return obs, positions.scores != ILLEGAL


def errors_of(positions: PositionSet, moves: np.ndarray) -> np.ndarray:
    """Whether each move ``[N]`` is an error: its outcome worse than the best move's."""
    best = outcome(positions.scores).max(axis=1)
    chosen = outcome(positions.scores[np.arange(len(positions)), moves])
    return chosen < best


def missed_tactics(positions: PositionSet, moves: np.ndarray):
    """Which errors ``[N]`` are plain ones: ``(missed win, missed block)``. A missed win: the mover could complete
    a line at once and its move does not win at all. A missed block: it could not, the other player could, and
    the move does not take a cell where the other player would complete a line. The rest of the errors lie deeper."""
    g = BoardGeometry(6, 7, 4, gravity=True)
    occupied = positions.own | positions.opp
    wins_now, threats = g.completing_moves(positions.own, occupied), g.completing_moves(positions.opp, occupied)
    wrong = errors_of(positions, moves)
    missed_win = wrong & wins_now.any(axis=1)
    missed_block = wrong & ~wins_now.any(axis=1) & threats.any(axis=1) & ~threats[np.arange(len(moves)), moves]
    return missed_win, missed_block


def score_policy(policy, positions: PositionSet, batch: int = 512) -> dict:
    """A player's error rate per group (and over all positions), and how many of its errors were a missed win
    in one or a missed block (:func:`missed_tactics`): ``policy.act(obs, action_mask=..., deterministic=True)``
    chooses each position's move; any policy or bot of a connect-four seat will do."""
    obs, legal = observations(positions)
    expected = (3, 6, 7)
    shape = getattr(getattr(policy, 'observation_space', None), 'shape', expected)
    if tuple(shape) != expected:
        raise ValueError(f'perfect play: the player observes shape {tuple(shape)}; expected {expected} '
                         f'(connect four on 6 rows x 7 columns)')
    moves = np.concatenate([policy.act(obs[i:i + batch], action_mask=legal[i:i + batch], deterministic=True).action
                            for i in range(0, len(obs), batch)])
    if not legal[np.arange(len(moves)), moves].all():
        raise ValueError('perfect play: the player chose a full column; expected a legal move')
    wrong = errors_of(positions, moves)
    missed_win, missed_block = missed_tactics(positions, moves)
    report = {}
    for name in GROUPS + ('all',):
        rows = np.ones(len(wrong), bool) if name == 'all' else positions.group == name
        if rows.any():
            report[name] = dict(positions=int(rows.sum()), errors=int(wrong[rows].sum()),
                                error_rate=round(float(wrong[rows].mean()), 4),
                                missed_wins=int(missed_win[rows].sum()), missed_blocks=int(missed_block[rows].sum()))
    return report


def perfect_play_report(policy, path: Optional[str] = None) -> dict:
    """The one call behind ``sparring eval --perfect``: ``policy``'s error rates on the positions of ``path``
    (default: the reported set, :data:`REPORT_SET`), with the file and its seed."""
    positions = load(path or REPORT_SET)
    return dict(positions_file=os.path.abspath(path or REPORT_SET), seed=positions.meta.get('seed'),
                groups=score_policy(policy, positions))
