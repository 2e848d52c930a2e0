"""What a commander says about its run: the periodic progress line and figures, news of messages refused for
their date (a worker's clock far off), and the closing summary (:class:`ProgressReport`)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import numpy as np

from sparring.framework.coordinator import RunCoordinator
from sparring.framework.run_summary import RunSummary
from sparring.framework.sessions import SessionTable
from sparring.worker.logger import RunLogger, format_stats
from sparring.worker.remote.peer_guards import REPLAY_WINDOW_SECONDS


class ProgressReport:
    """The commander's reporting: it reads the coordinator and the session table, and keeps only when it last
    spoke (``every_seconds`` apart) and how many stale messages it has told of."""

    def __init__(self, coordinator: RunCoordinator, sessions: SessionTable, logger: Optional[RunLogger],
                 clock: Callable[[], float], say: Callable[[str], None], every_seconds: float, exp_dir: str,
                 started: float) -> None:
        self.coordinator, self.sessions, self.logger = coordinator, sessions, logger
        self.clock, self.say, self.every_seconds, self.exp_dir = clock, say, every_seconds, exp_dir
        # From where the run (re)starts: a resumed run's first line counts only the steps it made itself.
        self.last_line_at, self.last_line_steps = started, coordinator.env_steps
        self.stale_noted = 0
        # Messages the transport dropped, by reason (the wiring that owns the socket sets it).
        self.transport_rejects: Callable[[], Dict[str, int]] = dict

    def on_tick(self, now: float) -> None:
        """The tick's reporting. A figure that cannot be logged (a statistic TensorBoard refuses) costs a line in
        the log, never the run."""
        self._note_stale()
        if now - self.last_line_at >= self.every_seconds:
            try:
                self.log_progress()
            except Exception as err:  # noqa: BLE001 -- a statistic a peer sent must not end the tick
                self.last_line_at = now
                self.say(f'the progress line failed ({type(err).__name__}: {err}); the run goes on')

    def _note_stale(self) -> None:
        """Say in the log when signed messages were refused as too old or too new: the worker hears it too, but a
        clock that is far off should not hide in the commander's stderr."""
        stale, noted = self.transport_rejects().get('stale', 0), self.stale_noted
        if stale > noted:
            self.stale_noted = stale
            self.say(f'clock skew: {stale - noted} signed message(s) refused as dated more than '
                     f'{REPLAY_WINDOW_SECONDS:.0f} s away from this machine\'s clock: a worker whose clock is that '
                     f'far off cannot join (it is told by how much); synchronise the clocks (NTP). If they agree, '
                     f'someone replays old messages')

    def log_progress(self) -> None:
        """A progress line and the run figures, every ``parallel.log_every_seconds``."""
        now, co, logger = self.clock(), self.coordinator, self.logger
        if logger is None:
            return
        counters, workers = co.counters, self.sessions.workers.values()
        rate = (co.env_steps - self.last_line_steps) / max(now - self.last_line_at, 1e-9)
        self.last_line_at, self.last_line_steps = now, co.env_steps
        logger.progress(co.env_steps)
        learners = self.sessions.learners()
        staleness = [w.stats['staleness_mean'] for w in learners if 'staleness_mean' in w.stats]
        returns = co.recent_returns
        figures: Dict[str, Any] = dict(games=counters['games'] or None,
                                       historical=len(co.league.historical_players) or None,
                                       ret=float(np.mean(returns)) if returns else None)
        # What was dropped and why, as it happens (not only in the final summary).
        drops: Dict[str, float] = dict(
            results_refused=counters['results_refused'], params_refused=counters['params_refused'],
            requests_refused=counters['requests_refused'], chunks_reclaimed=counters['chunks_reclaimed'],
            duplicate_reports=counters['duplicate_reports'], snapshots_quarantined=counters['snapshots_quarantined'],
            results_quarantined=counters['results_quarantined'],
            **{f'learner_{k}': sum(w.stats.get(k, 0.0) for w in learners)
               for k in ('dropped_invalid', 'dropped_failed', 'dropped_stale', 'dropped_duplicate')},
            # what the learners' chunk sockets refused (a chunk that does not fit the player's spec: rejected_schema)
            **{f'learner_{k}': sum(w.stats.get(k, 0.0) for w in learners)
               for k in sorted({k for w in learners for k in w.stats if k.startswith('rejected_')})},
            **{f'rejected_{k}': v for k, v in self.transport_rejects().items()})
        figures['dropped'] = sum(drops.values()) or None
        run: Dict[str, Any] = dict(env_steps_per_second=rate, jobs_abandoned=counters['jobs_abandoned'],
                                   repeated_requests=counters['repeated_requests'], episode_return=figures['ret'],
                                   games=counters['games'], historical=len(co.league.historical_players))
        logger.scalars(run, co.env_steps, prefix='run/')
        logger.scalars(drops, co.env_steps, prefix='run/dropped/')
        line: Dict[str, Any] = dict(phase=co.phase, steps=co.env_steps, sps=int(rate), **figures,
                                    iters='/'.join(str(co.players[p].train_iteration) for p in co.player_ids),
                                    workers=len(workers), stale=float(np.mean(staleness)) if staleness else None)
        logger.line(format_stats(line))

    def summary(self, pictures: List[str], state_path: str) -> RunSummary:
        """What ``parallel_pipeline`` returns (a single-agent run also reports its return like a serial one)."""
        co = self.coordinator
        first = co.last_eval.get(co.player_ids[0], {})
        summary = RunSummary(exp_dir=self.exp_dir, env_steps=co.env_steps, wall_seconds=co.wall_seconds,
                             env_steps_per_second=co.env_steps / max(co.wall_seconds, 1e-9),
                             train_iterations={p: c.train_iteration for p, c in co.players.items()},
                             eval=co.last_eval, reached_stop_value=co.reached is not None,
                             stop_env_steps=co.reached[0] if co.reached else None,
                             stop_seconds=co.reached[1] if co.reached else None,
                             stop_reason=co.stop_reason, games=co.counters['games'], counters=dict(co.counters),
                             worker_stats=dict(self.sessions.stats), pictures=pictures, checkpoint=state_path,
                             league_table=co.league.table() or None, exact=co.last_exact, history=co.history)
        if 'return_mean' in first:
            summary['eval_mean'], summary['eval_std'] = first['return_mean'], first['return_std']
        return summary
