"""The commander of a game of three seats, without processes or sockets: job offers of a tuple of opponents, ranked
games recorded once and only from the worker that holds their jobs, a bad ranking refused in one line, the
journal replayed to the same league after a crash, and an evaluator's rankings rated."""
import copy
import re

import numpy as np
import pytest

from sparring.config import compile_config
from sparring.framework.commander import Commander
from sparring.framework.run_setup import complete_league_config
from tests.framework.test_parallel_commander import Clock, join, publish, report, req

pytest.importorskip('pyspiel')
from sparring.dizoo.openspiel.config.kuhn3_league import config as KUHN3


def _config(tmp_path):
    config = copy.deepcopy(KUHN3)
    config.update(exp_name=str(tmp_path / 'run'))
    config['env'].update(collector_env_num=2, evaluator_env_num=2, n_evaluator_episodes=4)
    config['policy']['collect'].update(n_steps=4)
    config['league']['payoff'] = dict(decay=1.0)
    config['league']['players']['naive_sp'].update(one_phase_step=2)
    config['train'].update(max_env_steps=10_000, max_wall_seconds=0.0, eval_every_iters=0, progress_bar=False,
                           tensorboard=False)
    config['battle'].update(exact_analysis=False)
    config['parallel'] = dict(worker_timeout_seconds=5.0, save_every_seconds=1e9, log_every_seconds=1e9)
    return config


def _start(tmp_path):
    cfg = compile_config(_config(tmp_path), save=False)
    complete_league_config(cfg)
    commander = Commander(cfg, clock=Clock())
    (pid,) = commander.coordinator.player_ids
    session, _ = join(commander, 'learner', player_id=pid)
    publish(commander, session, pid, 0, 0)
    return commander, pid, session


def test_jobs_offer_a_tuple_of_opponents_and_ranked_games_are_recorded_once(tmp_path):
    commander, pid, _ = _start(tmp_path)
    a, _ = join(commander, 'collector')
    b, _ = join(commander, 'collector')
    _, batch, _ = commander.handle(req('jobs', session=a, player_id=pid, count=3))
    jobs = batch['jobs']
    assert all(len(job['more']) == 1 and {'opponent_id', 'param_ref', 'kind'} <= set(job['more'][0]) for job in jobs)
    results = [[jobs[0]['job_id'], [0, 1, 2]], [jobs[1]['job_id'], [2, 2, 0]]]
    kind, ack, _ = report(commander, b, pid, results)  # not b's jobs
    assert ack['accepted'] == 0 and ack['rejected'] == 2
    kind, ack, _ = report(commander, a, pid, results + [results[0]])  # a job reported twice in one report
    assert ack['accepted'] == 2 and ack['rejected'] == 1
    kind, ack, _ = report(commander, a, pid, results)  # and again
    assert ack['accepted'] == 0 and ack['rejected'] == 2
    co = commander.coordinator
    assert co.counters['games'] == 2 and set(commander.state.outstanding) == {jobs[2]['job_id']}
    # naive_sp_0 in every seat (the league's self-play): no pairwise game, two self-play games
    assert co.league.get_player(pid).self_play_games == 2


@pytest.mark.parametrize('result, match', [
    ([0, 1], r'ranks\[0\]: expected 3 ranks in 0\.\.2'),
    ([0, 1, 5], r'ranks\[0\]: expected 3 ranks in 0\.\.2'),
    ('win', r'expected \[job_id, ranks\] or \[job_id, ranks, teams\] in a game of 3 seats'),
    ([[0, 1, 2], [0, 0, 0]], r'"teams" \[0, 0, 0\] puts every seat in one team'),
])
def test_a_bad_ranking_is_refused_in_one_line_and_nothing_of_the_report_is_recorded(tmp_path, result, match):
    commander, pid, _ = _start(tmp_path)
    a, _ = join(commander, 'collector')
    _, batch, _ = commander.handle(req('jobs', session=a, player_id=pid, count=2))
    good, bad = (job['job_id'] for job in batch['jobs'])
    item = [bad, *result] if isinstance(result, list) and isinstance(result[0], list) else [bad, result]
    kind, body, _ = commander.handle(req('chunk_report', session=a, task_id=None, chunk_id='c', player_id=pid,
                                         version=0, env_steps=4, results=[[good, [0, 1, 2]], item]))
    assert kind == 'error' and body['reason'] == 'schema'
    assert f'job {bad}' in body['error'] and len(body['error'].splitlines()) == 1
    assert re.search(match, body['error']), body['error']
    assert commander.coordinator.counters['games'] == 0 and set(commander.state.outstanding) == {good, bad}


def test_a_restarted_commander_replays_its_ranked_games_to_the_same_league(tmp_path):
    commander, pid, learner = _start(tmp_path)
    a, _ = join(commander, 'collector')

    def play(n_chunks):
        for chunk in range(n_chunks):
            _, batch, _ = commander.handle(req('jobs', session=a, player_id=pid, count=3))
            ranks = [[0, 1, 2], [2, 0, 1], [1, 1, 0]]
            report(commander, a, pid, [[j['job_id'], r] for j, r in zip(batch['jobs'][:2], ranks[chunk % 2:])])

    play(3)
    publish(commander, learner, pid, 3, 3)  # a snapshot, drawn by PFSP in later jobs
    commander.save()  # what follows lives only in the journal
    play(4)
    expected = commander.coordinator.league.state_dict()
    steps, games = commander.coordinator.env_steps, commander.coordinator.counters['games']
    outstanding = len(commander.state.outstanding)
    commander.close()  # as if killed: no final save
    resumed = Commander(commander.cfg, resume=True, clock=Clock())
    state = resumed.coordinator.league.state_dict()
    np.testing.assert_equal(state['payoff'], expected['payoff'])
    assert state['rng_state'] == expected['rng_state'] and state['job_count'] == expected['job_count']
    assert (resumed.coordinator.env_steps, resumed.coordinator.counters['games']) == (steps, games) == (28, 14)
    assert not resumed.state.outstanding and resumed.coordinator.counters['jobs_abandoned'] == outstanding == 7
    resumed.close()


def test_an_evaluators_rankings_are_rated_and_a_foreign_opponent_refused(tmp_path):
    config = _config(tmp_path)
    config['train'].update(eval_every_iters=1)
    cfg = compile_config(config, save=False)
    complete_league_config(cfg)
    commander = Commander(cfg, clock=Clock())
    (pid,) = commander.coordinator.player_ids
    learner, _ = join(commander, 'learner', player_id=pid)
    publish(commander, learner, pid, 0, 0)
    publish(commander, learner, pid, 1, 1)  # an evaluation falls due
    e, _ = join(commander, 'evaluator')
    kind, job, _ = commander.handle(req('eval_task', session=e))
    assert kind == 'eval_job' and job['opponents'] == [['random', 'bot:random']]
    foreign = [[['someone', 'random'], [0, 1, 2], None]]
    kind, body, _ = commander.handle(req('eval_report', session=e, task_id=job['task_id'], player_id=pid, version=1,
                                         results={}, rankings=foreign))
    assert kind == 'error' and "against ['random'], got games against ['someone']" in body['error']
    rankings = [[['random', 'random'], [0, 1, 2], None], [['random', 'random'], [2, 0, 1], None]]
    kind, _, _ = commander.handle(req('eval_report', session=e, task_id=job['task_id'], player_id=pid, version=1,
                                      results={}, rankings=rankings, returns=[1.0, -1.0]))
    assert kind == 'ack'
    assert commander.coordinator.last_eval[pid] == dict(chips=0.0, games=2, ahead=dict(random=0.5),
                                                        vs=dict(random=dict(win=0.5, draw=0.0, loss=0.5, games=4)))
    assert commander.coordinator.league.payoff.totals('random')['games'] == 4
    commander.close()


def test_parallel_mode_takes_forward_pass_workers_for_a_game_of_three_seats(tmp_path, monkeypatch):
    """A game of three seats may act through forward-pass workers (they were refused for it): the run is set up and
    started with them (here a stand-in for the run, which stops the pipeline once reached)."""
    from sparring.framework import parallel

    class Reached(Exception):
        pass

    def started(cfg, resume=False):
        raise Reached(cfg.parallel.inference.workers)

    monkeypatch.setattr(parallel, 'ParallelRun', started)
    config = _config(tmp_path)
    config['parallel'] = dict(inference=dict(workers=1))
    with pytest.raises(Reached) as reached:
        parallel.parallel_pipeline(config)
    assert reached.value.args == (1,)
