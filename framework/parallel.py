"""The parallel entry point: a commander in this process, collector / learner / evaluator processes around it.

``parallel_pipeline(config, seed=None, exp_name=None, resume=False, max_env_steps=None)`` takes
the same config as :func:`~sparring.framework.serial_pipeline` (a league, or a single-agent env
trained as one player) and

1. compiles it (``resume=True`` reuses the saved one) and builds the
   :class:`~sparring.framework.commander.Commander`, whose ZeroMQ socket listens on
   ``parallel.host:parallel.port`` (127.0.0.1 and a free port by default);
2. starts ``parallel.collectors`` collectors, a learner per active player,
   ``parallel.evaluators`` evaluators and ``parallel.inference.workers`` forward-pass workers (which run
   the collectors' networks in batches; :mod:`~sparring.worker.remote.inference`) as local processes, forked by a multiprocessing fork server
   that has torch and sparring imported already (a worker starts in milliseconds, a restarted one
   too), each in a session of its own and exiting when this process does;
3. serves them until the budget is spent (or the stop value reached), the learners have trained on
   every chunk sent to them and the final evaluation is in; a local worker that dies is restarted
   (up to ``parallel.max_restarts`` times), and its unfinished games are abandoned;
4. stops every worker, kills what does not exit in ``parallel.shutdown_seconds``, saves the
   league state, prints the league table and returns a summary. Ctrl-C (or SIGTERM) takes the same
   way out, saving the state so that ``resume=True`` continues the run.

A write that fails (a full disk: :class:`~sparring.worker.run_files.StorageFailure`, from the journal, the
snapshot or a parameter file) stops the run as a database stops on a failed write of its log: no reply of the
batch being answered goes out, nothing more is saved (the commander may hold what the disk could not take), the
workers are stopped and the error names the disk and its free space. The journal and the last snapshot hold
everything acknowledged, so ``resume=True`` continues once space is freed.

Workers on other machines join with ``sparring worker --role collector --commander
tcp://HOST:PORT`` (the address is printed at the start and written to
``<exp_name>/commander/address``); that needs ``parallel.host`` set to a reachable interface and a
shared secret in ``$SPARRING_SECRET`` (or ``parallel.key_file``) on every machine, or CURVE keys.
Without a secret, a local run makes one up and hands it only to its own workers.
"""
from __future__ import annotations

import errno
import os
import time
from typing import TYPE_CHECKING, Optional, Union

from sparring.config.compile import save_config
from sparring.config.schema import ConfigError
from sparring.framework.commander import Commander
from sparring.framework.interrupts import raise_if_stopped, shielded, terminate_as_interrupt
from sparring.framework.live_policies import LivePolicies
from sparring.framework.local_launcher import LocalLauncher, worker_context
from sparring.framework.messaging import Security
from sparring.framework.report_page import return_entries, write_return_report
from sparring.framework.run_setup import LEAGUE_STATE_FILE, closing_report, prepare_config
from sparring.framework.run_summary import RunSummary
from sparring.framework.serial import budget_recorded
from sparring.framework.sessions import learner_id
from sparring.worker.logger import RunLogger, device_line
from sparring.worker.remote.base import EXIT_DISK_FULL, EXIT_ID_HELD
from sparring.worker.remote.replicas import check_replica_config
from sparring.worker.remote.transport import Server, advertised_address
from sparring.worker.remote.security import CurveGuard, check_bind, is_loopback
from sparring.worker.remote.wire import SECRET_ENV, Signer, load_secret, new_secret
from sparring.worker.run_kind import run_kind
from sparring.worker.run_files import StorageFailure, write_atomically
from sparring.worker.runtime import seed_everything, set_torch_threads
from sparring.worker.seeds import LEAGUE_EVAL_SEED_OFFSET

if TYPE_CHECKING:  # imported where it is used: Ray is an optional dependency
    from sparring.framework.ray_launcher import RayLauncher

REQUESTS_PER_PEER = 4  # a worker has one request and one heartbeat in flight, each on a connection of its own
REQUEST_HEADER_BYTES = 256 << 10  # the largest request header (a publish's statistics) is a few kB
SERVE_SLICE_SECONDS = 0.05
# Requests whose replies tell a worker that what it sent is recorded: games, evaluation results, iterations.
ACKNOWLEDGES_RECORDS = frozenset({'chunk_report', 'eval_report', 'publish'})
SYNC_BATCH = 64  # requests answered per journal sync, at most: a bound on how long the first waits for its reply


def request_limit(commander: Commander) -> int:
    """The largest request a worker may send: a publish of the parameters, with room to spare."""
    co = commander.coordinator
    largest = max(sum(t.numel() * t.element_size() for t in co.store.get(ref)['params'].values())
                  for ref in {co.initial_ref(pid) for pid in co.player_ids})
    return (2 << 20) + 2 * largest


class ParallelRun:
    """A commander and its local workers, stepped by the caller (``parallel_pipeline`` loops ``step``)."""

    def __init__(self, cfg, resume: bool = False) -> None:
        import zmq
        check_replica_config(cfg)
        if cfg.battle.get('exploit') is not None:
            raise ConfigError('config key "battle.exploit": exploiters at evaluations run in serial mode; exploit a '
                              'parallel run\'s players afterwards with `sparring exploit RUN --budget-steps N`')
        if cfg.parallel.launcher == 'local':
            worker_context()  # the fork server imports the workers' modules while this process builds the commander
        self.cfg = cfg
        par = cfg.parallel
        secret = None
        if par.auth == 'hmac':
            loaded = load_secret(par.key_file)
            if loaded is None and not is_loopback(par.host):
                raise ConfigError(f'config key "parallel.auth": "hmac" on host {par.host!r} needs a shared secret that '
                                  f'remote workers know: set ${SECRET_ENV} or parallel.key_file')
            secret = loaded.decode('utf-8') if loaded is not None else new_secret()
        if par.auth == 'curve' and not par.curve_dir:
            raise ConfigError('config key "parallel.curve_dir": auth="curve" needs the keys directory '
                              '(sparring.worker.remote.security.create_curve_keys)')
        self.security = Security(Signer(secret.encode('utf-8') if secret else None),
                                 par.curve_dir if par.auth == 'curve' else None)
        check_bind(par.host, self.security.secured)
        self.context = zmq.Context()
        self.curve_guard = None
        self.logger = RunLogger(cfg.exp_name, cfg.train.max_env_steps, cfg.train.tensorboard, cfg.train.progress_bar)
        try:
            if par.auth == 'curve':
                self.curve_guard = CurveGuard(self.context, par.curve_dir)
            self.commander = Commander(cfg, resume=resume, logger=self.logger)
            self.logger.progress(self.commander.coordinator.env_steps)
            self.started_at_steps = self.commander.coordinator.env_steps  # where this process took the run up
            # What an unauthenticated peer can make the commander buffer and hash is bounded: no request is
            # larger than a publish of the parameters, headers are small, and each peer has a few in flight.
            self.server = Server(self.context, par.host, par.port, self.security,
                                 max_message_bytes=min(par.max_message_mb << 20, request_limit(self.commander)),
                                 queue=REQUESTS_PER_PEER, max_header_bytes=REQUEST_HEADER_BYTES)
        except BaseException:  # e.g. nothing to resume, or the port is taken
            if hasattr(self, 'commander'):
                self.commander.close()
            if self.curve_guard is not None:
                self.curve_guard.stop()
            self.context.destroy(linger=0)
            self.logger.close()
            raise
        self.commander.report.transport_rejects = lambda: dict(self.server.rejected.counts)
        if cfg.battle.exact_analysis:  # the nash branch's meta-game and exploitability, from the published players
            self.commander.coordinator.use_exact_analysis(LivePolicies(self.commander).get)
        self.address = advertised_address(self.server.address, par.advertise_host)
        write_atomically(os.path.join(self.commander.dir, 'address'), self.address + '\n')
        self.launcher: Union[RayLauncher, LocalLauncher]
        if par.launcher == 'ray':
            from sparring.framework.ray_launcher import RayLauncher
            self.launcher = RayLauncher(cfg.exp_name, self.address, secret, self.security.curve_dir, par.host, par)
        else:
            self.launcher = LocalLauncher(cfg.exp_name, self.server.address, secret, self.security.curve_dir,
                                          par.host)
        device = device_line(cfg.policy)
        if device:
            self.logger.line(device + ' here; each learner resolves policy.device in its own process')
        self.logger.line(f'commander at {self.address} ({self.security.describe()}); join a worker from another '
                         f'machine with: sparring worker --role collector --commander {self.address}')
        self.closed = False
        self.failed: Optional[StorageFailure] = None  # a write that failed: the run stops without saving

    # -- running ------------------------------------------------------------------------------
    def start(self) -> None:
        par = self.cfg.parallel
        if par.local_learners:
            for pid in self.commander.coordinator.player_ids:
                for replica in range(par.learner_replicas):
                    self.launcher.start(learner_id(pid, replica), 'learner', pid, replica)
        for i in range(par.inference.workers):  # before the collectors, which wait for their address files
            self.launcher.start(f'inference-{i}', 'inference')
        for i in range(par.collectors):
            self.launcher.start(f'collector-{i}', 'collector')
        for i in range(par.evaluators):
            self.launcher.start(f'evaluator-{i}', 'evaluator')

    @property
    def finished(self) -> bool:
        return self.commander.coordinator.phase == 'done'

    def step(self, seconds: float = SERVE_SLICE_SECONDS) -> None:
        """Serve requests for about ``seconds``, then look after the processes and the run's course."""
        try:
            self.serve(seconds)
            for worker_id, code in self.launcher.poll():
                self._exited(worker_id, code)
            self.commander.tick()
            if self.commander.coordinator.phase == 'evaluate' and not self.cfg.parallel.evaluators:
                self._evaluate_here()
        except StorageFailure as err:
            self.failed = err
            raise

    def serve(self, seconds: float) -> None:
        """Answer requests for about ``seconds``. The requests waiting are handled as a batch; when one of them is
        told its results or iteration were recorded, the journal is made durable by one sync before any reply of
        the batch goes out: a worker hears "recorded" only for what a crash cannot take back, at the cost of one
        fsync per batch rather than per request. Other commits (jobs handed out, abandoned ones) ride along."""
        deadline = time.monotonic() + seconds
        while True:
            got = self.server.recv(max(0.0, deadline - time.monotonic()))
            if got is None:
                return
            batch = [got]
            while len(batch) < SYNC_BATCH and got is not None:
                got = self.server.recv(0.0)
                batch += [got] if got is not None else []
            try:
                replies = [(peer, message, self._answer(message)) for peer, message in batch]
                if any(message.kind in ACKNOWLEDGES_RECORDS for _, message in batch):
                    self.commander.state.journal.sync()
            except StorageFailure as err:  # fatal: no reply of the batch goes out (see the module)
                self.failed = err
                raise
            for peer, message, (kind, body, arrays) in replies:
                self.server.reply(peer, message.id, kind, body, arrays)

    def _answer(self, message):
        try:
            return self.commander.handle(message)
        except StorageFailure:  # what the request changed is not on the disk: the run stops, it does not answer
            raise
        except Exception as err:  # noqa: BLE001 -- a bug must not take the run down with one worker's request
            self.logger.line(f'commander: {type(err).__name__} handling a {message.kind!r} from '
                             f'{message.sender}: {err}')
            return 'error', dict(error=f'commander failed: {err}', reason='internal'), None

    def _wanted(self, role: str) -> bool:
        phase = self.commander.coordinator.phase
        if role == 'collector':
            return phase == 'collect'
        if role == 'learner':
            return phase in ('collect', 'drain')
        return phase != 'done'

    def _exited(self, worker_id: str, code: int) -> None:
        if worker_id in self.launcher.processes:
            return  # already started again, with its replica group (it died in the same moment as another)
        self.commander.drop_worker_id(worker_id, f'process exited with code {code}')
        role, player_id, replica = self.launcher.roles[worker_id]
        if not self._wanted(role):
            return
        if code == EXIT_DISK_FULL:  # its files could not be written (a checkpoint): a restart would fail the same way
            last_line = (self.launcher.tail(worker_id).strip().splitlines() or ['a write failed'])[-1]
            failure = StorageFailure(f'{worker_id} stopped: {last_line.split(" ERROR ", 1)[-1][:500]}')
            failure.errno = errno.ENOSPC
            raise failure
        if role == 'learner' and player_id is not None and self.cfg.parallel.learner_replicas > 1:
            # A replica's group cannot go on without it: the player's replicas start again together, lead first.
            group = [learner_id(player_id, r) for r in range(self.cfg.parallel.learner_replicas)]
            for other in group:
                if other != worker_id and other in self.launcher.processes:
                    self.launcher.kill(other)
                    self.commander.drop_worker_id(other, 'its replica group broke')
            for member in group:
                if member != worker_id:
                    self.launcher.restart(member)
        restarts = self.launcher.restarts.get(worker_id, 0)
        if code == EXIT_ID_HELD:  # someone else's register held its id: no failure of the worker's, none counted
            pid = self.launcher.restart(worker_id, counted=False)
            self.logger.line(f'{worker_id} found its id held by another live worker; restarted as pid {pid} '
                             f'(not counted as a failure)')
            return
        if restarts >= self.cfg.parallel.max_restarts:
            raise RuntimeError(f'{worker_id} died {restarts + 1} times (last exit code {code}); its last output '
                               f'({self.launcher.output_path(worker_id)}):\n{self.launcher.tail(worker_id)}')
        # A worker that chose to exit said why as its last words; a killed one has none worth repeating.
        last_words = self.launcher.tail(worker_id).strip().splitlines()[-1:] if code > 0 else []
        pid = self.launcher.restart(worker_id)
        self.logger.line(f'{worker_id} exited with code {code}; restarted as pid {pid} '
                         f'(restart {restarts + 1} of at most {self.cfg.parallel.max_restarts})'
                         + ''.join(f'; its last words: {line[:300]}' for line in last_words))

    def _evaluate_here(self) -> None:
        """The final evaluation in this process, for a run without evaluator workers."""
        cfg, commander = self.cfg, self.commander
        policies = LivePolicies(commander, pool_seed=cfg.seed + LEAGUE_EVAL_SEED_OFFSET)
        evaluation = run_kind(cfg).evaluation()
        try:
            for job in commander.evals.finals_pending():
                policy = policies.get(job['player_id'])
                opponents = commander.coordinator.readable_eval_opponents(job['player_id'])
                results, returns = evaluation(policy, opponents, policies.pool)
                commander.finish_pending_evaluation(job, results, returns, version=policy.version)
        finally:
            evaluation.close()

    # -- ending -------------------------------------------------------------------------------
    def close(self, abort: Optional[str] = None) -> RunSummary:
        """Stop every worker, save, report; returns the summary. ``abort`` (why: 'interrupted', an
        error) ends the run early: the state is saved for a resume, without the closing report. Ctrl-C
        or SIGTERM meanwhile cannot cut it short."""
        if self.closed:
            raise RuntimeError('ParallelRun.close: already closed')
        self.closed = True
        with shielded() as came:
            return self._close(abort, came)

    def _close(self, abort: Optional[str], signals: list) -> RunSummary:
        commander = self.commander
        co = commander.coordinator
        if abort and co.phase != 'done':
            co.stop_reason = abort
            saving = 'saving the run' if self.failed is None else 'saving nothing (a write failed)'
            self.logger.line(f'{abort}: stopping the workers and {saving} (resume=True continues it)')
        co.phase = 'done'  # every heartbeat and request is now answered with "stop"
        try:
            deadline = time.monotonic() + self.cfg.parallel.shutdown_seconds
            while self.failed is None and self.launcher.processes and time.monotonic() < deadline:
                try:
                    self.serve(SERVE_SLICE_SECONDS)
                except StorageFailure:
                    break
                self.launcher.poll()
            if self.launcher.processes:
                self.logger.line(f'workers still running after {self.cfg.parallel.shutdown_seconds:.0f} s: '
                                 f'{sorted(self.launcher.processes)}; terminating them')
            self.launcher.stop(timeout=5.0)
            if self.failed is not None:
                # The commander may hold what the disk could not take: nothing of it is saved. The journal and the
                # last snapshot hold everything acknowledged; a resume continues from them once space is freed.
                self.logger.line(f'stopped, nothing saved: {self.failed}')
                raise self.failed
            state_path = commander.save()
            co.league.save(os.path.join(commander.exp_dir, LEAGUE_STATE_FILE))  # where a serial run keeps it
            pictures = []
            if not abort:  # the table and pictures, as a serial run ends
                if not run_kind(self.cfg).is_league:  # a single agent's page (its return curve), which the report names
                    first = co.player_ids[0]
                    final = (co.env_steps, co.wall_seconds, co.last_eval.get(first, {}))
                    write_return_report(commander.exp_dir, return_entries(co.history, first, final),
                                        self.started_at_steps, {'env': self.cfg.env.get('id') or self.cfg.env.type})
                pictures = closing_report(co.league, co.last_eval, commander.exp_dir, self.logger.line,
                                          co.kind.evaluation_class.opponent_rates)
            summary = commander.report.summary(pictures, state_path)
            summary['restarts'] = dict(self.launcher.restarts)
            summary['rejected_messages'] = dict(self.server.rejected.counts)
            self.logger.line(f'{summary["env_steps"]} env steps in {summary["wall_seconds"]:.1f} s '
                             f'({summary["env_steps_per_second"]:.0f} env steps/s); state: {state_path}')
            return summary
        finally:
            if signals:
                self.logger.line(f'signal {signals[0]} came while the run was saving; the save went first')
            commander.close()
            self.server.close()
            if self.curve_guard is not None:
                self.curve_guard.stop()
            self.context.term()
            self.logger.close()


def parallel_pipeline(config: dict, seed: Optional[int] = None, exp_name: Optional[str] = None,
                      resume: bool = False, max_env_steps: Optional[int] = None) -> RunSummary:
    """Train with a commander and worker processes; returns a summary dict (see the module)."""
    config = budget_recorded(config, max_env_steps, resume)
    cfg = prepare_config(config, seed=seed, exp_name=exp_name, resume=resume, max_env_steps=max_env_steps)
    if resume:  # config.json holds what the run goes on with: the budgets and settings a resume changed
        save_config(cfg, cfg.exp_name)
    set_torch_threads(cfg.torch_threads)
    seed_everything(cfg.seed)
    run = ParallelRun(cfg, resume=resume)
    with terminate_as_interrupt():
        try:
            run.start()
            while not run.finished:
                raise_if_stopped()
                run.step()
        except KeyboardInterrupt:
            run.close(abort='interrupted')
            raise
        except BaseException as err:
            if not run.closed:
                run.close(abort=f'failed ({type(err).__name__})')
            raise
        return run.close()

