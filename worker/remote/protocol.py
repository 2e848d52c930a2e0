"""The message catalogue of the parallel mode: every kind the commander and its workers exchange.

Requests go worker -> commander and replies come back (the kinds in the second half); ``chunk`` goes
collector -> learner:

``register``        a worker joins; it gets the compiled config, its index and, for a learner, its player
``heartbeat``       liveness both ways; the reply carries the run's state (``run``, ``drain``, ``stop``);
                    a learner's also acknowledges the chunks that reached it
``collect_task``    which player to collect the next chunk for, and where that player's learner listens
                    (with the ids of chunks the collector could not deliver)
``jobs``            a batch of league jobs: one opponent per game a collector plays (a tuple of opponents in a
                    game of three or more seats)
``chunk_report``    a chunk's finished games ``[job_id, outcome]`` (``[job_id, ranks(, teams)]`` in a game of
                    three or more seats) and its env steps
``params_request``  parameters by reference; only sent when newer than the version the worker holds
``publish``         a learner's parameters and train iteration (the league's snapshot / reset verdict back)
``eval_task``, ``eval_report``  evaluation jobs, and their results

Each body is declared once, as a ``TypedDict`` below (what the commander's handlers are type-checked against);
:data:`PROTOCOL` derives each kind's wire schema from it (:func:`~sparring.worker.remote.schema.schema_of`).
The transport (:mod:`sparring.worker.remote.transport`) is handed this catalogue in
:class:`~sparring.worker.remote.security.Security` and refuses any message that does not fit it.
"""
# Not ``from __future__ import annotations``: the TypedDicts' required keys are read at run time.
from typing import Annotated, Dict, List, NotRequired, Optional, TypedDict

from sparring.policy.replay_opponents import roster_problem
from sparring.worker.chunk import REQUIRED_KEYS as CHUNK_ARRAYS
from sparring.worker.remote.schema import (MAX_ABS_VALUE, MAX_INT, Schema, counts, non_negative, numbers, schema_of,
                                           values_within)
from sparring.worker.remote.wire import short


MAX_SEATS = 64  # ranks (and teams) of one game of three or more seats


def _small_ints(value) -> bool:
    return (isinstance(value, list) and 0 < len(value) <= MAX_SEATS
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < MAX_SEATS for v in value))


def _game_results(value) -> Optional[str]:
    """Each finished game: ``[job_id, outcome]`` (two seats), or ``[job_id, ranks]`` / ``[job_id, ranks, teams]``
    (three or more: a rank per player id of the job, 0 the best, and in a team game the team of each)."""
    for i, item in enumerate(value):
        if not isinstance(item, list) or not 2 <= len(item) <= 3 or not isinstance(item[0], int) \
                or isinstance(item[0], bool) or not 0 <= item[0] <= MAX_INT:
            return f'[{i}] must be [job_id, "win" | "draw" | "loss"] or [job_id, ranks(, teams)], got {short(item)}'
        if len(item) == 2 and item[1] in ('win', 'draw', 'loss'):
            continue
        if not _small_ints(item[1]) or (len(item) == 3 and not _small_ints(item[2])):
            return (f'[{i}] must be [job_id, "win" | "draw" | "loss"] or [job_id, ranks(, teams)] with ranks and '
                    f'teams lists of small non-negative ints, got {short(item)}')
    return None


def _rankings(value) -> Optional[str]:
    """An evaluation's games of three or more seats: ``[opponent ids, ranks, teams or None]`` each."""
    for i, item in enumerate(value):
        if (not isinstance(item, list) or len(item) != 3 or not isinstance(item[0], list)
                or not all(isinstance(o, str) for o in item[0]) or not _small_ints(item[1])
                or len(item[1]) != len(item[0]) + 1 or not (item[2] is None or _small_ints(item[2]))):
            return (f'[{i}] must be [opponent ids, ranks (one more than the opponents: the player first), teams or '
                    f'null], got {short(item)}')
    return None


def _outcome_lists(value) -> Optional[str]:
    for key, outcomes in value.items():
        if not isinstance(outcomes, list) or any(o not in ('win', 'draw', 'loss') for o in outcomes):
            return f'[{key!r}] must be a list of "win" | "draw" | "loss", got {short(outcomes)}'
    return None


MAX_IDS = 10_000  # chunk ids in one heartbeat or task request


def _at_most(n: int):
    def check(value) -> Optional[str]:
        return None if len(value) <= n else f'holds {len(value)} items; at most {n} expected'
    return check


Count = Annotated[int, non_negative]
Stats = Annotated[Dict[str, float], numbers]  # a worker's statistics, by name
ChunkIds = Annotated[List[str], _at_most(MAX_IDS)]
# Episode returns: finite (the parser refuses the rest) and within what any sane env produces.
Returns = Annotated[List[float], values_within(MAX_ABS_VALUE)]


# -- requests ----------------------------------------------------------------------------
class RegisterRequest(TypedDict):
    role: str  # 'collector' | 'learner' | 'evaluator'
    worker_id: Optional[str]  # None: the commander names it
    session: str  # new for every process: a register is accepted once per session
    pid: int
    host: str
    player_id: NotRequired[Optional[str]]  # a learner that asks for a player
    replica: NotRequired[Count]  # ... and for a replica of it


class SessionRequest(TypedDict):
    session: str


class HeartbeatRequest(SessionRequest):
    stats: NotRequired[Stats]
    received: NotRequired[ChunkIds]  # a learner's: the chunks that reached it


class GoodbyeRequest(SessionRequest):
    stats: NotRequired[Stats]  # the last figures, which no heartbeat will carry: the run's summary keeps them whole


class NumberedRequest(SessionRequest):
    # A worker numbers its requests; a request sent again (its reply lost or late) keeps its number, so the
    # commander answers it as it did the first time (sessions.WorkerRecord.answer_once).
    request_number: NotRequired[Count]


# What a worker writes into each numbered request (``*Body``; Worker.request adds the session and number), and the
# request as the commander reads it.
class TaskBody(TypedDict):
    undelivered: NotRequired[ChunkIds]  # chunks the collector could not deliver to their learner


class CollectTaskRequest(TaskBody, NumberedRequest):
    pass


class JobsBody(TypedDict):
    player_id: str
    count: Count


class JobsRequest(JobsBody, NumberedRequest):
    pass


class ChunkReportBody(TypedDict):
    task_id: Optional[int]
    chunk_id: str
    player_id: str
    version: Count
    env_steps: Count
    results: Annotated[List[list], _game_results]  # [job_id, outcome] (or [job_id, ranks(, teams)]) per finished game
    episode_returns: NotRequired[Returns]


class ChunkReport(ChunkReportBody, NumberedRequest):
    pass


class ParamsBody(TypedDict):
    ref: str
    have_version: Optional[int]  # the version the worker holds under ref (None: none)


class ParamsRequest(ParamsBody, NumberedRequest):
    pass


class PublishBody(TypedDict):
    player_id: str
    version: Count
    train_iteration: Count
    final: bool  # the learner has drained: its last publish
    chunks_consumed: Count
    endpoint: NotRequired[str]  # where it takes chunks
    stats: NotRequired[Stats]


class PublishRequest(PublishBody, NumberedRequest):
    pass


class EvalReportBody(TypedDict):
    task_id: int
    player_id: str
    version: int
    results: Annotated[Dict[str, List[str]], _outcome_lists]  # outcomes by opponent id
    returns: NotRequired[Returns]
    distinct_games: NotRequired[Annotated[Dict[str, int], counts]]  # by opponent id (an older evaluator sends none)
    # a game of three or more seats: its games as [opponent ids, ranks, teams] (``results`` is then empty)
    rankings: NotRequired[Annotated[List[list], _rankings]]


class EvalReport(EvalReportBody, NumberedRequest):
    pass


# -- replies ----------------------------------------------------------------------------
class Registered(TypedDict):
    worker_id: str
    session: str
    config: dict  # the compiled config
    index: int
    player_id: Optional[str]
    train_iteration: int
    version: int
    restore: bool  # a worker id seen before in this run: restore from its checkpoint
    player_ids: List[str]
    player_roles: NotRequired[Dict[str, str]]  # in a game whose seats have roles, each active player's role
    initial_ref: NotRequired[str]  # ... and a learner's: where its player's initial parameters are (its role's)
    replica: NotRequired[int]  # for a learner of several replicas
    replicas: NotRequired[int]
    group_address: NotRequired[Optional[str]]


class Ack(TypedDict):
    state: str  # 'run' | 'drain' | 'stop'
    accepted: NotRequired[int]
    rejected: NotRequired[int]
    duplicate: NotRequired[bool]
    expected_chunks: NotRequired[int]  # a draining learner's: chunks still to come
    reset_param_ref: NotRequired[Optional[str]]  # a publish's: the parameters to reset to (None: keep training)
    endpoint: NotRequired[str]  # a chunk report's: the learner to push the chunk to instead of the task's
    # a publish's, with replay.max_opponent_age set: the players no older than that age (a replay forgets the rest)
    opponent_ages: NotRequired[Annotated[Dict[str, int], roster_problem]]


class Task(TypedDict):
    task_id: int
    player_id: str
    endpoint: str


class Wait(TypedDict):
    seconds: float
    reason: str


class Stop(TypedDict):
    reason: str


class SeatOffer(TypedDict):
    opponent_id: str
    param_ref: Optional[str]
    kind: str  # the opponent's: 'active' | 'historical' | 'reference'


class JobOffer(TypedDict):
    job_id: int
    opponent_id: str
    param_ref: Optional[str]
    kind: str  # the opponent's: 'active' | 'historical' | 'reference'
    role: NotRequired[str]  # in a game whose seats have roles, the role the opponent plays
    more: NotRequired[List[SeatOffer]]  # in a game of three or more seats: the opponents of the other seats, in order


class JobBatch(TypedDict):
    jobs: List[JobOffer]


class Params(TypedDict):
    ref: str
    version: int
    unchanged: bool  # the worker holds this version already: no arrays
    policy_cfg: Optional[dict]


class EvalJob(TypedDict):
    task_id: int
    player_id: str
    version: int
    opponents: List[list]  # [opponent id, param ref]


class ErrorReply(TypedDict):
    error: str
    reason: str


# -- data -------------------------------------------------------------------------------
class ChunkHeader(TypedDict):
    chunk_id: str
    player_id: str
    version: Count
    env_steps: Count


PROTOCOL: Dict[str, Schema] = {
    'register': schema_of(RegisterRequest),
    'heartbeat': schema_of(HeartbeatRequest),
    'goodbye': schema_of(GoodbyeRequest),
    'collect_task': schema_of(CollectTaskRequest),
    'jobs': schema_of(JobsRequest),
    'chunk_report': schema_of(ChunkReport),
    'params_request': schema_of(ParamsRequest),
    'publish': schema_of(PublishRequest, array_names=None),
    'eval_task': schema_of(NumberedRequest),
    'eval_report': schema_of(EvalReport),
    'registered': schema_of(Registered),
    'ack': schema_of(Ack),
    'task': schema_of(Task),
    'wait': schema_of(Wait),
    'stop': schema_of(Stop),
    'job_batch': schema_of(JobBatch),
    'params': schema_of(Params, array_names=None),
    'eval_job': schema_of(EvalJob),
    'error': schema_of(ErrorReply),
    'chunk': schema_of(ChunkHeader, required_arrays=CHUNK_ARRAYS, array_names=None),
}
