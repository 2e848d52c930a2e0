"""Bounds on what a worker reports, checked before anything is recorded: a holder of the secret may lie, but
only within what its task allows.

A chunk report's env steps come out of the env-step budget, so they are at most the chunk size of a
collect task (``chunk_len`` x ``collector_env_num``); an evaluation report holds at most the games its job
asked for (``env.n_evaluator_episodes`` per opponent, as many returns). A report beyond them raises
:class:`~sparring.worker.remote.wire.MessageError`: the worker is told why, and nothing is journaled.
"""
from __future__ import annotations

from typing import Any, Mapping

from sparring.worker.remote.wire import MessageError


def check_chunk_report(body: Mapping[str, Any], chunk_steps: int) -> None:
    if body['env_steps'] > chunk_steps:
        raise MessageError('schema', f'chunk_report: env_steps {body["env_steps"]} exceeds the chunk size '
                                     f'{chunk_steps} (parallel.chunk_len or policy.collect.n_steps, times '
                                     f'env.collector_env_num)')


def check_eval_report(body: Mapping[str, Any], games: int) -> None:
    too_many = sorted(oid for oid, outcomes in body['results'].items() if len(outcomes) > games)
    if len(body.get('rankings', ())) > games:
        too_many.append('the rankings')
    if too_many or len(body.get('returns', ())) > games:
        raise MessageError('schema', f'eval_report: at most {games} games (env.n_evaluator_episodes) per opponent '
                                     f'and as many returns; got more against {too_many[:5] or "none"} and '
                                     f'{len(body.get("returns", ()))} returns')
