"""Watching a league as it trains, in both modes: league metrics for TensorBoard and the report page.

The run coordinator calls :class:`LeagueWatch` at three moments, live only (never when a commander
replays its journal): after each evaluation (:meth:`evaluated`), after each snapshot with its
verdict (:meth:`snapshot`; a reset follows a snapshot in the same verdict) and after each exact
analysis (:meth:`exact`). It then

* writes TensorBoard scalars under ``league/``: each active player's Elo and TrueSkill mu / sigma
  (when on), its win rate against each evaluation opponent, the games it played through each
  opponent branch, its snapshot and reset counts; with several player categories, the win rate of each
  category against each other (``league/category/<row>/win_rate/<column>``); and the payoff matrix as a labelled image
  (``league/payoff``: red 0, white 0.5, blue 1, grey unknown). An evaluation's figures are stamped with
  the env steps of the parameters it evaluated, which a delayed one (in the background, on an evaluator
  worker) passes in. They go to their own event file in
  ``<exp>/tb`` (TensorBoard shows them with the run's other figures), only when the run logs to
  TensorBoard (``train.tensorboard``);
* keeps the run's course (evaluations with every active player's ratings, snapshots and resets,
  exact analyses) in ``<exp>/report_data.json`` and rewrites ``<exp>/report.html`` after each
  evaluation (:mod:`sparring.framework.report_page`).

It only reads the league (it counts the jobs :meth:`~sparring.league.base_league.BaseLeague.get_job_info`
hands out by wrapping that method) and draws no random number: a seeded run trains the same
with it as without it.
"""
from __future__ import annotations

import os
from collections import defaultdict
from typing import Dict, Optional

import numpy as np

from sparring.framework.report_page import empty_course, load_course, ratings_now, write_report
from sparring.league.report_page import heatmap_players
from sparring.league.svg_chart import win_rate_rgb

CELL_PIXELS = 8  # the least side of one player pair in the payoff image (a big league's)
MAX_CELL_PIXELS = 40  # and the most (a small league's, with its win rates written in)
LABEL_PIXELS = 11  # the size of the image's words
INK = (34, 34, 34)
PAYOFF_TITLE = 'win rate, row vs column: red 0, white 0.5, blue 1, grey too few games'


class LeagueWatch:
    def __init__(self, coordinator) -> None:
        self.co = coordinator
        self.exp_dir = coordinator.cfg.exp_name
        self.league = coordinator.league
        self.logging = coordinator.logger is not None and bool(coordinator.cfg.train.tensorboard)
        self._writer = None
        self._course: Optional[dict] = None  # read lazily: a resumed run knows its env steps only after loading its state
        self.branch_games: Dict[str, Dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self._count_branches()

    def _count_branches(self) -> None:
        """Count the jobs (one game each) each player draws through each branch, as the league hands them out."""
        draw = self.league.get_job_info

        def counted(player_id=None, eval_flag=False):
            job = draw(player_id, eval_flag)
            self.branch_games[job['launch_player']][job['branch']] += 1
            return job
        self.league.get_job_info = counted

    def branch_state(self) -> Dict[str, Dict[str, int]]:
        """The branch counts as plain dicts, for a checkpoint or a commander's state file."""
        return {pid: dict(branches) for pid, branches in self.branch_games.items()}

    def load_branch_state(self, state: Dict[str, Dict[str, int]]) -> None:
        """Start counting from a saved run's counts: a resumed run's league does not hand its jobs out again."""
        self.branch_games.clear()
        for pid, branches in state.items():
            self.branch_games[pid].update({branch: int(games) for branch, games in branches.items()})

    @property
    def course(self) -> dict:
        if self._course is None:
            # Entries after the point this run (re)started from belong to a future it no longer has.
            self._course = load_course(self.exp_dir, up_to_env_steps=self.co.env_steps) or empty_course()
        return self._course

    # -- the three moments ------------------------------------------------------------------------
    def evaluated(self, pid: str, report: dict, env_steps: Optional[int] = None) -> None:
        co = self.co
        rates = co.kind.evaluation_class.opponent_rates(report)  # by opponent: win, draw and loss rates, games
        if rates is None:  # a single agent's returns: no league to watch
            return
        env_steps = co.env_steps if env_steps is None else env_steps  # when the evaluated parameters were taken
        self.course['evaluations'].append(dict(env_steps=env_steps, seconds=round(co.wall_seconds, 2), player=pid,
                                               results=rates, ratings=ratings_now(self.league)))
        if self.logging:
            self._log_league(pid, rates, env_steps)
        self.write_report()

    def snapshot(self, verdict: dict) -> None:
        pid = verdict['player_id']
        self.course['snapshots'].append(dict(env_steps=self.co.env_steps, player=pid,
                                             snapshot=verdict['historical_player']['player_id'],
                                             iteration=self.co.players[pid].train_iteration, reset=bool(verdict['reset'])))
        if self.logging:
            player = self.league.get_player(pid)
            self._scalars({f'league/{pid}/snapshots': player.snapshot_count,
                           f'league/{pid}/resets': player.reset_count}, self.co.env_steps)

    def exact(self, report: dict) -> None:
        self.course['exact'].append(dict(env_steps=self.co.env_steps, **self.co.exact_figures.course_entry(report)))
        self.write_report()

    # -- TensorBoard --------------------------------------------------------------------------------
    def _log_league(self, pid: str, report: dict, env_steps: int) -> None:
        """The league's figures at ``env_steps``, those of the evaluated parameters: a delayed evaluation (in the
        background, or on an evaluator worker) is drawn where its parameters were, not where the run is now."""
        figures = {}
        for player in self.league.active_players:
            rating = self.league.ratings.summary(player.player_id)
            for key in ('elo', 'trueskill_mu', 'trueskill_sigma'):
                if rating[key] is not None:
                    figures[f'league/{player.player_id}/{key}'] = rating[key]
        for oid, s in report.items():
            figures[f'league/{pid}/win_rate/{oid}'] = s['win']
        for branch, games in self.branch_games[pid].items():
            figures[f'league/{pid}/branch_games/{branch}'] = games
        figures.update(category_scalars(self.league))
        self._scalars(figures, env_steps)
        self.writer().add_image('league/payoff', payoff_image(self.league), env_steps, dataformats='HWC')
        self.writer().flush()

    def _scalars(self, figures: Dict[str, float], env_steps: int) -> None:
        writer = self.writer()
        for tag, value in figures.items():
            writer.add_scalar(tag, float(value), env_steps)
        writer.flush()

    def writer(self):
        if self._writer is None:
            from tensorboardX import SummaryWriter
            self._writer = SummaryWriter(os.path.join(self.exp_dir, 'tb'), filename_suffix='.league')
        return self._writer

    # -- the page -----------------------------------------------------------------------------------
    def write_report(self) -> str:
        co = self.co
        facts = {'env': co.cfg.env.type, 'env steps': co.env_steps, 'wall seconds': round(co.wall_seconds, 1), 'phase': co.phase}
        return write_report(self.exp_dir, self.league, self.course, facts)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class NoWatch:
    """A single-agent run: nothing to watch."""

    def branch_state(self) -> dict:
        return {}

    def load_branch_state(self, state: dict) -> None:
        pass

    def evaluated(self, pid: str, report: dict, env_steps: Optional[int] = None) -> None:
        pass

    def snapshot(self, verdict: dict) -> None:
        pass

    def exact(self, report: dict) -> None:
        pass

    def write_report(self):
        return None

    def close(self) -> None:
        pass


def watch_for(coordinator):
    """The watch a run's coordinator calls: a :class:`LeagueWatch` for a league, else :class:`NoWatch`."""
    return LeagueWatch(coordinator) if coordinator.kind.is_league else NoWatch()


def category_scalars(league) -> Dict[str, float]:
    """TensorBoard's figures of the payoff between categories: ``league/category/<row>/win_rate/<column>`` for each
    pair of different categories that has met; none in a league of one category."""
    if len(league.categories) < 2:
        return {}
    categories, rates, games = league.category_payoff()
    return {f'league/category/{row}/win_rate/{column}': float(rates[i, j])
            for i, row in enumerate(categories) for j, column in enumerate(categories)
            if i != j and games[i, j] > 0}


def payoff_image(league, max_pixels: int = 800) -> np.ndarray:
    """``[H, W, 3]`` uint8: each pair's win rate as a coloured square (row player vs column player), red 0,
    white 0.5, blue 1, grey where too few games were played; the players of the report's heatmap, each row
    labelled with a number and the player's id, each column with the number, and the rate written in a cell
    that has room for it. Drawn with Pillow, which TensorBoard's images need anyway."""
    from PIL import Image, ImageDraw, ImageFont
    ids = heatmap_players(league)
    rates, games = league.payoff.matrix(ids, ids)
    known = (games > 0) & (games >= league.payoff.min_win_rate_games)
    colours = np.rint(win_rate_rgb(np.where(known, rates, np.nan))).astype(np.uint8)
    font = ImageFont.load_default(size=LABEL_PIXELS)
    measure = ImageDraw.Draw(Image.new('RGB', (1, 1)))
    labels = [f'{i}: {pid}' for i, pid in enumerate(ids)]
    left = 8 + max((int(measure.textlength(label, font=font)) for label in labels), default=0)
    top = 2 * (LABEL_PIXELS + 4)  # the title, then the column numbers
    cell = max(CELL_PIXELS, min(MAX_CELL_PIXELS, (max_pixels - left) // max(len(ids), 1)))
    width = max(left + cell * len(ids), left + int(measure.textlength(PAYOFF_TITLE, font=font))) + 4
    image = Image.new('RGB', (width, top + cell * len(ids) + 4), 'white')
    draw = ImageDraw.Draw(image)
    draw.text((4, 2), PAYOFF_TITLE, fill=INK, font=font)
    annotate = cell >= 2.5 * LABEL_PIXELS
    for i, label in enumerate(labels):
        y = top + cell * i
        draw.text((4, y + (cell - LABEL_PIXELS) / 2), label, fill=INK, font=font)
        draw.text((left + cell * i + cell / 2, top - 2), str(i), fill=INK, font=font, anchor='md')
        for j in range(len(ids)):
            x = left + cell * j
            draw.rectangle((x, y, x + cell - 1, y + cell - 1), fill=tuple(int(c) for c in colours[i, j]))
            if annotate and known[i, j]:
                ink = 'white' if abs(rates[i, j] - 0.5) > 0.3 else INK
                draw.text((x + cell / 2, y + cell / 2), f'{rates[i, j]:.2f}', fill=ink, font=font, anchor='mm')
    return np.asarray(image, np.uint8)
