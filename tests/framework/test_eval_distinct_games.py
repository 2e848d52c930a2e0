"""Every evaluation path carries how many distinct games a league evaluation played: in line in the serial
loop, from the background child, and from an evaluator worker through the ``eval_report`` message to the
commander. The count lands in the evaluation's report (kept, and logged to TensorBoard as
``eval/<player>/vs_<opponent>/distinct_games``), and the log line names the opponents whose games repeated."""
import os
import re

import pytest

from sparring.config.registry import POLICY_REGISTRY
from sparring.framework.commander import Commander
from sparring.worker.remote.protocol import PROTOCOL
from sparring.framework.run_setup import prepare_config
from sparring.framework.serial_run import SerialRun
from sparring.worker.policy_pool import ParamStore, PolicyPool
from sparring.worker.remote.evaluator import EvaluatorWorker
from sparring.worker.remote.schema import MAX_INT
from sparring.worker.remote.wire import MessageError, Signer, decode, encode
from sparring.worker.run_kind import run_kind
from tests.scripts import load_script

helpers = load_script('tests/framework/test_parallel_commander.py', 'commander_helpers')

GAMES = 12
REPEATED = re.compile(r'^eval naive_sp_0 \(iteration \d+\): .* \(games repeated: (.*)\)$')


def _tictactoe(exp_name: str, **train) -> dict:
    """One self-play player, greedy evaluation against the heuristic bot (whose games repeat) and the random bot."""
    return dict(
        exp_name=exp_name, seed=5,
        env=dict(type='tictactoe', collector_env_num=2, evaluator_env_num=4, n_evaluator_episodes=GAMES),
        policy=dict(type='ppo', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8),
                    learn=dict(epochs=1, num_minibatches=1)),
        league=dict(type='one_vs_one'),
        battle=dict(eval_deterministic=True, eval_opponents=['bot:tictactoe_heuristic']),
        train=dict(dict(max_env_steps=10_000, eval_every_iters=1, checkpoint_every_iters=0, progress_bar=False,
                        tensorboard=False), **train),
    )


class _Scalars:
    def __init__(self):
        self.seen = {}

    def scalars(self, figures, step, prefix=''):
        self.seen.update({prefix + k: v for k, v in figures.items()})

    def line(self, text):
        pass


def _check_report(report: dict, lines, scalars: dict) -> None:
    """Each opponent's report has its count, TensorBoard has it, and the log line names the repeated ones."""
    assert set(report) == {'random', 'tictactoe_heuristic'}
    for oid, s in report.items():
        assert 1 <= s['distinct_games'] <= s['games'] == GAMES
        assert scalars[f'eval/naive_sp_0/vs_{oid}/distinct_games'] == s['distinct_games']
    repeated = {oid: s['distinct_games'] for oid, s in report.items() if 2 * s['distinct_games'] <= GAMES}
    assert 'tictactoe_heuristic' in repeated  # greedy against a bot without chance: the same few games
    [line] = [line for line in lines if line.startswith('eval naive_sp_0')]
    named = REPEATED.match(line).group(1)
    assert named == ', '.join(f'{oid} {n} distinct of {GAMES}' for oid, n in repeated.items())


def _evaluate_once(tmp_path, name: str, **train):
    lines, logger = [], _Scalars()
    run = SerialRun(prepare_config(_tictactoe(str(tmp_path / name), **train)), say=lines.append, logger=logger)
    try:
        reports = {}
        while not reports:
            run.train_round()
            reports = run.evaluate_pending()
        return reports['naive_sp_0'], lines, logger.seen, run.coordinator.history
    finally:
        run.close()


def test_an_evaluation_in_line_counts_its_distinct_games(tmp_path, one_torch_thread):
    report, lines, scalars, history = _evaluate_once(tmp_path, 'in_line')
    _check_report(report, lines, scalars)
    assert history[-1]['eval']['naive_sp_0'] == report  # the run's history (and the report page's course) keep it


@pytest.mark.slow
def test_an_evaluation_in_the_background_counts_its_distinct_games(tmp_path, one_torch_thread):
    report, lines, scalars, _ = _evaluate_once(tmp_path, 'background', eval_in_background=True)
    _check_report(report, lines, scalars)


# -- the parallel mode: an evaluator worker's report, through the wire's schema, to the commander ------------

def _evaluator_report(commander, job) -> dict:
    """The body an evaluator worker sends for ``job``, played for real on the run's evaluation."""
    cfg = commander.cfg
    kind = run_kind(cfg)
    observation_space, action_space = kind.spaces()
    policy = POLICY_REGISTRY.get(cfg.policy.type)(cfg.policy, observation_space, action_space, seed=0)
    pool = PolicyPool(ParamStore(os.path.join(cfg.exp_name, 'params')), observation_space, action_space, seed=1)
    worker = EvaluatorWorker.__new__(EvaluatorWorker)  # its job handling only: no commander to register with
    worker.players = type('Players', (), dict(get=lambda self, pid, refresh: policy, pool=pool))()
    worker.evaluation, worker.evaluated, sent = kind.evaluation(), 0, []
    worker.request = lambda kind_, body: sent.append((kind_, body))
    worker._evaluate(job)
    [(kind_, body)] = sent
    assert kind_ == 'eval_report'
    return body


def _through_the_wire(body: dict) -> dict:
    signer = Signer(b'a shared secret of at least 16 bytes')
    return decode(encode('eval_report', body, signer=signer, schemas=PROTOCOL), signer=signer, schemas=PROTOCOL).body


def _commander_with_job(tmp_path):
    commander = Commander(helpers._cfg(tmp_path), clock=helpers.Clock(), logger=_Scalars())
    evaluator, _ = helpers.join(commander, 'evaluator')
    commander.coordinator._queue_evaluation(commander.coordinator.player_ids[0], final=False)
    kind, job, _ = commander.handle(helpers.req('eval_task', session=evaluator, request_number=1))
    assert kind == 'eval_job' and job['opponents'], job
    return commander, evaluator, job


def test_an_evaluator_workers_count_reaches_the_commanders_report(tmp_path, one_torch_thread):
    commander, evaluator, job = _commander_with_job(tmp_path)
    body = _through_the_wire(dict(_evaluator_report(commander, job), session=evaluator, request_number=2))
    counts = body['distinct_games']
    assert set(counts) == {oid for oid, _ in job['opponents']}
    assert commander.handle(helpers.req('eval_report', **body))[0] == 'ack'
    pid = job['player_id']
    for oid, count in counts.items():
        assert 1 <= count <= commander.cfg.env.n_evaluator_episodes
        assert commander.coordinator.last_eval[pid][oid]['distinct_games'] == count
        assert commander.logger.seen[f'eval/{pid}/vs_{oid}/distinct_games'] == count


def test_a_report_without_counts_is_read_as_before_and_counts_beyond_the_games_are_refused(tmp_path):
    commander, evaluator, job = _commander_with_job(tmp_path)
    results = {oid: ['win', 'loss', 'draw'] for oid, _ in job['opponents']}
    common = dict(session=evaluator, task_id=job['task_id'], player_id=job['player_id'], version=0, results=results)
    oid = next(iter(results))
    kind, body, _ = commander.handle(helpers.req('eval_report', request_number=2, distinct_games={oid: 4}, **common))
    assert kind == 'error' and f"4 distinct games against {oid!r}; expected 1 to 3" in body['error'], body
    assert commander.handle(helpers.req('eval_report', request_number=3, **common))[0] == 'ack'  # an older peer
    assert 'distinct_games' not in commander.coordinator.last_eval[job['player_id']][oid]


@pytest.mark.parametrize('count', [-1, MAX_INT + 1, True, 2.0, '3'])
def test_the_wire_bounds_each_count(count):
    body = dict(session='s', request_number=1, task_id=1, player_id='p', version=0, results={'bot': ['win']},
                distinct_games={'bot': count})
    with pytest.raises(MessageError, match=r"field 'distinct_games' \['bot'\] must be an integer from 0 to") as err:
        _through_the_wire(body)
    assert err.value.reason == 'schema'
