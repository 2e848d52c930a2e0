"""The message catalogue of the parallel mode: every kind the commander and its workers exchange.

Requests go worker -> commander and replies come back (the kinds in the second half); ``chunk`` goes
collector -> learner:

``register``        a worker joins; it gets the compiled config, its index and, for a learner, its player
``heartbeat``       liveness both ways; the reply carries the run's state (``run``, ``drain``, ``stop``);
                    a learner's also acknowledges the chunks that reached it
``collect_task``    which player to collect the next chunk for, and where that player's learner listens
                    (with the ids of chunks the collector could not deliver)
``jobs``            a batch of league jobs: one opponent per game a collector plays
``chunk_report``    a chunk's finished games ``[job_id, outcome]`` and its env steps
``params_request``  parameters by reference; only sent when newer than the version the worker holds
``publish``         a learner's parameters and train iteration (the league's snapshot / reset verdict back)
``eval_task``, ``eval_report``  evaluation jobs, and their results The transport (:mod:`sparring.worker.remote.transport`) is handed this catalogue
in :class:`~sparring.worker.remote.security.Security` and refuses any message that does not fit it.
"""
from __future__ import annotations

from typing import Dict, Optional

from sparring.worker.chunk import REQUIRED_KEYS as CHUNK_ARRAYS
from sparring.worker.remote.schema import (BOOL, DICT, FLOAT, INT, LIST, MAX_ABS_VALUE, MAX_INT, NONE, STR, Schema,
                                           field, non_negative, numbers, values_within)
from sparring.worker.remote.wire import short


def _outcome_pairs(value) -> Optional[str]:
    for i, pair in enumerate(value):
        if (len(pair) != 2 or not isinstance(pair[0], int) or isinstance(pair[0], bool)
                or not 0 <= pair[0] <= MAX_INT or pair[1] not in ('win', 'draw', 'loss')):
            return f'[{i}] must be [job_id, "win" | "draw" | "loss"], got {short(pair)}'
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


# A worker numbers its requests; a request sent again (its reply lost or late) keeps its number, so the
# commander answers it as it did the first time (:func:`~sparring.framework.sessions.answer_once`).
NUMBER = field(INT, optional=True, check=non_negative)
# Episode returns: finite (the parser refuses the rest) and within what any sane env produces.
RETURNS = field(LIST, optional=True, items=(float,), check=values_within(MAX_ABS_VALUE))

PROTOCOL: Dict[str, Schema] = {
    # -- requests ----------------------------------------------------------------------------
    'register': Schema(dict(role=field(STR), worker_id=field(STR, NONE), session=field(STR), pid=field(INT),
                            host=field(STR), player_id=field(STR, NONE, optional=True),
                            replica=field(INT, optional=True, check=non_negative))),
    'heartbeat': Schema(dict(session=field(STR), stats=field(DICT, optional=True, check=numbers),
                             received=field(LIST, optional=True, items=(str,), check=_at_most(MAX_IDS)))),
    'goodbye': Schema(dict(session=field(STR))),
    'collect_task': Schema(dict(session=field(STR), request_number=NUMBER,
                                undelivered=field(LIST, optional=True, items=(str,), check=_at_most(MAX_IDS)))),
    'jobs': Schema(dict(session=field(STR), request_number=NUMBER, player_id=field(STR),
                        count=field(INT, check=non_negative))),
    'chunk_report': Schema(dict(session=field(STR), request_number=NUMBER, task_id=field(INT, NONE),
                                chunk_id=field(STR), player_id=field(STR), version=field(INT, check=non_negative),
                                env_steps=field(INT, check=non_negative),
                                results=field(LIST, items=(list,), check=_outcome_pairs),
                                episode_returns=RETURNS)),
    'params_request': Schema(dict(session=field(STR), request_number=NUMBER, ref=field(STR),
                                  have_version=field(INT, NONE))),
    'publish': Schema(dict(session=field(STR), request_number=NUMBER, player_id=field(STR),
                           version=field(INT, check=non_negative),
                           train_iteration=field(INT, check=non_negative), final=field(BOOL),
                           chunks_consumed=field(INT, check=non_negative), endpoint=field(STR, optional=True),
                           stats=field(DICT, optional=True, check=numbers)), array_names=None),
    'eval_task': Schema(dict(session=field(STR), request_number=NUMBER)),
    'eval_report': Schema(dict(session=field(STR), request_number=NUMBER, task_id=field(INT), player_id=field(STR),
                               version=field(INT), results=field(DICT, check=_outcome_lists),
                               returns=RETURNS)),
    # -- replies ----------------------------------------------------------------------------
    'registered': Schema(dict(worker_id=field(STR), session=field(STR), config=field(DICT),
                              index=field(INT), player_id=field(STR, NONE), train_iteration=field(INT),
                              version=field(INT), restore=field(BOOL), player_ids=field(LIST, items=(str,)),
                              replica=field(INT, optional=True), replicas=field(INT, optional=True),
                              group_address=field(STR, NONE, optional=True))),
    'ack': Schema(dict(state=field(STR), accepted=field(INT, optional=True), rejected=field(INT, optional=True),
                       duplicate=field(BOOL, optional=True), expected_chunks=field(INT, optional=True),
                       reset_param_ref=field(STR, NONE, optional=True),
                       endpoint=field(STR, optional=True))),
    'task': Schema(dict(task_id=field(INT), player_id=field(STR), endpoint=field(STR))),
    'wait': Schema(dict(seconds=field(FLOAT), reason=field(STR))),
    'stop': Schema(dict(reason=field(STR))),
    'job_batch': Schema(dict(jobs=field(LIST, items=(dict,)))),
    'params': Schema(dict(ref=field(STR), version=field(INT), unchanged=field(BOOL),
                          policy_cfg=field(DICT, NONE)), array_names=None),
    'eval_job': Schema(dict(task_id=field(INT), player_id=field(STR), version=field(INT),
                            opponents=field(LIST, items=(list,)))),
    'error': Schema(dict(error=field(STR), reason=field(STR))),
    # -- data -------------------------------------------------------------------------------
    'chunk': Schema(dict(chunk_id=field(STR), player_id=field(STR), version=field(INT, check=non_negative),
                         env_steps=field(INT, check=non_negative)),
                    required_arrays=CHUNK_ARRAYS, array_names=None),
}
