"""The commander of a parallel run: it owns the league, the job queue, the parameter store and the run's state.

Workers talk to it by request and reply (:class:`~sparring.framework.messaging.Server`); the
request kinds and what the commander does with them:

``register``        a worker joins; it gets the compiled config, its index and, for a learner, its player
``heartbeat``       liveness both ways; the reply carries the run's state (``run``, ``drain``, ``stop``)
``collect_task``    which player to collect the next chunk for, and where that player's learner listens
``jobs``            a batch of league jobs (``get_job_info``): one opponent per game a collector plays
``chunk_report``    a chunk's finished games ``[job_id, outcome]`` and its env steps (``finish_job``)
``params_request``  parameters by reference; only sent when newer than the version the worker holds
``publish``         a learner's parameters and train iteration (``update_active_player``, ``judge_snapshot``)
``eval_task``, ``eval_report``  evaluation jobs against the reference players, and their results

Exactly once: every game is a league job with an id, and a result counts only while its job is
outstanding with the worker that reports it; a repeated report (same chunk id) or a result of an
abandoned job is refused and counted. A worker silent for ``parallel.worker_timeout_seconds``, or
whose local process died, is dropped: its outstanding jobs are abandoned (a game is recorded whole
or not at all), its collect task goes to another collector, its evaluation job back to the queue.

Back-pressure: a player gets no new collect task while its learner has ``parallel.max_chunks_ahead``
chunks reported but not yet taken (learners say how many they took with each publish), so a slow
learner holds its collectors back instead of training on stale data.

Persistence: every league change is applied, then appended to ``commander/journal.jsonl`` (the
commit point); ``commander/state.npz`` snapshots the league and the bookkeeping together (one
atomic file) every ``parallel.save_every_seconds``. Resuming loads the snapshot and replays the
journal's tail, so a commander killed at any moment comes back with exactly the games, iterations
and snapshots it had committed.

A single-agent config (no league) has one player, ``'agent'``, no jobs or games, and is evaluated
by episode return.
"""
from __future__ import annotations

import dataclasses
import glob
import json
import logging
import os
import shutil
import time
from collections import defaultdict, deque
from typing import Callable, Deque, Dict, List, Optional, Set, Tuple

import numpy as np

from sparring.config.compile import to_plain
from sparring.framework.league_pipeline import INIT_REF, evaluation_opponents, min_score
from sparring.framework.logger import format_stats
from sparring.framework.messaging import Message, MessageError, arrays_to_params, params_to_arrays
from sparring.config.registry import LEAGUE_REGISTRY, POLICY_REGISTRY
from sparring.framework.workers import env_spaces
from sparring.league.persistence import load_state, save_state
from sparring.worker.battle_evaluator import BattleEvalResult
from sparring.worker.policy_pool import ParamStore

log = logging.getLogger(__name__)

COMMANDER_DIR = 'commander'
STATE_FILE = 'state.npz'
SINGLE_AGENT = 'agent'  # the one player of a single-agent run
ROLES = ('collector', 'learner', 'evaluator')
MAX_JOBS_PER_REQUEST = 4096
RECENT_CHUNK_IDS = 200_000  # chunk ids remembered to refuse a repeated report
WAIT_SECONDS = 0.2


class Journal:
    """An append-only JSON-lines log of committed league operations, each with a sequence number."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.seq = 0
        self._file = None

    def read(self) -> List[dict]:
        """The committed entries; a line torn by a crash mid-write (the last one) is skipped."""
        if not os.path.exists(self.path):
            return []
        entries = []
        with open(self.path) as f:
            for number, line in enumerate(f, 1):
                try:
                    entries.append(json.loads(line))
                except json.JSONDecodeError:
                    log.warning('%s: line %d is incomplete (a crash while writing it); ignored', self.path, number)
        return entries

    def open(self, seq: int) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.seq = seq
        self._file = open(self.path, 'a')

    def append(self, entry: dict) -> None:
        self.seq += 1
        entry['seq'] = self.seq
        # Flushed to the OS: a killed process loses nothing written so far.
        self._file.write(json.dumps(entry, separators=(',', ':')) + '\n')
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclasses.dataclass
class WorkerRecord:
    worker_id: str
    role: str
    session: str
    pid: int
    host: str
    last_seen: float
    player_id: Optional[str] = None
    endpoint: Optional[str] = None
    jobs: Set[int] = dataclasses.field(default_factory=set)
    task_id: Optional[int] = None
    eval_task_id: Optional[int] = None
    stats: Dict[str, float] = dataclasses.field(default_factory=dict)
    final: bool = False


@dataclasses.dataclass
class LiveParams:
    """A player's newest published parameters, as the arrays that go out to workers."""
    version: int
    arrays: Dict[str, np.ndarray]


class Commander:
    """All decisions of a parallel run; transport-free (``handle`` maps a request to a reply)."""

    def __init__(self, cfg, resume: bool = False, clock: Callable[[], float] = time.monotonic,
                 logger=None) -> None:
        self.cfg = cfg
        self.par = cfg.parallel
        self.clock = clock
        self.logger = logger
        self.exp_dir = cfg.exp_name
        self.dir = os.path.join(self.exp_dir, COMMANDER_DIR)
        # A single-agent config has no league: one player, no games, evaluation by episode return.
        self.league = LEAGUE_REGISTRY.get(cfg.league.type)(cfg.league) if cfg.league is not None else None
        self.player_ids = [p.player_id for p in self.league.active_players] if self.league else [SINGLE_AGENT]
        self.rated = {p.player_id for p in self.league.reference_players} if self.league else set()
        self.eval_opponents = evaluation_opponents(self.league, cfg) if self.league else []
        self.store = ParamStore(os.path.join(self.exp_dir, 'params'))
        self.observation_space, self.action_space = env_spaces(cfg)
        self.recent_returns: Deque[float] = deque(maxlen=100)
        self.chunk_len = self.par.chunk_len or cfg.policy.collect.n_steps
        self.chunk_steps = self.chunk_len * cfg.env.collector_env_num
        self.policy_cfg = to_plain(cfg.policy)

        # -- bookkeeping (the part that is saved) --
        self.env_steps = 0
        self.player_env_steps = {pid: 0 for pid in self.player_ids}
        self.player_chunks = {pid: 0 for pid in self.player_ids}
        self.train_iterations = {pid: 0 for pid in self.player_ids}
        self.versions = {pid: 0 for pid in self.player_ids}
        self.next_eval = {pid: cfg.train.eval_every_iters for pid in self.player_ids}
        self.counters: Dict[str, int] = defaultdict(int)
        self.last_eval: Dict[str, Dict[str, dict]] = {}
        self.reached: Optional[Tuple[int, float]] = None
        self.wall_seconds_before = 0.0
        self.known_workers: Set[str] = set()  # worker ids seen in this run: a returning learner restores
        # -- live state (rebuilt on restart) --
        self.outstanding: Dict[int, Tuple[str, str, str]] = {}  # job id -> (session, home, away)
        self.recent_chunks: 'Deque[str]' = deque()
        self.seen_chunks: Set[str] = set()
        self.workers: Dict[str, WorkerRecord] = {}  # by session
        # By worker id, kept after it leaves; an earlier process of a restarted worker as '<id>/<pid>'.
        self.worker_stats: Dict[str, Dict[str, float]] = {}
        self.live: Dict[str, LiveParams] = {}
        self.tasks: Dict[int, Tuple[str, str]] = {}  # collect task id -> (session, player)
        # Credit-based back-pressure: chunks reported for a player before its current learner
        # process joined (they went to an older one), and how many the current one has consumed.
        self.chunks_before_learner = {pid: 0 for pid in self.player_ids}
        self.chunks_consumed = {pid: 0 for pid in self.player_ids}
        self.max_ahead = self.par.max_chunks_ahead or max(1, self.par.collectors)
        self.last_player: Dict[str, str] = {}  # worker id -> player it collected for last
        self.eval_queue: Deque[dict] = deque()
        self.eval_running: Dict[int, Tuple[str, dict]] = {}
        self._next_task_id = 0
        self._worker_counts: Dict[str, int] = defaultdict(int)
        self._stored_cache: Dict[str, Tuple[int, Dict[str, np.ndarray], dict]] = {}
        self.phase = 'collect'  # -> 'drain' -> 'evaluate' -> 'done'
        self.stop_reason = ''
        self.started = clock()
        self._last_save = clock()
        self._last_line = clock()
        self._last_line_steps = 0
        self.resumed = resume
        self.journal = Journal(os.path.join(self.dir, 'journal.jsonl'))
        if resume:
            self._restore()
        else:
            self._start_fresh()

    # ------------------------------------------------------------------------------ persistence
    def _start_fresh(self) -> None:
        # A previous run under the same name: its state and its learners' checkpoints must not be
        # mistaken for this run's.
        for name in ('journal.jsonl', STATE_FILE):
            path = os.path.join(self.dir, name)
            if os.path.exists(path):
                os.remove(path)
        for ckpt_dir in glob.glob(os.path.join(self.exp_dir, 'workers', '*', 'ckpt')):
            shutil.rmtree(ckpt_dir, ignore_errors=True)
        self.journal.open(0)
        policy = POLICY_REGISTRY.get(self.cfg.policy.type)(self.cfg.policy, self.observation_space,
                                                           self.action_space, seed=self.cfg.seed)
        self.store.put(INIT_REF, policy.get_params(), self.policy_cfg, 0)

    def _restore(self) -> None:
        state_path = os.path.join(self.dir, STATE_FILE)
        journal_entries = self.journal.read()
        if not os.path.exists(state_path) and not journal_entries:
            raise FileNotFoundError(f'--resume: no parallel run state under {self.dir} (neither {STATE_FILE} nor '
                                    f'journal.jsonl); was {self.exp_dir!r} run in parallel mode?')
        saved_seq = 0
        if os.path.exists(state_path):
            saved = load_state(state_path)
            if self.league is not None:
                self.league.load_state_dict(saved['league'])
            state = saved['commander']
            saved_seq = int(state['seq'])
            self.env_steps = int(state['env_steps'])
            self.player_env_steps.update(state['player_env_steps'])
            self.player_chunks.update(state['player_chunks'])
            self.train_iterations.update(state['train_iterations'])
            self.versions.update(state['versions'])
            self.next_eval.update(state['next_eval'])
            self.counters.update(state['counters'])
            self.last_eval = state['last_eval']
            self.wall_seconds_before = float(state['wall_seconds'])
            self.known_workers = set(state['known_workers'])
            self.outstanding = {int(k): tuple(v) for k, v in state['outstanding'].items()}
            for chunk_id in state['recent_chunks']:
                self._remember_chunk(chunk_id)
        replayed = 0
        for entry in journal_entries:
            if entry['seq'] > saved_seq:
                self._apply(entry)
                replayed += 1
        self.journal.open(journal_entries[-1]['seq'] if journal_entries else saved_seq)
        # The workers that held outstanding jobs died with the old commander: those games never end.
        if self.outstanding:
            self._commit(dict(op='abandon', jobs=sorted(self.outstanding)))
        self.known_workers.update(f'learner-{pid}' for pid in self.player_ids)
        self._say(f'resumed from {self.dir}: {self.env_steps} env steps, {replayed} journal entries replayed, '
                  f'iterations {self.train_iterations}')

    def save(self) -> str:
        """Snapshot the league and the bookkeeping in one atomic file (with the journal's position); returns its path."""
        state = dict(seq=self.journal.seq, env_steps=self.env_steps, player_env_steps=self.player_env_steps,
                     player_chunks=self.player_chunks, train_iterations=self.train_iterations,
                     versions=self.versions, next_eval=self.next_eval, counters=dict(self.counters),
                     last_eval=self.last_eval, wall_seconds=self.wall_seconds,
                     known_workers=sorted(self.known_workers),
                     outstanding={str(k): list(v) for k, v in self.outstanding.items()},
                     recent_chunks=list(self.recent_chunks))
        path = save_state(dict(league=self.league.state_dict() if self.league else None, commander=to_plain(state)),
                          os.path.join(self.dir, STATE_FILE))
        self._last_save = self.clock()
        return path

    @property
    def wall_seconds(self) -> float:
        return self.wall_seconds_before + self.clock() - self.started

    # ------------------------------------------------------------------------------ the journal
    def _commit(self, entry: dict):
        """Apply one league operation, then write it to the journal: the journal holds exactly what was applied."""
        result = self._apply(entry)
        self.journal.append(entry)
        return result

    def _apply(self, entry: dict):
        op = entry['op']
        if op == 'jobs':
            infos = [self.league.get_job_info(entry['player']) for _ in range(entry['n'])]
            if infos and infos[0]['job_id'] != entry.setdefault('first', infos[0]['job_id']):
                raise RuntimeError(f'journal replay diverged: job ids start at {infos[0]["job_id"]}, the journal '
                                   f'says {entry["first"]}')
            for info in infos:
                self.outstanding[info['job_id']] = (entry['session'], entry['player'], info['player_ids'][1])
            return infos
        if op == 'games':
            for away, job_ids, outcomes in entry['games']:
                self.league.finish_job(dict(player_ids=[entry['player'], away], result=outcomes))
                for job_id in job_ids:
                    self.outstanding.pop(job_id, None)
                self.counters['games'] += len(outcomes)
            self.env_steps += entry['steps']
            self.player_env_steps[entry['player']] += entry['steps']
            self.player_chunks[entry['player']] += 1
            self.counters['chunks'] += 1
            self._remember_chunk(entry['chunk'])
            return None
        if op == 'abandon':
            for job_id in entry['jobs']:
                self.outstanding.pop(job_id, None)
            self.counters['jobs_abandoned'] += len(entry['jobs'])
            return None
        if op == 'progress':
            pid = entry['player']
            self.train_iterations[pid] = entry['iteration']
            self.versions[pid] = max(self.versions[pid], entry['version'])
            if self.league is None:
                return dict(snapshot=False, reset=False)
            self.league.update_active_player(dict(player_id=pid, train_iteration=entry['iteration']))
            verdict = self.league.judge_snapshot(pid)
            summary = [verdict['snapshot'], verdict['reset']]
            if entry.setdefault('verdict', summary) != summary:
                raise RuntimeError(f'journal replay diverged: judge_snapshot({pid!r}) gave {summary}, the journal '
                                   f'says {entry["verdict"]}')
            return verdict
        if op == 'eval':
            for opponent_id, outcomes in entry['results'].items():
                self.league.record_eval_result(entry['player'], opponent_id, outcomes)
            self.counters['eval_games'] += sum(len(o) for o in entry['results'].values())
            return None
        raise RuntimeError(f'journal: unknown operation {op!r}')

    def _remember_chunk(self, chunk_id: str) -> None:
        self.seen_chunks.add(chunk_id)
        self.recent_chunks.append(chunk_id)
        if len(self.recent_chunks) > RECENT_CHUNK_IDS:
            self.seen_chunks.discard(self.recent_chunks.popleft())

    # ------------------------------------------------------------------------------ requests
    def handle(self, message: Message) -> Tuple[str, dict, Optional[dict]]:
        """The reply ``(kind, body, arrays)`` to a validated request."""
        kind, body = message.kind, message.body
        if kind == 'register':
            return self._register(body)
        worker = self.workers.get(body.get('session'))
        if worker is None:
            # Dropped after a timeout, or it registered with a commander that has since restarted.
            return 'error', dict(error=f'unknown or expired session {body.get("session")!r}; register again',
                                 reason='session'), None
        worker.last_seen = self.clock()
        handler = getattr(self, f'_on_{kind}', None)
        if handler is None:
            return 'error', dict(error=f'{kind!r} is not a request the commander serves', reason='schema'), None
        try:
            return handler(worker, message)
        except MessageError as err:
            return 'error', dict(error=str(err), reason=err.reason), None

    def _register(self, body: dict):
        role = body['role']
        if role not in ROLES:
            return 'error', dict(error=f'unknown role {role!r}; expected one of {ROLES}', reason='schema'), None
        worker_id = body['worker_id']
        player_id = None
        if role == 'learner':
            taken = {w.player_id for w in self.workers.values() if w.role == 'learner' and w.worker_id != worker_id}
            wanted = body.get('player_id')
            free = [p for p in self.player_ids if p not in taken]
            if wanted is not None and wanted not in self.player_ids:
                return 'error', dict(error=f'unknown player {wanted!r}; active players: {self.player_ids}',
                                     reason='schema'), None
            if wanted is not None and wanted not in free:
                return 'error', dict(error=f'player {wanted!r} already has a live learner', reason='busy'), None
            if not free:
                return 'error', dict(error='every active player already has a learner', reason='busy'), None
            player_id = wanted or free[0]
            worker_id = worker_id or f'learner-{player_id}'
        if worker_id is None:
            self._worker_counts[role] += 1
            worker_id = f'{role}-remote{self._worker_counts[role]}'
        for old in [w for w in self.workers.values() if w.worker_id == worker_id]:
            self.drop_worker(old.session, 'registered again')
        earlier = self.worker_stats.pop(worker_id, None)
        if earlier is not None:
            self.worker_stats[f'{worker_id}/{int(earlier["pid"])}'] = earlier
        restore = worker_id in self.known_workers
        self.known_workers.add(worker_id)
        if player_id is not None:  # a new learner process: chunks sent to its predecessor are gone
            self.chunks_before_learner[player_id] = self.player_chunks[player_id]
            self.chunks_consumed[player_id] = 0
        record = WorkerRecord(worker_id, role, body['session'], body['pid'], body['host'], self.clock(),
                              player_id=player_id)
        self.workers[record.session] = record
        index = self.player_ids.index(player_id) if player_id else self._index_of(worker_id)
        self._say(f'{worker_id} joined (pid {body["pid"]} on {body["host"]}{", restoring" if restore else ""})')
        return 'registered', dict(worker_id=worker_id, session=record.session, config=to_plain(self.cfg),
                                  index=index, player_id=player_id,
                                  train_iteration=self.train_iterations.get(player_id, 0) if player_id else 0,
                                  version=self.versions.get(player_id, 0) if player_id else 0,
                                  restore=restore, player_ids=list(self.player_ids)), None

    @staticmethod
    def _index_of(worker_id: str) -> int:
        digits = ''.join(ch for ch in worker_id.rsplit('-', 1)[-1] if ch.isdigit())
        return int(digits) if digits else 0

    def _on_heartbeat(self, worker: WorkerRecord, message: Message):
        self._take_stats(worker, message.body.get('stats', {}))
        return 'ack', self._state_for(worker), None

    def _take_stats(self, worker: WorkerRecord, stats: Dict[str, float]) -> None:
        worker.stats.update(stats)
        self.worker_stats[worker.worker_id] = dict(worker.stats, pid=worker.pid)

    def _state_for(self, worker: WorkerRecord) -> dict:
        if self.phase == 'done':
            return dict(state='stop')
        if worker.role == 'learner' and self.phase != 'collect':
            pid = worker.player_id
            return dict(state='drain', expected_chunks=self.player_chunks[pid] - self.chunks_before_learner[pid])
        if worker.role == 'collector' and self.phase != 'collect':
            return dict(state='stop')
        return dict(state='run')

    def _on_goodbye(self, worker: WorkerRecord, message: Message):
        self.drop_worker(worker.session, 'said goodbye')
        return 'ack', dict(state='stop'), None

    # -- collection ----------------------------------------------------------------------------
    def _on_collect_task(self, worker: WorkerRecord, message: Message):
        if worker.task_id is not None:  # its previous chunk never arrived: hand the budget back
            self.tasks.pop(worker.task_id, None)
            worker.task_id = None
        if self.phase != 'collect':
            return 'stop', dict(reason=self.stop_reason or 'collection finished'), None
        in_flight = len(self.tasks) * self.chunk_steps
        if self.env_steps + in_flight >= self.cfg.train.max_env_steps:
            return 'wait', dict(seconds=WAIT_SECONDS, reason='the env-step budget is handed out'), None
        busy = defaultdict(int)
        for _, pid in self.tasks.values():
            busy[pid] += 1
        ready = [pid for pid in self.player_ids if pid in self.live and self._learner_of(pid) is not None]
        if not ready:
            return 'wait', dict(seconds=WAIT_SECONDS, reason='no learner has published parameters yet'), None
        # Back-pressure: a player whose learner has max_chunks_ahead chunks to go gets no more for now,
        # so a slow learner holds its collectors back and the data it trains on stays fresh.
        ready = [pid for pid in ready if self.chunks_ahead(pid) + busy[pid] < self.max_ahead]
        if not ready:
            return 'wait', dict(seconds=WAIT_SECONDS / 4, reason='the learners are behind'), None
        previous = self.last_player.get(worker.worker_id)
        # The player furthest behind its share; ties keep the collector on its last player (warm envs).
        pid = min(ready, key=lambda p: (self.player_env_steps[p] + busy[p] * self.chunk_steps, p != previous, p))
        self._next_task_id += 1
        task_id = self._next_task_id
        self.tasks[task_id] = (worker.session, pid)
        worker.task_id = task_id
        self.last_player[worker.worker_id] = pid
        return 'task', dict(task_id=task_id, player_id=pid, endpoint=self._learner_of(pid).endpoint), None

    def chunks_ahead(self, pid: str) -> int:
        """Chunks reported for ``pid`` that its learner has not taken off its queue yet."""
        return self.player_chunks[pid] - self.chunks_before_learner[pid] - self.chunks_consumed[pid]

    def _learner_of(self, pid: str) -> Optional[WorkerRecord]:
        for w in self.workers.values():
            if w.role == 'learner' and w.player_id == pid and w.endpoint:
                return w
        return None

    def _on_jobs(self, worker: WorkerRecord, message: Message):
        pid, count = message.body['player_id'], message.body['count']
        self._check_player(pid)
        if self.league is None:
            raise MessageError('schema', 'jobs: a single-agent run has no league jobs')
        count = min(count, MAX_JOBS_PER_REQUEST)
        infos = self._commit(dict(op='jobs', player=pid, n=count, session=worker.session)) if count else []
        worker.jobs.update(info['job_id'] for info in infos)
        jobs = [dict(job_id=info['job_id'], opponent_id=info['player_ids'][1],
                     param_ref=info['players'][1]['param_ref'], kind=info['players'][1]['kind']) for info in infos]
        return 'job_batch', dict(jobs=jobs), None

    def _check_player(self, pid: str) -> None:
        if pid not in self.player_ids:
            raise MessageError('schema', f'unknown player {pid!r}; active players: {self.player_ids}')

    def _on_chunk_report(self, worker: WorkerRecord, message: Message):
        body = message.body
        pid = body['player_id']
        self._check_player(pid)
        if self.league is None and body['results']:
            raise MessageError('schema', 'chunk_report: a single-agent run has no games to report')
        if body['task_id'] is not None and worker.task_id == body['task_id']:
            self.tasks.pop(body['task_id'], None)
            worker.task_id = None
        if body['chunk_id'] in self.seen_chunks:
            self.counters['duplicate_reports'] += 1
            return 'ack', dict(state=self._state_for(worker)['state'], duplicate=True, accepted=0, rejected=0), None
        groups: Dict[str, Tuple[List[int], List[str]]] = {}
        rejected = 0
        for job_id, outcome in body['results']:
            owner = self.outstanding.get(job_id)
            if owner is None or owner[0] != worker.session or owner[1] != pid or job_id not in worker.jobs:
                rejected += 1  # a finished, abandoned or foreign job: recording it would count a game twice
                continue
            worker.jobs.discard(job_id)
            ids, outcomes = groups.setdefault(owner[2], ([], []))
            ids.append(job_id)
            outcomes.append(outcome)
        self.counters['results_refused'] += rejected
        games = [[away, ids, outcomes] for away, (ids, outcomes) in groups.items()]
        self.recent_returns.extend(body.get('episode_returns', []))
        self._commit(dict(op='games', chunk=body['chunk_id'], player=pid, steps=body['env_steps'], games=games))
        self._check_budget()
        return 'ack', dict(state=self._state_for(worker)['state'], duplicate=False,
                           accepted=len(body['results']) - rejected, rejected=rejected), None

    # -- parameters ----------------------------------------------------------------------------
    def _on_params_request(self, worker: WorkerRecord, message: Message):
        ref, have = message.body['ref'], message.body['have_version']
        if ref in self.player_ids:
            live = self.live.get(ref)
            if live is None:
                return 'wait', dict(seconds=WAIT_SECONDS, reason=f'{ref!r} has not published parameters yet'), None
            if have == live.version:
                return 'params', dict(ref=ref, version=live.version, unchanged=True, policy_cfg=None), None
            return 'params', dict(ref=ref, version=live.version, unchanged=False, policy_cfg=self.policy_cfg), \
                live.arrays
        try:
            version, arrays, policy_cfg = self._stored(ref)
        except KeyError as err:
            raise MessageError('schema', str(err)) from None
        if have == version:
            return 'params', dict(ref=ref, version=version, unchanged=True, policy_cfg=None), None
        return 'params', dict(ref=ref, version=version, unchanged=False, policy_cfg=policy_cfg), arrays

    def _stored(self, ref: str):
        if ref not in self._stored_cache:
            entry = self.store.get(ref)
            self._stored_cache[ref] = (entry['version'], params_to_arrays(entry['params']), to_plain(entry['policy_cfg']))
        return self._stored_cache[ref]

    def _on_publish(self, worker: WorkerRecord, message: Message):
        body = message.body
        pid = body['player_id']
        if worker.role != 'learner' or worker.player_id != pid:
            raise MessageError('schema', f'{worker.worker_id} may not publish parameters of {pid!r}')
        if not message.arrays:
            raise MessageError('schema', 'publish: no parameter arrays')
        # The arrays are views of the received frames, which they keep alive: no copy needed.
        self.live[pid] = LiveParams(body['version'], dict(message.arrays))
        if 'endpoint' in body:
            worker.endpoint = body['endpoint']
        self.chunks_consumed[pid] = max(self.chunks_consumed[pid], body['chunks_consumed'])
        self._take_stats(worker, body.get('stats', {}))
        iteration = max(body['train_iteration'], self.train_iterations[pid])
        reset_ref = None
        if iteration > self.train_iterations[pid] or body['version'] > self.versions[pid]:
            entry = dict(op='progress', player=pid, iteration=iteration, version=body['version'])
            verdict = self._apply(entry)
            if verdict['snapshot']:
                ref = verdict['historical_player']['param_ref']
                # Stored before the journal commits the snapshot, so a replayed snapshot finds its parameters.
                self.store.put(ref, arrays_to_params(message.arrays), self.policy_cfg, body['version'])
                self._stored_cache.pop(ref, None)
                self._say(f'snapshot {verdict["historical_player"]["player_id"]} of {pid} at iteration {iteration}')
            self.journal.append(entry)
            if verdict['reset']:
                reset_ref = verdict['reset_param_ref']
            self._schedule_eval(pid, iteration)
        if self.logger is not None and body.get('stats'):
            self.logger.scalars(body['stats'], self.env_steps, prefix=f'train/{pid}/')
        if body['final']:
            worker.final = True
            self._check_drained()
        state = self._state_for(worker)
        return 'ack', dict(state, reset_param_ref=reset_ref), None

    # -- evaluation ----------------------------------------------------------------------------
    def _schedule_eval(self, pid: str, iteration: int) -> None:
        every = self.cfg.train.eval_every_iters
        if every and iteration >= self.next_eval[pid] and self.phase == 'collect':
            self.next_eval[pid] = (iteration // every + 1) * every
            if not any(job['player_id'] == pid for job in self.eval_queue):  # one pending evaluation per player
                self._queue_eval(pid, final=False)

    def _queue_eval(self, pid: str, final: bool) -> None:
        self._next_task_id += 1
        self.eval_queue.append(dict(task_id=self._next_task_id, player_id=pid, final=final))

    def _on_eval_task(self, worker: WorkerRecord, message: Message):
        if worker.eval_task_id is not None:
            self._requeue_eval(worker)
        if self.phase == 'done':
            return 'stop', dict(reason=self.stop_reason), None
        if not self.eval_queue:
            return 'wait', dict(seconds=WAIT_SECONDS, reason='no evaluation due'), None
        job = self.eval_queue.popleft()
        self.eval_running[job['task_id']] = (worker.session, job)
        worker.eval_task_id = job['task_id']
        pid = job['player_id']
        return 'eval_job', dict(task_id=job['task_id'], player_id=pid, version=self.versions[pid],
                                opponents=[list(o) for o in self.eval_opponents]), None

    def _requeue_eval(self, worker: WorkerRecord) -> None:
        running = self.eval_running.pop(worker.eval_task_id, None)
        worker.eval_task_id = None
        if running is not None:
            self.eval_queue.appendleft(running[1])

    def _on_eval_report(self, worker: WorkerRecord, message: Message):
        body = message.body
        running = self.eval_running.get(body['task_id'])
        if running is None or running[0] != worker.session:
            self.counters['results_refused'] += 1
            return 'ack', dict(state=self._state_for(worker)['state'], duplicate=True), None
        job = running[1]
        pid = job['player_id']
        known = {oid for oid, _ in self.eval_opponents}
        if body['player_id'] != pid or set(body['results']) != known:
            raise MessageError('schema', f'eval_report: expected results of {pid!r} against {sorted(known)}, got '
                                         f'{body["player_id"]!r} against {sorted(body["results"])}')
        if self.league is None and not body.get('returns'):
            raise MessageError('schema', 'eval_report: a single-agent evaluation reports its episode returns')
        del self.eval_running[body['task_id']]
        worker.eval_task_id = None
        self.record_evaluation(pid, body['results'], body.get('returns', []))
        if job['final']:
            self._check_evaluated()
        return 'ack', dict(state=self._state_for(worker)['state']), None

    def record_evaluation(self, pid: str, results: Dict[str, List[str]], returns: List[float] = ()) -> None:
        """One player's evaluation: a league player's games (the rated ones go to the league), or a
        single-agent policy's episode returns; summarised, logged, checked against the stop value."""
        if self.league is None:
            report = dict(return_mean=float(np.mean(returns)), return_std=float(np.std(returns)), episodes=len(returns))
            score = report['return_mean']
            text = f'return {report["return_mean"]:.2f} +- {report["return_std"]:.2f}'
        else:
            rated = {oid: outcomes for oid, outcomes in results.items() if oid in self.rated}
            if rated:
                self._commit(dict(op='eval', player=pid, results=rated))
            report = {oid: BattleEvalResult(oid, outcomes).summary() for oid, outcomes in results.items()}
            score = min_score(report) if report else None
            text = ' '.join(f'{oid}:{s["win"]:.2f}/{s["draw"]:.2f}' for oid, s in report.items())
        self.last_eval[pid] = report
        if self.logger is not None:
            if self.league is None:
                self.logger.scalars(report, self.env_steps, prefix='eval/')
            for oid, summary in report.items() if self.league is not None else ():
                self.logger.scalars(summary, self.env_steps, prefix=f'eval/{pid}/vs_{oid}/')
            self._say(f'eval {pid} (iteration {self.train_iterations[pid]}): {text}')
        stop_value = self.cfg.env.stop_value
        if (stop_value is not None and pid == self.player_ids[0] and self.reached is None and score is not None
                and score >= stop_value):
            self.reached = (self.env_steps, self.wall_seconds)
            self._say(f'stop value {stop_value} reached by {pid} after {self.env_steps} env steps')
            self.begin_drain('stop value reached')

    # ------------------------------------------------------------------------------ the run's course
    def _check_budget(self) -> None:
        if self.phase == 'collect' and self.env_steps >= self.cfg.train.max_env_steps:
            self.begin_drain(f'env-step budget of {self.cfg.train.max_env_steps} spent')

    def begin_drain(self, reason: str) -> None:
        """Stop collecting; learners train on what was sent to them, publish a last time, then evaluation."""
        if self.phase != 'collect':
            return
        self.phase = 'drain'
        self.stop_reason = reason
        self.eval_queue.clear()
        self._say(f'{reason}: collection stops, learners drain')
        self._check_drained()

    def _check_drained(self) -> None:
        if self.phase != 'drain':
            return
        finals = {w.player_id for w in self.workers.values() if w.role == 'learner' and w.final}
        if finals >= set(self.player_ids):
            self.phase = 'evaluate'
            for pid in self.player_ids:
                self._queue_eval(pid, final=True)
            self._check_evaluated()

    def _check_evaluated(self) -> None:
        if self.phase == 'evaluate' and not self.eval_queue and not self.eval_running:
            self.phase = 'done'
            self._say('final evaluation done')

    def final_evaluations_pending(self) -> List[dict]:
        """Final evaluation jobs nobody took (a run without evaluator workers evaluates them itself)."""
        return [job for job in self.eval_queue if job['final']]

    def finish_pending_evaluation(self, job: dict, results: Dict[str, List[str]], returns: List[float] = ()) -> None:
        self.eval_queue.remove(job)
        self.record_evaluation(job['player_id'], results, returns)
        self._check_evaluated()

    def tick(self) -> None:
        """Periodic duties: drop silent workers, stop on the wall-time budget, save, log."""
        now = self.clock()
        timeout = self.par.worker_timeout_seconds
        for session in [s for s, w in self.workers.items() if now - w.last_seen > timeout]:
            self.drop_worker(session, f'silent for {timeout:.0f} s')
        budget = self.cfg.train.max_wall_seconds
        if budget and self.phase == 'collect' and self.wall_seconds >= budget:
            self.begin_drain(f'time budget of {budget:.0f} s spent')
        if now - self._last_save >= self.par.save_every_seconds:
            self.save()
        if now - self._last_line >= self.par.log_every_seconds:
            self.log_progress()

    def drop_worker(self, session: str, why: str) -> Optional[WorkerRecord]:
        """Forget a worker: abandon its unfinished games, free its task, requeue its evaluation."""
        worker = self.workers.pop(session, None)
        if worker is None:
            return None
        held = sorted(j for j in worker.jobs if j in self.outstanding)
        if held:
            self._commit(dict(op='abandon', jobs=held))
        if worker.task_id is not None:
            self.tasks.pop(worker.task_id, None)
        if worker.eval_task_id is not None:
            self._requeue_eval(worker)
        if why != 'said goodbye':
            self.counters[f'{worker.role}_lost'] += 1
        self._say(f'{worker.worker_id} left ({why}); {len(held)} unfinished game(s) abandoned')
        return worker

    def drop_worker_id(self, worker_id: str, why: str) -> None:
        for session in [s for s, w in self.workers.items() if w.worker_id == worker_id]:
            self.drop_worker(session, why)

    # ------------------------------------------------------------------------------ reporting
    def _say(self, text: str) -> None:
        if self.logger is not None:
            self.logger.line(text)
        else:
            log.info(text)

    def log_progress(self) -> None:
        now = self.clock()
        if self.logger is None:
            return
        rate = (self.env_steps - self._last_line_steps) / max(now - self._last_line, 1e-9)
        self._last_line, self._last_line_steps = now, self.env_steps
        self.logger.progress(self.env_steps)
        staleness = [w.stats.get('staleness_mean') for w in self.workers.values() if w.role == 'learner']
        historical = len(self.league.historical_players) if self.league else None
        ret = float(np.mean(self.recent_returns)) if self.recent_returns else None
        self.logger.scalars(dict(env_steps_per_second=rate, games=self.counters['games'], historical=historical,
                                 episode_return=ret, jobs_abandoned=self.counters['jobs_abandoned']),
                            self.env_steps, prefix='run/')
        self.logger.line(format_stats(dict(
            phase=self.phase, steps=self.env_steps, sps=int(rate), games=self.counters['games'] if self.league else None,
            ret=ret, iters='/'.join(str(self.train_iterations[p]) for p in self.player_ids), historical=historical,
            workers=len(self.workers), stale=float(np.mean([s for s in staleness if s is not None]))
            if any(s is not None for s in staleness) else None)))

    def summary(self, pictures: List[str], state_path: str) -> dict:
        extra = {}
        if self.league is None and self.last_eval:  # the keys a serial single-agent run reports
            extra = dict(eval_mean=self.last_eval[SINGLE_AGENT]['return_mean'],
                         eval_std=self.last_eval[SINGLE_AGENT]['return_std'])
        return dict(extra, exp_dir=self.exp_dir, env_steps=self.env_steps, wall_seconds=self.wall_seconds,
                    env_steps_per_second=self.env_steps / max(self.wall_seconds, 1e-9),
                    train_iterations=dict(self.train_iterations), eval=self.last_eval,
                    reached_stop_value=self.reached is not None,
                    stop_env_steps=self.reached[0] if self.reached else None,
                    stop_seconds=self.reached[1] if self.reached else None,
                    stop_reason=self.stop_reason, games=self.counters['games'],
                    counters=dict(self.counters), worker_stats=dict(self.worker_stats), pictures=pictures,
                    checkpoint=state_path, league_table=self.league.table() if self.league else None)

    def close(self) -> None:
        self.journal.close()
