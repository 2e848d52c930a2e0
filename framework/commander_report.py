"""What a commander says about its run: the periodic progress line and figures, news of messages refused for
their date (a worker's clock far off), and the closing summary."""
from __future__ import annotations

from typing import List

import numpy as np

from sparring.worker.logger import format_stats
from sparring.worker.remote.peer_guards import REPLAY_WINDOW_SECONDS


def on_tick(commander, now: float) -> None:
    """The tick's reporting. A figure that cannot be logged (a statistic TensorBoard refuses) costs a line in
    the log, never the run."""
    _note_stale(commander)
    if now - commander.last_line_at >= commander.par.log_every_seconds:
        try:
            log_progress(commander)
        except Exception as err:  # noqa: BLE001 -- a statistic a peer sent must not end the tick
            commander.last_line_at = now
            commander.say(f'the progress line failed ({type(err).__name__}: {err}); the run goes on')


def _note_stale(commander) -> None:
    """Say in the log when signed messages were refused as too old or too new: the worker hears it too, but a
    clock that is far off should not hide in the commander's stderr."""
    stale, noted = commander.transport_rejects().get('stale', 0), getattr(commander, 'stale_noted', 0)
    if stale > noted:
        commander.stale_noted = stale
        commander.say(f'clock skew: {stale - noted} signed message(s) refused as dated more than '
                      f'{REPLAY_WINDOW_SECONDS:.0f} s away from this machine\'s clock: a worker whose clock is that '
                      f'far off cannot join (it is told by how much); synchronise the clocks (NTP). If they agree, '
                      f'someone replays old messages')


def log_progress(commander) -> None:
    """A progress line and the run figures, every ``parallel.log_every_seconds``."""
    now = commander.clock()
    if commander.logger is None:
        return
    rate = (commander.env_steps - commander.last_line_steps) / max(now - commander.last_line_at, 1e-9)
    commander.last_line_at, commander.last_line_steps = now, commander.env_steps
    commander.logger.progress(commander.env_steps)
    staleness = [w.stats['staleness_mean'] for w in commander.workers.values()
                 if w.role == 'learner' and 'staleness_mean' in w.stats]
    returns = commander.coordinator.recent_returns
    figures = dict(games=commander.counters['games'] or None, historical=len(commander.league.historical_players) or None,
                   ret=float(np.mean(returns)) if returns else None)
    # What was dropped and why, as it happens (not only in the final summary).
    drops = dict(results_refused=commander.counters['results_refused'],
                 params_refused=commander.counters['params_refused'],
                 requests_refused=commander.counters['requests_refused'],
                 chunks_reclaimed=commander.counters['chunks_reclaimed'],
                 duplicate_reports=commander.counters['duplicate_reports'],
                 snapshots_quarantined=commander.counters['snapshots_quarantined'],
                 results_quarantined=commander.counters['results_quarantined'],
                 **{f'learner_{k}': sum(w.stats.get(k, 0.0) for w in commander.workers.values() if w.role == 'learner')
                    for k in ('dropped_invalid', 'dropped_stale', 'dropped_duplicate')},
                 **{f'rejected_{k}': v for k, v in commander.transport_rejects().items()})
    figures['dropped'] = sum(drops.values()) or None
    commander.logger.scalars(dict(env_steps_per_second=rate, jobs_abandoned=commander.counters['jobs_abandoned'],
                             repeated_requests=commander.counters['repeated_requests'],
                             episode_return=figures['ret'], games=commander.counters['games'],
                             historical=len(commander.league.historical_players)), commander.env_steps, prefix='run/')
    commander.logger.scalars(drops, commander.env_steps, prefix='run/dropped/')
    commander.logger.line(format_stats(dict(
        phase=commander.phase, steps=commander.env_steps, sps=int(rate), **figures,
        iters='/'.join(str(commander.coordinator.players[p].train_iteration) for p in commander.player_ids),
        workers=len(commander.workers), stale=float(np.mean(staleness)) if staleness else None)))

def summary(commander, pictures: List[str], state_path: str) -> dict:
    """What ``parallel_pipeline`` returns (a single-agent run also reports its return like a serial one)."""
    first = commander.last_eval.get(commander.player_ids[0], {})
    extra = dict(eval_mean=first['return_mean'], eval_std=first['return_std']) if 'return_mean' in first else {}
    return dict(extra, exp_dir=commander.exp_dir, env_steps=commander.env_steps, wall_seconds=commander.wall_seconds,
                env_steps_per_second=commander.env_steps / max(commander.wall_seconds, 1e-9),
                train_iterations={p: c.train_iteration for p, c in commander.coordinator.players.items()}, eval=commander.last_eval,
                reached_stop_value=commander.reached is not None,
                stop_env_steps=commander.reached[0] if commander.reached else None,
                stop_seconds=commander.reached[1] if commander.reached else None,
                stop_reason=commander.stop_reason, games=commander.counters['games'],
                counters=dict(commander.counters), worker_stats=dict(commander.worker_stats), pictures=pictures,
                checkpoint=state_path, league_table=commander.league.table() or None,
                exact=commander.coordinator.last_exact, history=commander.coordinator.history)
