"""Env manager that runs the envs in worker processes, each worker stepping a slice of them.

Workers start with the 'spawn' method by default: the parent usually has torch loaded, and
forking a process that runs threads can deadlock the child. A worker imports sparring's env
families and the config's ``import_names``, builds an :class:`EnvGroup` for its slice and then
answers the parent over a pipe: the parent sends ``(command, payload)``, the worker replies
``('ok', result)`` or ``('error', message, traceback_text)``. The parent waits on every pipe and
every process sentinel with a deadline, so a worker that dies or hangs is reported promptly.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import selectors
import signal
import sys
import time
import traceback
from typing import Any, List, Mapping, Optional, Sequence

import numpy as np

from sparring.config.schema import in_range, one_of
from sparring.config.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY
from sparring.worker.env.env_group import EnvGroup, StepResult
from sparring.worker.env.errors import EnvError, EnvWorkerDiedError
from sparring.worker.env.gym_env import import_env_modules
from sparring.worker.env.manager import EnvManager
from sparring.worker.env.spaces import batch_obs_dtype

# An idle worker checks this often whether its parent is gone (a SIGKILLed parent sends no EOF
# when other processes still hold the pipe, as forked siblings do).
_PARENT_CHECK_SECONDS = 1.0
# How long close() lets workers close their envs before terminating them.
_CLOSE_GRACE_SECONDS = 2.0


def available_cpus() -> int:
    """CPUs this process may run on (the affinity mask, which containers restrict)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _Worker:
    """The parent's handle on one worker process and the slice of envs ``[lo, hi)`` it hosts."""

    def __init__(self, index: int, process, conn, lo: int, hi: int) -> None:
        self.index, self.process, self.conn, self.lo, self.hi = index, process, conn, lo, hi

    def describe(self) -> str:
        return f'env worker {self.index} (pid {self.process.pid}, hosting envs {list(range(self.lo, self.hi))})'


@ENV_MANAGER_REGISTRY.register('subprocess')
class SubprocessEnvManager(EnvManager):
    """``num_envs`` envs spread over ``num_workers`` processes; each worker steps its envs together."""

    @classmethod
    def default_config(cls) -> dict:
        return dict(
            num_workers=0,  # 0: one per available CPU, at most one per env
            context='spawn',  # multiprocessing start method: 'spawn', 'fork' or 'forkserver'
            step_timeout=60.0,  # seconds a worker may take to answer reset() or step()
            start_timeout=120.0,  # seconds a worker may take to import its modules and build its envs
        )

    config_constraints = {
        'num_workers': in_range(0, None),
        'context': one_of('spawn', 'fork', 'forkserver'),
        'step_timeout': in_range(0, None, open_lo=True),
        'start_timeout': in_range(0, None, open_lo=True),
    }

    def __init__(self, env_cfg: Mapping, num_envs: int, seed: Optional[int] = None,
                 import_names: Sequence[str] = ()) -> None:
        super().__init__(env_cfg, num_envs, seed, import_names)
        self._owner_pid = os.getpid()
        self._workers: List[_Worker] = []
        self._selector = selectors.DefaultSelector()
        self.num_workers = min(self.num_envs, self.cfg.num_workers or available_cpus())
        bounds = np.linspace(0, self.num_envs, self.num_workers + 1).round().astype(int).tolist()
        context = mp.get_context(self.cfg.context)
        plain_env_cfg = _plain(self.env_cfg)
        registered_by = getattr(ENV_REGISTRY.get(self.env_cfg.type), '__module__', '?')
        try:
            for index in range(self.num_workers):
                lo, hi = bounds[index], bounds[index + 1]
                parent_end, child_end = context.Pipe()
                process = context.Process(
                    target=_worker_main, name=f'sparring-env-worker-{index}', daemon=True,
                    args=(child_end, list(range(lo, hi)), plain_env_cfg, self.import_names, registered_by,
                          os.getpid()))
                process.start()
                child_end.close()  # the worker's end lives in the worker only, so its death reads as EOF
                worker = _Worker(index, process, parent_end, lo, hi)
                self._workers.append(worker)
                self._register(worker)
            spaces = self._results('start-up', self._gather('start-up', self.cfg.start_timeout))
        except BaseException:
            self._abort()
            raise
        observation_space, action_space = spaces[0]
        for worker, (obs_space, act_space) in zip(self._workers, spaces):
            if obs_space != observation_space or act_space != action_space:
                self._abort()
                raise EnvError(f'{worker.describe()} built envs with spaces {obs_space!r}, {act_space!r} but env '
                               f'worker 0 has {observation_space!r}, {action_space!r}; expected identical spaces')
        self._set_spaces(observation_space, action_space)
        self._record = step_record(self.observation_space)

    # -- the manager API -----------------------------------------------------------------------

    def _reset(self, seeds: Optional[List[int]]):
        for w in self._workers:
            self._send(w, ('reset', None if seeds is None else seeds[w.lo:w.hi]), 'reset()')
        parts = self._results('reset()', self._gather('reset()', self.cfg.step_timeout))
        obs = parts[0][0] if len(parts) == 1 else np.concatenate([o for o, _ in parts])
        return obs, [info for _, infos in parts for info in infos]

    def _step(self, actions: np.ndarray) -> StepResult:
        for w in self._workers:
            self._send(w, ('step', actions[w.lo:w.hi].tobytes()), 'step()')
        parts = self._results('step()', self._gather('step()', self.cfg.step_timeout))
        records = [np.frombuffer(packed, self._record) for packed, _ in parts]
        record = records[0] if len(records) == 1 else np.concatenate(records)
        # Copies: contiguous, writable arrays that outlive the received bytes.
        return StepResult._make([*(record[field].copy() for field in _RECORD_FIELDS),
                                 [info for _, infos in parts for info in infos]])

    def _close(self) -> None:
        close_errors = self._shutdown()
        if close_errors:
            raise EnvError('closing the envs failed: ' + '; '.join(close_errors))

    def _abort(self, stuck: Sequence[_Worker] = ()) -> str:
        """Close after a failure; returns what went wrong while closing, for the failure's message."""
        self.closed = True
        close_errors = self._shutdown(stuck)
        return f' (closing the others also failed: {"; ".join(close_errors)})' if close_errors else ''

    def _shutdown(self, stuck: Sequence[_Worker] = ()) -> List[str]:
        """Ask every worker to close its envs, terminate those that do not exit, reap them all.

        ``stuck`` workers (busy past a deadline) are terminated at once instead.
        """
        if os.getpid() != getattr(self, '_owner_pid', None):
            return []  # a forked copy of this manager: the workers belong to the process that started them
        workers = getattr(self, '_workers', [])
        for w in stuck:
            w.process.terminate()
        for w in workers:
            try:
                w.conn.send(('close', None))
            except OSError:  # already dead: it is reaped below like the others
                pass
        deadline = time.monotonic() + _CLOSE_GRACE_SECONDS
        for w in workers:
            w.process.join(max(0.0, deadline - time.monotonic()))
        for w in workers:
            if w.process.is_alive():
                w.process.terminate()
                w.process.join(1.0)
            if w.process.is_alive():
                w.process.kill()
                w.process.join()
        close_errors = []
        for w in workers:
            try:
                # A reply to an interrupted command may come before the close acknowledgement.
                while w.conn.poll(0):
                    reply = w.conn.recv()
                    if reply[0] == 'closed' and reply[1] is not None:
                        close_errors.append(f'{w.describe()}: {reply[1]}')
            except (EOFError, OSError):
                pass  # no acknowledgement from a worker that died or was terminated
            w.conn.close()
        self._workers = []  # makes shutting down again a no-op
        selector = getattr(self, '_selector', None)
        if selector is not None:
            selector.close()
        return close_errors

    # -- talking to the workers ----------------------------------------------------------------

    def _send(self, worker: _Worker, message: tuple, what: str) -> None:
        try:
            worker.conn.send(message)
        except OSError:  # BrokenPipeError / ConnectionResetError: the worker is gone
            self._raise_died(worker, what)

    def _gather(self, what: str, timeout: float) -> List[tuple]:
        """One reply from every worker, or raise when one dies or the deadline passes."""
        deadline = time.monotonic() + timeout
        replies: dict = {}
        muted: List[_Worker] = []
        try:
            while len(replies) < len(self._workers):
                remaining = deadline - time.monotonic()
                events = self._selector.select(max(remaining, 0.0))
                if not events and remaining <= 0:
                    self._raise_late([w for w in self._workers if w.index not in replies], what, timeout)
                for key, _ in events:
                    is_sentinel, w = key.data
                    if w.index in replies:
                        # It exited after answering (as after a start-up error): its answer is
                        # returned now, its death is reported at the next command. Until then
                        # its readable handles must not keep waking this loop.
                        if w not in muted:
                            self._selector.unregister(w.conn)
                            self._selector.unregister(w.process.sentinel)
                            muted.append(w)
                        continue
                    if is_sentinel and not w.conn.poll(0):  # exited without answering
                        self._raise_died(w, what)
                    try:
                        replies[w.index] = w.conn.recv()
                    except (EOFError, OSError):
                        self._raise_died(w, what)
        finally:
            if not self.closed:
                for w in muted:
                    self._register(w)
        return [replies[w.index] for w in self._workers]

    def _register(self, worker: _Worker) -> None:
        self._selector.register(worker.conn, selectors.EVENT_READ, (False, worker))
        self._selector.register(worker.process.sentinel, selectors.EVENT_READ, (True, worker))

    def _raise_late(self, late: List[_Worker], what: str, timeout: float) -> None:
        key = 'start_timeout' if what == 'start-up' else 'step_timeout'
        described = ', '.join(w.describe() for w in late)
        closing = self._abort(stuck=late)
        raise EnvError(f'{described} did not answer {what} within {timeout} s (env.manager.{key}); the env '
                       f'manager was closed{closing}')

    def _results(self, what: str, replies: List[tuple]) -> List[Any]:
        """The workers' results, or the first worker's error re-raised with its traceback."""
        for w, reply in zip(self._workers, replies):
            if reply[0] != 'ok':
                _, message, worker_traceback = reply
                raise EnvError(f'{message}\n\nin {what} of {w.describe()}; its traceback:\n'
                               f'{worker_traceback.rstrip()}')
        return [reply[1] for reply in replies]

    def _raise_died(self, worker: _Worker, what: str) -> None:
        worker.process.join(1.0)  # a broken pipe may be seen a moment before the exit status
        code = worker.process.exitcode
        if code is None:
            status = 'closed its pipe but is still running'
        elif code < 0:
            status = f'was killed by {_signal_name(-code)} (exit code {code})'
        else:
            status = f'exited with code {code}'
        if what == 'start-up':
            status += (" (its stderr may say why; with the 'spawn' or 'forkserver' context the main script must "
                       "start its work under `if __name__ == '__main__':`)")
        closing = self._abort()
        raise EnvWorkerDiedError(f'{worker.describe()} {status} during {what} of {self!r}; the env manager was '
                                 f'closed{closing}')


# A step travels from a worker as one record per env, packed into bytes: pickling seven small
# arrays costs several times more than stepping a cheap env.
_RECORD_FIELDS = tuple(f for f in StepResult._fields if f != 'infos')


def step_record(observation_space) -> np.dtype:
    """The record of one env's step (every field of :class:`StepResult` but ``infos``)."""
    obs = (batch_obs_dtype(observation_space), tuple(observation_space.shape))
    return np.dtype([('obs', *obs), ('reward', np.float32), ('terminated', bool), ('truncated', bool),
                     ('final_obs', *obs), ('episode_return', np.float64), ('episode_length', np.int64)])


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f'signal {number}'


def _plain(obj: Any) -> Any:
    """Plain dicts and lists instead of EasyDicts: cheaper and safer to send to a worker."""
    if isinstance(obj, Mapping):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_plain(v) for v in obj)
    return obj


# -- the worker process ------------------------------------------------------------------------

def _worker_main(conn, env_indices: List[int], env_cfg: dict, import_names: List[str], registered_by: str,
                 parent_pid: int) -> None:
    # Ctrl-C in a terminal reaches the whole process group; the parent decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        try:
            group = _build_group(env_cfg, env_indices, import_names, registered_by)
        except BaseException as err:  # noqa: BLE001 -- sent to the parent, which raises it
            conn.send(('error', _error_text(err), traceback.format_exc()))
            return
        conn.send(('ok', (group.observation_space, group.action_space)))
        _serve(conn, group, parent_pid)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the parent is gone: nobody is left to answer


def _error_text(err: BaseException) -> str:
    # EnvError messages already say which env failed and how; others need their type to make sense.
    return str(err) if isinstance(err, EnvError) else f'{type(err).__name__}: {err}'


def _build_group(env_cfg: dict, env_indices: List[int], import_names: List[str], registered_by: str) -> EnvGroup:
    import_env_modules(import_names)
    # sparring's package imports may load torch; one intra-op thread per worker keeps N workers
    # from oversubscribing the cores.
    torch = sys.modules.get('torch')
    if torch is not None:
        torch.set_num_threads(1)
    if env_cfg['type'] not in ENV_REGISTRY:
        raise EnvError(f'env type {env_cfg["type"]!r} is not registered in the env worker process. In the parent '
                       f'it was registered by module {registered_by!r}; workers import only sparring\'s env '
                       f'families and import_names {import_names!r}: add that module to import_names')
    return EnvGroup(env_cfg, env_indices)


def _serve(conn, group: EnvGroup, parent_pid: int) -> None:
    record = step_record(group.observation_space)
    # One selector for the worker's life: Connection.poll builds a new one on every call.
    incoming = selectors.DefaultSelector()
    incoming.register(conn, selectors.EVENT_READ)
    while True:
        while not incoming.select(_PARENT_CHECK_SECONDS):
            if os.getppid() != parent_pid:
                group.close()
                return
        command, payload = conn.recv()
        if command == 'close':
            try:
                group.close()
                conn.send(('closed', None))
            except Exception as err:  # noqa: BLE001 -- told to the parent in the reply
                conn.send(('closed', f'{type(err).__name__}: {err}'))
            return
        try:
            if command == 'step':
                actions = np.frombuffer(payload, group.actions.dtype).reshape(group.actions.shape)
                step = group.step(actions.copy())  # a copy: envs may keep (and write) their actions
                packed = np.empty(len(step.infos), record)
                for field in _RECORD_FIELDS:
                    packed[field] = getattr(step, field)
                result: object = (packed.tobytes(), step.infos)
            elif command == 'reset':
                result = group.reset(payload)
            else:
                raise EnvError(f'env worker: unknown command {command!r}; expected step, reset or close')
            reply: tuple = ('ok', result)
        except Exception as err:  # noqa: BLE001 -- sent to the parent, which raises it
            reply = ('error', _error_text(err), traceback.format_exc())
        try:
            conn.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError) as err:  # pickling failed: nothing was sent
            conn.send(('error', (f'env worker could not send the result of {command} to the parent '
                                 f'({type(err).__name__}: {err}); observations and infos must be picklable'),
                       traceback.format_exc()))
