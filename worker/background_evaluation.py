"""Evaluation beside training in a one-process run: a child process plays the evaluations on frozen
copies of the players' parameters while the training loop goes on.

The serial loop's evaluations are games against bots (the MCTS bot is pure Python), so a thread
would only take turns with training under the interpreter lock; a child process has the idle
core to itself. The child builds what an in-process evaluation has (the run kind's evaluation on
its own envs, a policy pool over the run's parameter store with the same seeded bots, one policy
per player) and answers tasks strictly in the order they were sent, so for a given seed the same
sequence of evaluations gives the same outcomes however fast the machine is.

The parent's side, :class:`BackgroundEvaluation`, sends tasks and takes their results; *when* a
result is recorded is the caller's rule (the serial loop records each one a fixed number of rounds
after it was sent, so a run stays reproducible). A child that dies is started again and is sent
every task it had not answered; an evaluation that fails in the child is raised here with the
child's message.
"""
from __future__ import annotations

import os
import signal
import traceback
from collections import OrderedDict
from typing import TYPE_CHECKING, Dict, Optional, Sequence, Tuple

from sparring.worker.child_process import main_script_hidden, worker_context
from sparring.worker.evaluation import EvalResults

if TYPE_CHECKING:  # the policies are built in the child process only
    from sparring.policy.base import Policy

# How long the parent waits for a started child before counting it dead: long enough for a cold
# start importing torch on a loaded machine.
CHILD_START_SECONDS = 120.0
MAX_RESTARTS = 3


class BackgroundEvaluationError(RuntimeError):
    """An evaluation the child could not play, or a child that kept dying."""


class BackgroundEvaluation:
    """Send evaluation tasks to a child process and take their ``(outcomes, returns)`` in order (the outcomes
    as :class:`~sparring.worker.evaluation.GameOutcomes`, with the distinct games the child counted; in a game of
    three or more seats, the rankings)."""

    def __init__(self, cfg, player_ids: Sequence[str], seed_shift: int = 0,
                 roles: Optional[Dict[str, str]] = None) -> None:
        """``roles``: in a game whose seats have roles, each player's role."""
        self.cfg = cfg
        self.player_ids = list(player_ids)
        self.roles = dict(roles or {})
        self.seed_shift = int(seed_shift)
        from sparring.worker.run_kind import run_kind
        self.evaluation_class = run_kind(cfg).evaluation_class  # how the child's results travel
        self.unanswered: 'OrderedDict[int, dict]' = OrderedDict()  # task id -> the task, in the order sent
        self.answers: Dict[int, Tuple[EvalResults, list]] = {}
        self.restarts = 0
        self._start()

    def _start(self) -> None:
        # From the fork server (not a fork of this process, whose torch thread pools would not survive it).
        context = worker_context()
        self.conn, child_end = context.Pipe()
        self.process = context.Process(target=_serve, args=(dict(self.cfg), self.player_ids, self.seed_shift, child_end, self.roles),
                                       name='sparring-background-eval', daemon=True)
        with main_script_hidden():
            self.process.start()
        child_end.close()
        for task in self.unanswered.values():  # a restarted child plays what its predecessor left
            self.conn.send(task)

    def submit(self, task_id: int, player_id: str, version: int, params: dict,
               opponents: Sequence[Sequence[str]]) -> None:
        """Evaluate ``player_id`` at ``version`` (its parameters, CPU tensors or arrays) against ``opponents``."""
        task = dict(task_id=int(task_id), player_id=player_id, version=int(version),
                    params={k: _as_array(v) for k, v in params.items()}, opponents=[list(o) for o in opponents])
        self.unanswered[int(task_id)] = task
        self.conn.send(task)

    def result(self, task_id: int) -> Tuple[EvalResults, list]:
        """``(outcomes per opponent, episode returns)`` of a task sent earlier; waits for it if need be."""
        if task_id not in self.unanswered and task_id not in self.answers:
            raise KeyError(f'background evaluation: no task {task_id} was sent')
        while task_id not in self.answers:
            self._receive()
        return self.answers.pop(task_id)

    def _receive(self) -> None:
        try:
            ready = self.conn.poll(CHILD_START_SECONDS)
            reply = self.conn.recv() if ready else None
        except (EOFError, OSError):
            reply = None
        if reply is None:
            self._restart()
            return
        if 'error' in reply:
            raise BackgroundEvaluationError(f'background evaluation of {reply["player_id"]} (task {reply["task_id"]}) '
                                            f'failed in the child process:\n{reply["error"]}')
        self.unanswered.pop(reply['task_id'], None)
        self.answers[reply['task_id']] = (self.evaluation_class.from_report(reply), reply['returns'])

    def _restart(self) -> None:
        code = self.process.exitcode
        if self.process.is_alive():
            return  # slow, not dead (a long evaluation): keep waiting
        if self.restarts >= MAX_RESTARTS:
            raise BackgroundEvaluationError(f'the background evaluation process died {self.restarts + 1} times (last '
                                            f'exit code {code}); expected it to keep running. Set '
                                            f'train.eval_in_background=False to evaluate in the training process')
        self.restarts += 1
        self.conn.close()
        self._start()

    def close(self) -> None:
        if self.process is None:
            return
        try:
            if self.process.is_alive():
                self.conn.send(None)  # the child's signal to stop
                self.process.join(timeout=5)
        except (OSError, BrokenPipeError):
            pass
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)
        self.conn.close()
        self.process = None


def _as_array(value):
    import torch
    return value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value


def _serve(cfg_dict: dict, player_ids: list, seed_shift: int, conn, roles: Optional[dict] = None) -> None:
    """The child: build the evaluation once, then answer tasks in order until told to stop or the parent is gone."""
    # Ctrl-C in a terminal reaches the whole process group; the parent decides, and closes the child.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        evaluate, close, fields = _build(cfg_dict, player_ids, seed_shift, roles or {})
    except Exception:  # noqa: BLE001 -- told to the parent with the first task, then the child ends
        error = traceback.format_exc()
        task = _next_task(conn)
        if task is not None:
            conn.send(dict(task_id=task['task_id'], player_id=task['player_id'], error=error))
        return
    try:
        while True:
            task = _next_task(conn)
            if task is None:
                return
            try:
                results, returns = evaluate(task)
            except Exception:  # noqa: BLE001 -- the parent raises it, naming the task
                conn.send(dict(task_id=task['task_id'], player_id=task['player_id'], error=traceback.format_exc()))
                return
            # Plain values through the pipe, as an evaluator worker sends them: the outcomes and, beside them, their
            # distinct games (in a game of three or more seats, the rankings).
            conn.send(dict(task_id=task['task_id'], player_id=task['player_id'], **fields(results),
                           returns=[float(r) for r in returns]))
    finally:
        close()


def _next_task(conn) -> Optional[dict]:
    try:
        return conn.recv()
    except (EOFError, OSError):  # the parent is gone
        return None


def _build(cfg_dict: dict, player_ids: list, seed_shift: int, roles: dict):
    """``(evaluate(task), close(), fields(results))`` of the child: the run kind's evaluation, the pool and one policy
    per player, and how the evaluation's results travel."""
    import torch
    from easydict import EasyDict
    from sparring.config.registry import POLICY_REGISTRY
    from sparring.worker.env.gym_env import import_env_modules
    from sparring.worker.policy_pool import ParamStore
    from sparring.worker.run_kind import run_kind
    from sparring.worker.runtime import set_torch_threads
    from sparring.worker.seeds import LEAGUE_EVAL_SEED_OFFSET, player_seed

    cfg = EasyDict(cfg_dict)
    set_torch_threads(1)  # the other core trains
    import_env_modules(cfg.import_names)
    kind = run_kind(cfg)
    # Seeded as the parallel mode's evaluator worker is, so both modes evaluate alike.
    seed = cfg.seed + LEAGUE_EVAL_SEED_OFFSET
    pool = kind.policy_pool(ParamStore(os.path.join(cfg.exp_name, 'params')), seed)
    evaluation = kind.evaluation(seed_shift=seed_shift)
    policies: Dict[str, Policy] = {}
    policy_cls = POLICY_REGISTRY.get(cfg.policy.type)

    def evaluate(task: dict):
        pid = task['player_id']
        policy = policies.get(pid)
        if policy is None:
            role = roles.get(pid)
            policy = policies[pid] = policy_cls(cfg.policy, *kind.spaces(role),
                                                seed=player_seed(seed, player_ids.index(pid)))
            policy.role = role
            pool.add_live(pid, policy)
        policy.set_params({k: torch.from_numpy(v) for k, v in task['params'].items()}, task['version'])
        return evaluation(policy, task['opponents'], pool)

    return evaluate, evaluation.close, evaluation.report_fields
