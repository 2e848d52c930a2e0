"""The serial entry point: collect -> learn -> evaluate in one process, with checkpoints and resume.

``serial_pipeline(config, seed=0)`` compiles the config and trains in one process with the same
classes and the same run coordinator the parallel mode uses (:class:`~sparring.framework.serial_run.SerialRun`):
a league of players for a game of two seats or of more, one agent otherwise. It loops until the coordinator's stop rule
ends collection (env-step or wall-time budget, or ``env.stop_value`` reached by the first player),
then evaluates what is out of date. Every ``train.checkpoint_every_iters`` rounds, and at the end, it
saves learners, counters, league state and RNG states; ``resume=True`` continues from the newest
checkpoint.
"""
from __future__ import annotations

from typing import Dict, List, Optional

from sparring.framework.report_page import return_entries, write_return_report
from sparring.framework.run_setup import closing_report, prepare_config
from sparring.framework.run_summary import RunSummary
from sparring.framework.serial_run import SerialRun
from sparring.framework.horizon import log_horizon
from sparring.framework.interrupts import raise_if_stopped, shielded, terminate_as_interrupt
from sparring.worker.checkpoint import CheckpointManager
from sparring.config.compile import CompiledConfig, apply_overrides, save_config
from sparring.worker.logger import RunLogger, device_line, format_stats
from sparring.worker.runtime import seed_everything, set_torch_threads


def serial_pipeline(config: dict, seed: Optional[int] = None, exp_name: Optional[str] = None,
                    resume: bool = False, max_env_steps: Optional[int] = None) -> RunSummary:
    """Train; returns a summary dict (:class:`~sparring.framework.run_summary.RunSummary`: steps, seconds, the
    last evaluation; a league's table and pictures). ``max_env_steps`` overrides the config's budget; a new run records it in its config.json."""
    config = budget_recorded(config, max_env_steps, resume)
    cfg = prepare_config(config, seed=seed, exp_name=exp_name, resume=resume, max_env_steps=max_env_steps)
    if resume:  # config.json holds what the run goes on with: the budgets and settings a resume changed
        save_config(cfg, cfg.exp_name)
    set_torch_threads(cfg.torch_threads)
    seed_everything(cfg.seed)
    ckpt = CheckpointManager(cfg.exp_name)
    state = ckpt.load_latest() if resume else None
    with RunLogger(cfg.exp_name, cfg.train.max_env_steps, cfg.train.tensorboard, cfg.train.progress_bar) as log:
        run = SerialRun(cfg, state, say=log.line, logger=log)
        try:
            log.progress(run.env_steps)
            device = device_line(cfg.policy)
            if device:
                log.line(device)
            if state is not None:
                log.line(f'resumed from {ckpt.resumed_from} at {run.env_steps} env steps, round {run.rounds}')
            log_horizon(log, cfg)
            with terminate_as_interrupt():
                return _loop(cfg, run, ckpt, log)
        finally:
            run.close()


def budget_recorded(config: dict, max_env_steps: Optional[int], resume: bool) -> dict:
    """The config with a new run's ``max_env_steps`` override in it, so that its config.json holds the budget
    the run used (a resumed run keeps its saved config; prepare_config applies the override to it)."""
    if max_env_steps is None or resume or isinstance(max_env_steps, bool) or not isinstance(max_env_steps, int) \
            or max_env_steps < 1:
        return config  # prepare_config refuses a bad value with its own message
    return apply_overrides(config, [('train.max_env_steps', max_env_steps)])


def _loop(cfg: CompiledConfig, run: SerialRun, ckpt: CheckpointManager, log: RunLogger) -> RunSummary:
    coordinator = run.coordinator

    def save() -> str:
        run.wall_seconds = coordinator.wall_seconds
        return ckpt.save(run.state_dict(), run.rounds)

    coordinator.check_budget()  # a resumed run may have spent its budget already
    try:
        _collect(cfg, run, log, save)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: keep what was done, then stop
        with shielded():
            path = save()
        log.line(f'interrupted after {run.env_steps} env steps: saved {path}; resume=True (--resume) continues')
        raise
    _finish(cfg, run, log)
    path = save()
    single_agent_page(run, final=True)  # before the closing report, which names the page
    pictures = closing_report(run.league, run.last_eval, cfg.exp_name, log.line,
                              run.coordinator.kind.evaluation_class.opponent_rates)
    log.line(f'checkpoint: {path}')
    if run.coordinator.exact is not None and run.last_exact:
        log.line(run.coordinator.exact_figures.line(run.last_exact))
    return _summary(cfg, run, path, pictures)


def _collect(cfg: CompiledConfig, run: SerialRun, log: RunLogger, save) -> None:
    """Rounds until the coordinator's stop rule ends collection, with the periodic evaluations and checkpoints."""
    train, coordinator = cfg.train, run.coordinator
    first = run.player_ids[0]
    before = (run.env_steps, coordinator.wall_seconds)  # the speed TensorBoard gets is the last round's, as parallel's
    while coordinator.phase == 'collect':
        raise_if_stopped()
        stats = run.train_round()
        steps, elapsed = run.env_steps, coordinator.wall_seconds
        rate = (steps - before[0]) / max(elapsed - before[1], 1e-9)
        before = (steps, elapsed)
        for pid, s in stats.items():
            log.scalars(s, steps, prefix=run.kind.train_prefix(pid))
        log.progress(steps)
        line = _round_line(run, stats, steps, elapsed)
        # The tags a parallel run's commander writes (run/...), so one TensorBoard view serves both modes.
        log.scalars(dict(episode_return=line['ret'], env_steps_per_second=rate), steps, prefix='run/')
        evaluated = run.evaluate_pending()
        if first in evaluated:
            line.update(_eval_figures(run, evaluated[first]))
            single_agent_page(run)
        log.line(format_stats(line))
        if train.checkpoint_every_iters and run.rounds % train.checkpoint_every_iters == 0:
            save()
        coordinator.check_budget()  # after the round: its due evaluations were played above
        coordinator.check_time()


def _finish(cfg: CompiledConfig, run: SerialRun, log: RunLogger) -> None:
    """The final evaluation of every player whose last one is out of date."""
    coordinator = run.coordinator
    run.settle_evaluations()  # what is still in the background counts before the final evaluation is chosen
    run.exploits.finish()
    coordinator.begin_final_evaluation()
    finals = [job['player_id'] for job in coordinator.pending]
    if finals:
        evaluated = run.evaluate_pending()
        log.line('final evaluation: ' + ', '.join(
            f'{pid} ' + format_stats(_eval_figures(run, report)) for pid, report in evaluated.items()))
    coordinator.check_evaluated()


def single_agent_page(run, final: bool = False):
    """Write a single-agent run's report page (its return curve) from the evaluations so far; None for a league
    (whose page the league watch writes)."""
    if run.kind.is_league:
        return None
    coordinator, first = run.coordinator, run.player_ids[0]
    last = (run.env_steps, coordinator.wall_seconds, run.last_eval[first]) if final and first in run.last_eval else None
    return write_return_report(run.cfg.exp_name, return_entries(coordinator.history, first, last),
                               run.started_at_steps,
                               {'env': run.cfg.env.get('id') or run.cfg.env.type, 'phase': 'done' if final else 'training'})


def _round_line(run: SerialRun, stats: Dict[str, dict], steps: int, elapsed: float) -> dict:
    """The figures of a round's log line; each policy reports the figures it has (None ones are left out)."""
    returns = run.coordinator.recent_returns
    return {run.kind.round_label: run.rounds, 'steps': steps,
            'ret': sum(returns) / len(returns) if returns else None, 'vloss': _mean_stat(stats, 'value_loss'),
            'kl': _mean_stat(stats, 'approx_kl'), 'ent': _mean_stat(stats, 'entropy'),
            'eps': _mean_stat(stats, 'epsilon'), 'sps': int(steps / max(elapsed, 1e-9)),
            'historical': len(run.league.historical_players) or None,
            'games': sum(s['games'] for s in stats.values()) or None}


def _eval_figures(run: SerialRun, report: dict) -> dict:
    """The log-line figures of one evaluation report (a return's mean and spread, win/draw per opponent, or chips),
    and the first player's exact figures when the run measures them."""
    figures = run.kind.evaluation_class.figures(report)
    if run.coordinator.exact is not None and run.last_exact:
        figures.update(run.coordinator.exact_figures.figures(run.last_exact, run.player_ids[0]))
    return figures


def _mean_stat(stats: Dict[str, dict], key: str) -> Optional[float]:
    """The players' mean of one training figure, None when the policy does not report it."""
    values = [s[key] for s in stats.values() if key in s]
    return sum(values) / len(values) if values else None


def _summary(cfg: CompiledConfig, run: SerialRun, checkpoint: str, pictures: List[str]) -> RunSummary:
    coordinator, first = run.coordinator, run.player_ids[0]
    reached = coordinator.reached
    summary = RunSummary(exp_dir=cfg.exp_name, env_steps=run.env_steps, wall_seconds=coordinator.wall_seconds,
                         reached_stop_value=reached is not None, stop_env_steps=reached[0] if reached else None,
                         stop_seconds=reached[1] if reached else None, checkpoint=checkpoint)
    if run.kind.is_league:
        summary['rounds'], summary['exact'], summary['history'] = run.rounds, run.last_exact, run.history
        summary['eval'], summary['pictures'], summary['league_table'] = run.last_eval, pictures, run.league.table()
        if coordinator.seat_games.seats > 2:  # a league of three or more seats also says how many games it trained on
            summary['games'] = coordinator.counters['games']
    else:
        collector, report = run.collectors[first], run.last_eval[first]
        summary['train_iter'] = run.learners[first].train_iter
        summary['eval_mean'], summary['eval_std'] = report['return_mean'], report['return_std']
        summary['collect_steps_per_second'] = collector.env_steps / max(collector.collect_seconds, 1e-9)
    return summary
