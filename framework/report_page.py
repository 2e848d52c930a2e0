"""``<exp>/report.html`` and the course it is drawn from (``<exp>/report_data.json``).

The page itself is built by :func:`sparring.league.report_page.render_report`; here it is written to
the experiment directory (atomically: a browser that reloads never sees half a page), with the
course the run recorded (:class:`~sparring.framework.league_watch.LeagueWatch`), and rebuilt for a
run's end and for a finished run from its saved state (``sparring report RUN``).

A single-agent run's course is its evaluations' returns (``returns``: env steps, seconds, mean, spread and
episodes of each), written by :func:`write_return_report` after each evaluation and at the end, and drawn
by :func:`~sparring.league.report_page.render_return_report`.
"""
from __future__ import annotations

import json
import os
import time
from typing import Dict, List, Optional, Sequence, Tuple

from sparring.league.report_page import render_report, render_return_report
from sparring.worker.run_files import write_atomically

REPORT_FILE = 'report.html'
COURSE_FILE = 'report_data.json'
COURSE_KEYS = ('evaluations', 'snapshots', 'exact', 'returns')


def empty_course() -> dict:
    return {key: [] for key in COURSE_KEYS}


def load_course(exp_dir: str, up_to_env_steps: Optional[int] = None) -> Optional[dict]:
    """The course saved in ``exp_dir`` (None if there is none), without entries past ``up_to_env_steps``."""
    path = os.path.join(exp_dir, COURSE_FILE)
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            saved = json.load(f)
    except (OSError, ValueError):
        return None  # a damaged course only costs the curves' past, never the run
    course = empty_course()
    course['facts'] = saved.get('facts', {})
    for key in COURSE_KEYS:
        course[key] = [e for e in saved.get(key, [])
                       if up_to_env_steps is None or e.get('env_steps', 0) <= up_to_env_steps]
    return course


def ratings_now(league) -> dict:
    """Every active player's ratings now: ``{player_id: {elo, trueskill_mu, trueskill_sigma}}``."""
    out = {}
    for player in league.active_players:
        rating = league.ratings.summary(player.player_id)
        out[player.player_id] = {k: rating[k] for k in ('elo', 'trueskill_mu', 'trueskill_sigma')}
    return out


def write_report(exp_dir: str, league, course: dict, facts: dict) -> str:
    """Write the course and the page into ``exp_dir``; returns the page's path."""
    # Facts known while the run went on (its env) stay on the page written at its end.
    merged: Dict[str, object] = {'run': os.path.abspath(exp_dir)}
    merged.update(course.get('facts', {}))
    merged.update(facts)
    merged['updated'] = time.strftime('%Y-%m-%d %H:%M:%S')
    facts = merged
    course = dict(course, facts={k: v for k, v in facts.items() if k not in ('updated', 'phase')})
    _write_atomically(os.path.join(exp_dir, COURSE_FILE), json.dumps(course, default=float))
    path = os.path.join(exp_dir, REPORT_FILE)
    _write_atomically(path, render_report(league, course, facts))
    return path


def write_final_report(exp_dir: str, league, facts: Optional[dict] = None) -> Optional[str]:
    """The page of a run from the course it saved (at the end of a run, or ``sparring report RUN``); None
    when no course was saved (a league never evaluated, a single-agent run from before single-agent pages)."""
    course = load_course(exp_dir)
    if course is None:
        return None
    if course['returns']:  # a single agent's course
        return _write_returns_page(exp_dir, course, facts or {})
    if getattr(league, 'roster', None) is None:  # no league (a single agent's run) and no returns recorded
        return None
    steps = max((e['env_steps'] for key in COURSE_KEYS for e in course[key]), default=None)
    return write_report(exp_dir, league, course, dict({'env steps': steps} if steps is not None else {},
                                                      **(facts or {})))


def _write_atomically(path: str, text: str) -> None:
    write_atomically(path, text)


def return_entries(history: Sequence[dict], player_id: str, final: Optional[Tuple[int, float, dict]] = None) -> List[dict]:
    """A single-agent run's evaluations as course entries, from the coordinator's history (periodic ones) and
    ``final`` (env steps, seconds, report) when the last evaluation is not among them."""
    entries = [_return_entry(e['env_steps'], e['seconds'], e['eval'][player_id]) for e in history
               if 'return_mean' in e['eval'].get(player_id, {})]
    if final is not None and 'return_mean' in final[2] and all(e['env_steps'] != final[0] for e in entries):
        entries.append(_return_entry(*final))
    return entries


def _return_entry(env_steps: int, seconds: float, report: dict) -> dict:
    return dict(env_steps=int(env_steps), seconds=round(float(seconds), 2), mean=float(report['return_mean']),
                std=float(report['return_std']), episodes=int(report.get('episodes', 0)))


def write_return_report(exp_dir: str, entries: Sequence[dict], since_env_steps: int, facts: dict) -> str:
    """Write a single-agent run's course and page: the saved entries up to ``since_env_steps`` (where this
    process started: a resumed run keeps its past, not a future it no longer has), then ``entries``."""
    course = load_course(exp_dir, up_to_env_steps=since_env_steps) or empty_course()
    by_steps = {e['env_steps']: e for e in course['returns']}
    by_steps.update({e['env_steps']: e for e in entries if e['env_steps'] >= since_env_steps})  # this process's own
    course['returns'] = [by_steps[steps] for steps in sorted(by_steps)]
    return _write_returns_page(exp_dir, course, facts)


def _write_returns_page(exp_dir: str, course: dict, facts: dict) -> str:
    merged: Dict[str, object] = {'run': os.path.abspath(exp_dir)}
    merged.update(course.get('facts', {}))
    merged.update(facts)
    if course['returns']:
        merged['env steps'] = course['returns'][-1]['env_steps']
    merged['updated'] = time.strftime('%Y-%m-%d %H:%M:%S')
    course = dict(course, facts={k: v for k, v in merged.items() if k not in ('updated', 'phase')})
    _write_atomically(os.path.join(exp_dir, COURSE_FILE), json.dumps(course, default=float))
    path = os.path.join(exp_dir, REPORT_FILE)
    _write_atomically(path, render_return_report(course, merged))
    return path
