"""The commander's decisions without processes or sockets: exactly-once games, timeouts, the journal, the run's course."""
import time
import uuid
from collections import deque

import numpy as np
import pytest

from sparring.config import compile_config
from sparring.framework.commander import Commander
from sparring.framework.run_setup import complete_league_config
from sparring.league import SingleAgentLeague
from sparring.worker.chunk import Chunk
from sparring.worker.remote.learner import LearnerWorker
from sparring.worker.remote.wire import Message, params_to_arrays


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _cfg(tmp_path, **league):
    cfg = compile_config(dict(
        exp_name=str(tmp_path / 'run'),
        env=dict(type='zero_sum_2x2', collector_env_num=2, evaluator_env_num=2, n_evaluator_episodes=4),
        policy=dict(type='ppo', model=dict(hidden_sizes=[8]), collect=dict(n_steps=4),
                    learn=dict(epochs=1, num_minibatches=1)),
        league=dict(dict(type='one_vs_one', active_players=dict(naive_sp=2), payoff=dict(decay=1.0),
                         players=dict(naive_sp=dict(one_phase_step=2))), **league),
        train=dict(max_env_steps=64, eval_every_iters=0, progress_bar=False, tensorboard=False),
        parallel=dict(worker_timeout_seconds=5.0, save_every_seconds=1e9, log_every_seconds=1e9),
    ), save=False)
    complete_league_config(cfg)
    return cfg


def req(kind, **body):
    return Message(kind, body, body.pop('_arrays', {}), uuid.uuid4().hex, 'test', time.time())


def join(commander, role, **extra):
    session = uuid.uuid4().hex
    kind, body, _ = commander.handle(req('register', role=role, worker_id=extra.pop('worker_id', None),
                                         session=session, pid=1, host='here', **extra))
    assert kind == 'registered', body
    return session, body


def publish(commander, session, pid, version, iteration, final=False, consumed=0):
    arrays = params_to_arrays(commander.coordinator.store.get('init')['params'])
    return commander.handle(req('publish', session=session, player_id=pid, version=version, train_iteration=iteration,
                                final=final, chunks_consumed=consumed, endpoint=f'tcp://127.0.0.1:1{version}',
                                _arrays=arrays))


def start(tmp_path, **league):
    clock = Clock()
    commander = Commander(_cfg(tmp_path, **league), clock=clock)
    learners = {}
    for pid in commander.coordinator.player_ids:
        session, body = join(commander, 'learner', player_id=pid)
        assert body['player_id'] == pid and not body['restore']
        learners[pid] = session
        publish(commander, session, pid, 0, 0)
    return commander, clock, learners


def report(commander, session, pid, results, chunk_id=None, task_id=None, steps=4):
    return commander.handle(req('chunk_report', session=session, task_id=task_id, chunk_id=chunk_id or uuid.uuid4().hex,
                                player_id=pid, version=0, env_steps=steps, results=results))


def recorded_games(league):
    return sum(r['games'] for _, _, r in league.payoff.played_pairs()) + \
        sum(league.get_player(p.player_id).self_play_games for p in league.active_players)



class RecordingLogger:
    """What a commander says: its lines and the scalars it would send to TensorBoard."""

    def __init__(self):
        self.scalars_seen, self.lines = {}, []

    def scalars(self, figures, step, prefix=''):
        self.scalars_seen.update({prefix + k: v for k, v in figures.items()})

    def line(self, text):
        self.lines.append(text)

    def progress(self, steps):
        pass

def test_each_game_is_recorded_once_and_only_by_the_worker_that_holds_its_job(tmp_path):
    commander, _, _ = start(tmp_path)
    a, _ = join(commander, 'collector')
    b, _ = join(commander, 'collector')
    kind, task, _ = commander.handle(req('collect_task', session=a))
    assert kind == 'task' and task['endpoint'].startswith('tcp://')
    pid = task['player_id']
    _, batch, _ = commander.handle(req('jobs', session=a, player_id=pid, count=6))
    jobs = [j['job_id'] for j in batch['jobs']]
    assert len(set(jobs)) == 6
    kind, ack, _ = report(commander, a, pid, [[j, 'win'] for j in jobs[:4]], chunk_id='c1', task_id=task['task_id'])
    assert (ack['accepted'], ack['rejected']) == (4, 0)
    assert recorded_games(commander.coordinator.league) == 4
    # the same chunk again (a report sent again when its answer was late): nothing more is recorded, and
    # the collector hears the same count as the first time
    _, again, _ = report(commander, a, pid, [[j, 'win'] for j in jobs[:4]], chunk_id='c1')
    assert again['duplicate'] and (again['accepted'], again['rejected']) == (4, 0)
    # finished jobs in a new chunk, another worker's jobs, unknown jobs: refused
    _, other, _ = report(commander, b, pid, [[jobs[4], 'loss'], [99_999, 'draw']])
    _, twice, _ = report(commander, a, pid, [[jobs[0], 'win'], [jobs[4], 'draw']])
    assert (other['accepted'], other['rejected']) == (0, 2) and (twice['accepted'], twice['rejected']) == (1, 1)
    assert recorded_games(commander.coordinator.league) == 5 == commander.coordinator.counters['games']
    assert commander.coordinator.counters['results_refused'] == 3
    # each distinct chunk with accepted games counts once; the one whose results were all refused spends nothing
    assert commander.coordinator.env_steps == 2 * 4


def test_a_collector_s_goodbye_brings_its_last_figures_into_the_summary(tmp_path):
    commander, _, _ = start(tmp_path)
    a, registered = join(commander, 'collector')
    _, task, _ = commander.handle(req('collect_task', session=a))
    pid = task['player_id']
    _, batch, _ = commander.handle(req('jobs', session=a, player_id=pid, count=6))
    jobs = [j['job_id'] for j in batch['jobs']]
    _, ack, _ = report(commander, a, pid, [[j, 'win'] for j in jobs[:2]], task_id=task['task_id'])
    commander.handle(req('heartbeat', session=a, stats=dict(games_accepted=2.0)))
    _, last, _ = report(commander, a, pid, [[j, 'win'] for j in jobs[2:4]])
    assert ack['accepted'] + last['accepted'] == 4 == commander.coordinator.counters['games']
    # what its last heartbeat said lags the reports after it; its goodbye says what it ends with
    commander.handle(req('goodbye', session=a, stats=dict(games_accepted=4.0)))
    stats = commander.report.summary([], '')['worker_stats'][registered['worker_id']]
    assert stats['games_accepted'] == 4.0
    assert commander.coordinator.counters['jobs_abandoned'] == 2  # its two unfinished games: never recorded


def test_goodbye_may_carry_a_worker_s_figures_on_the_wire():
    from sparring.framework.messaging import decode, encode
    from sparring.worker.remote.wire import Signer
    message = decode(encode('goodbye', dict(session='s', stats=dict(games_accepted=4.0)), signer=Signer(None)),
                     signer=Signer(None))
    assert message.body == dict(session='s', stats=dict(games_accepted=4.0))


def test_reports_whose_results_were_all_refused_spend_none_of_the_budget(tmp_path):
    commander, _, _ = start(tmp_path)
    a, _ = join(commander, 'collector')
    pid = commander.coordinator.player_ids[0]
    for _ in range(20):  # no task, and results of jobs never handed out
        _, ack, _ = report(commander, a, pid, [[99_999, 'win']], steps=commander.chunk_steps)
        assert (ack['accepted'], ack['rejected']) == (0, 1)
        report(commander, a, pid, [], steps=commander.chunk_steps)  # no task, no games: no work asked for
    kind, task, _ = commander.handle(req('collect_task', session=a))
    report(commander, a, pid, [[99_998, 'win']], task_id=task['task_id'], steps=commander.chunk_steps)
    assert commander.coordinator.env_steps == 0
    assert commander.coordinator.counters['env_steps_refused'] == 41 * commander.chunk_steps
    # the chunk of its task with no game ended yet is work asked for: it counts
    kind, task, _ = commander.handle(req('collect_task', session=a))
    report(commander, a, pid, [], task_id=task['task_id'], steps=commander.chunk_steps)
    assert commander.coordinator.env_steps == commander.chunk_steps


def test_a_silent_collector_is_dropped_its_games_abandoned_and_its_task_given_away(tmp_path):
    commander, clock, learners = start(tmp_path)
    a, _ = join(commander, 'collector')
    _, task, _ = commander.handle(req('collect_task', session=a))
    _, batch, _ = commander.handle(req('jobs', session=a, player_id=task['player_id'], count=3))
    for session in learners.values():  # the learners keep heartbeating
        clock.now += 4.0
        commander.handle(req('heartbeat', session=session))
    clock.now += 2.0
    commander.tick()  # 6 s without a word from the collector: timeout 5 s
    assert a not in commander.sessions.workers and commander.coordinator.counters['jobs_abandoned'] == 3
    assert not commander.collect.tasks and not commander.state.outstanding
    kind, err, _ = report(commander, a, task['player_id'], [[j['job_id'], 'win'] for j in batch['jobs']])
    assert kind == 'error' and err['reason'] == 'session'
    assert recorded_games(commander.coordinator.league) == 0
    b, _ = join(commander, 'collector')
    assert commander.handle(req('collect_task', session=b))[0] == 'task'


def test_the_budget_is_handed_out_once_then_learners_drain_and_the_final_evaluation_ends_the_run(tmp_path):
    commander, _, learners = start(tmp_path)
    a, _ = join(commander, 'collector')
    chunk_steps = commander.chunk_steps
    assert chunk_steps == 4 * 2
    tasks = []
    while True:
        kind, body, _ = commander.handle(req('collect_task', session=a))
        if kind != 'task':
            break
        tasks.append(body)
        pid = body['player_id']
        report(commander, a, pid, [], task_id=body['task_id'], steps=chunk_steps)
        n = sum(t['player_id'] == pid for t in tasks)
        publish(commander, learners[pid], pid, n, n, consumed=n)  # the learner keeps up
    assert len(tasks) == 64 // chunk_steps and commander.coordinator.env_steps == 64
    assert {t['player_id'] for t in tasks} == set(commander.coordinator.player_ids)  # the players share the budget evenly
    assert commander.coordinator.phase == 'drain' and kind == 'stop'
    pid0, pid1 = commander.coordinator.player_ids
    _, state, _ = commander.handle(req('heartbeat', session=learners[pid0]))
    assert state == dict(state='drain', expected_chunks=4)
    publish(commander, learners[pid0], pid0, 4, 4, final=True, consumed=4)
    assert commander.coordinator.phase == 'drain'
    publish(commander, learners[pid1], pid1, 4, 4, final=True, consumed=4)
    assert commander.coordinator.phase == 'evaluate'
    e, _ = join(commander, 'evaluator')
    for _ in commander.coordinator.player_ids:
        kind, job, _ = commander.handle(req('eval_task', session=e))
        assert kind == 'eval_job'
        results = {oid: ['win', 'loss'] for oid, _ in job['opponents']}
        assert commander.handle(req('eval_report', session=e, task_id=job['task_id'], player_id=job['player_id'],
                                    version=job['version'], results=results))[0] == 'ack'
    assert commander.coordinator.phase == 'done'
    assert set(commander.coordinator.last_eval) == set(commander.coordinator.player_ids)
    assert commander.handle(req('heartbeat', session=a))[1]['state'] == 'stop'


def test_publishing_drives_snapshots_whose_parameters_are_stored(tmp_path):
    commander, _, learners = start(tmp_path)
    pid = commander.coordinator.player_ids[0]
    before = len(commander.coordinator.league.historical_players)
    publish(commander, learners[pid], pid, 5, 5)  # one_phase_step=2, no historical win rates: snapshot at 2 phases
    snapshots = [p for p in commander.coordinator.league.historical_players if p.parent_id == pid and p.step == 5]
    assert len(commander.coordinator.league.historical_players) == before + 1 and snapshots
    stored = commander.coordinator.store.get(snapshots[0].param_ref)
    assert stored['version'] == 5
    # a learner may not publish another player's parameters
    kind, err, _ = publish(commander, learners[pid], commander.coordinator.player_ids[1], 6, 6)
    assert kind == 'error' and 'may not publish' in err['error']


def test_a_reset_is_passed_back_to_the_learner(tmp_path):
    commander, _, learners = start(tmp_path, players=dict(naive_sp=dict(one_phase_step=2, mutate_prob=1.0)))
    pid = commander.coordinator.player_ids[0]
    _, ack, _ = publish(commander, learners[pid], pid, 4, 4)
    assert ack['reset_param_ref'] == 'init'


def test_a_request_sent_again_is_answered_as_the_first_time_not_done_twice(tmp_path):
    # A reply lost on the way: the worker sends the same request (same number) again.
    commander, _, learners = start(tmp_path, players=dict(naive_sp=dict(one_phase_step=2, mutate_prob=1.0)))
    pid = commander.coordinator.player_ids[0]
    a, _ = join(commander, 'collector')
    first = commander.handle(req('jobs', session=a, player_id=pid, count=3, request_number=7))
    outstanding = dict(commander.state.outstanding)
    again = commander.handle(req('jobs', session=a, player_id=pid, count=3, request_number=7))
    assert again == first and commander.state.outstanding == outstanding  # the same three jobs, no second batch
    assert commander.coordinator.counters['repeated_requests'] == 1
    # A new number is a new request; the same number under another kind is not a repeat.
    fresh = commander.handle(req('jobs', session=a, player_id=pid, count=3, request_number=8))
    assert {j['job_id'] for j in fresh[1]['jobs']}.isdisjoint(j['job_id'] for j in first[1]['jobs'])
    kind, ack, _ = report(commander, a, pid, [[j['job_id'], 'win'] for j in fresh[1]['jobs']], chunk_id='c8')
    assert kind == 'ack' and ack['accepted'] == 3 and commander.coordinator.counters['repeated_requests'] == 1
    # A publish whose answer carried a reset: sent again, it hears the reset again (and snapshots once).
    arrays = params_to_arrays(commander.coordinator.store.get('init')['params'])
    body = dict(session=learners[pid], player_id=pid, version=4, train_iteration=4, final=False, chunks_consumed=0,
                request_number=3)
    _, ack, _ = commander.handle(req('publish', _arrays=arrays, **body))
    snapshots = len(commander.coordinator.league.historical_players)
    _, ack_again, _ = commander.handle(req('publish', _arrays=arrays, **body))
    assert ack['reset_param_ref'] == ack_again['reset_param_ref'] == 'init'
    assert len(commander.coordinator.league.historical_players) == snapshots and commander.coordinator.counters['repeated_requests'] == 2
    # Reading parameters is answered anew (a parameters reply is not kept), and keeps the publish's reply.
    params = req('params_request', session=learners[pid], ref=pid, have_version=None, request_number=4)
    assert commander.handle(params)[0] == commander.handle(params)[0] == 'params'
    assert commander.coordinator.counters['repeated_requests'] == 2 and commander.sessions.workers[learners[pid]].last_reply[0] == 3


def test_a_restarted_commander_replays_its_journal_to_the_same_league(tmp_path):
    commander, _, learners = start(tmp_path)
    a, _ = join(commander, 'collector')
    pid = commander.coordinator.player_ids[0]

    def play(n_chunks):
        for _ in range(n_chunks):
            _, batch, _ = commander.handle(req('jobs', session=a, player_id=pid, count=3))
            outcomes = ['win', 'loss', 'draw']
            report(commander, a, pid, [[j['job_id'], o] for j, o in zip(batch['jobs'][:2], outcomes)])

    play(3)
    publish(commander, learners[pid], pid, 5, 5)  # a snapshot
    commander.save()  # snapshot of the state; what follows lives only in the journal
    play(2)
    publish(commander, learners[pid], pid, 9, 9)
    expected = commander.coordinator.league.state_dict()
    steps, games, outstanding = commander.coordinator.env_steps, commander.coordinator.counters['games'], len(commander.state.outstanding)
    branches = commander.coordinator.watch.branch_state()
    assert sum(branches[pid].values()) == 15  # 5 chunks of 3 jobs, 9 of them before the saved state
    assert outstanding == 5  # one unplayed job per chunk
    commander.close()  # as if killed: no final save

    resumed = Commander(commander.cfg, resume=True, clock=Clock())
    state = resumed.coordinator.league.state_dict()
    np.testing.assert_equal(state['payoff'], expected['payoff'])
    assert [p['player_id'] for p in state['players']] == [p['player_id'] for p in expected['players']]
    assert state['job_count'] == expected['job_count'] and state['rng_state'] == expected['rng_state']
    assert (resumed.coordinator.env_steps, resumed.coordinator.counters['games']) == (steps, games)
    assert resumed.coordinator.watch.branch_state() == branches  # saved counts plus the journal's tail
    assert resumed.coordinator.players[pid].train_iteration == 9 and resumed.coordinator.players[pid].version == 9
    # the old workers died with the old commander: their unfinished games never count
    assert not resumed.state.outstanding and resumed.coordinator.counters['jobs_abandoned'] == outstanding
    # a learner coming back restores its checkpoint and keeps counting from the league's step
    _, body = join(resumed, 'learner', player_id=pid)
    assert body['restore'] and body['train_iteration'] == 9 and body['version'] == 9
    resumed.close()
    with pytest.raises(FileNotFoundError, match='parallel run state'):
        Commander(_cfg(tmp_path / 'elsewhere'), resume=True)


def _learner(max_staleness, target_reuse, version):
    """A learner worker's chunk choice, without its process."""
    worker = LearnerWorker.__new__(LearnerWorker)
    worker.par = type('P', (), dict(max_staleness=max_staleness, target_sample_reuse=target_reuse))()
    worker.policy = type('Policy', (), dict(version=version))()
    worker.learner = type('L', (), dict(sample_reuse=0.0))()
    worker.queue, worker.replay = deque(), deque(maxlen=2)
    worker.counts = dict(dropped_stale=0, replayed=0)
    return worker


def _chunk(version):
    data = {k: np.zeros((2, 1), np.float32) for k in ('obs', 'action', 'log_prob', 'value', 'reward',
                                                      'terminated', 'truncated', 'next_value')}
    return Chunk(data=data, version=version)


def test_learner_drops_stale_chunks_and_replays_only_below_the_target_reuse():
    worker = _learner(max_staleness=3, target_reuse=2.0, version=10)
    old, fresh = _chunk(6), _chunk(8)
    worker.queue.extend([old, fresh])
    assert worker._next_chunk() == (fresh, True) and worker.counts['dropped_stale'] == 1
    assert worker._next_chunk() is None  # nothing to re-use yet: wait
    worker.replay.extend([_chunk(5), fresh])
    assert worker._next_chunk() == (fresh, False)  # the too-stale one left the replay buffer
    assert list(worker.replay) == [fresh] and worker.counts['replayed'] == 1
    worker.learner.sample_reuse = 2.0
    assert worker._next_chunk() is None  # at the target: wait for data
    assert _learner(None, 0.0, 100)._next_chunk() is None
    keep_all = _learner(None, 0.0, 100)
    keep_all.queue.append(old)
    assert keep_all._next_chunk() == (old, True)


def test_collectors_wait_while_a_learner_is_behind(tmp_path):
    commander, clock, learners = start(tmp_path, active_players=dict(naive_sp=1))
    pid = commander.coordinator.player_ids[0]
    collectors = [join(commander, 'collector')[0] for _ in range(3)]
    assert commander.collect.max_ahead == 2  # parallel.max_chunks_ahead None: one per configured collector
    first = commander.handle(req('collect_task', session=collectors[0]))
    second = commander.handle(req('collect_task', session=collectors[1]))
    assert first[0] == second[0] == 'task'
    assert commander.handle(req('collect_task', session=collectors[2]))[0] == 'wait'  # two chunks on their way
    report(commander, collectors[0], pid, [], task_id=first[1]['task_id'])
    assert commander.handle(req('collect_task', session=collectors[2]))[0] == 'wait'  # reported, not consumed
    publish(commander, learners[pid], pid, 1, 1, consumed=1)
    assert commander.handle(req('collect_task', session=collectors[2]))[0] == 'task'
    # a restarted learner starts afresh: what its predecessor never took is not waited for
    report(commander, collectors[1], pid, [], task_id=second[1]['task_id'])
    assert commander.collect.chunks_ahead(pid) == 1
    clock.now += 6.0  # the old learner's lease has expired
    session, _ = join(commander, 'learner', player_id=pid, worker_id=f'learner-{pid}')
    assert commander.collect.chunks_ahead(pid) == 0 and learners[pid] not in commander.sessions.workers


def test_a_single_agent_run_has_one_player_no_games_and_stops_on_the_evaluated_return(tmp_path):
    cfg = compile_config(dict(
        exp_name=str(tmp_path / 'cartpole'),
        env=dict(type='gym', id='CartPole-v1', collector_env_num=2, evaluator_env_num=2, n_evaluator_episodes=2,
                 stop_value=100.0),
        policy=dict(type='ppo', collect=dict(n_steps=4)),
        train=dict(max_env_steps=1000, eval_every_iters=1, progress_bar=False, tensorboard=False),
        parallel=dict(save_every_seconds=1e9, log_every_seconds=1e9)), save=False)
    commander = Commander(cfg, clock=Clock())
    # the one-player case of a league: the same coordinator, a league with no opponents
    assert commander.coordinator.player_ids == ['agent'] and isinstance(commander.coordinator.league, SingleAgentLeague)
    learner, _ = join(commander, 'learner')
    publish(commander, learner, 'agent', 0, 0)
    collector, _ = join(commander, 'collector')
    kind, task, _ = commander.handle(req('collect_task', session=collector))
    assert kind == 'task' and task['player_id'] == 'agent'
    assert commander.handle(req('jobs', session=collector, player_id='agent', count=2))[0] == 'error'
    # no job was ever handed out, so a reported game is refused (and counted), as in any league
    kind, ack, _ = commander.handle(req('chunk_report', session=collector, task_id=task['task_id'], chunk_id='c',
                                        player_id='agent', version=0, env_steps=8, results=[[1, 'win']]))
    assert kind == 'ack' and (ack['accepted'], ack['rejected']) == (0, 1) and commander.coordinator.counters['games'] == 0
    assert commander.coordinator.env_steps == 0  # a report whose results were all refused spends no budget
    publish(commander, learner, 'agent', 0, 0, consumed=1)  # the learner took that chunk
    kind, task, _ = commander.handle(req('collect_task', session=collector))
    report(commander, collector, 'agent', [], task_id=task['task_id'], steps=8)
    publish(commander, learner, 'agent', 1, 1, consumed=2)  # eval_every_iters=1: an evaluation is due
    evaluator, _ = join(commander, 'evaluator')
    kind, job, _ = commander.handle(req('eval_task', session=evaluator))
    assert kind == 'eval_job' and job['opponents'] == []
    commander.handle(req('eval_report', session=evaluator, task_id=job['task_id'], player_id='agent', version=1,
                         results={}, returns=[120.0, 140.0]))
    assert commander.coordinator.last_eval['agent']['return_mean'] == 130.0
    # only the chunk of accepted work counts (the first one's results were all refused)
    assert commander.coordinator.reached == (8, commander.coordinator.wall_seconds) and commander.coordinator.phase == 'drain'
    path = commander.save()
    commander.close()
    assert Commander(cfg, resume=True).coordinator.env_steps == 8 and path.endswith('state.npz')


@pytest.mark.parametrize('parallel, match', [
    (dict(auth='plain'), 'parallel.auth'),
    (dict(collectors=-1), 'parallel.collectors'),
    (dict(max_staleness='old'), 'parallel.max_staleness'),
    (dict(colectors=2), "Did you mean 'collectors'"),
])
def test_bad_parallel_settings_name_the_key(tmp_path, parallel, match):
    from sparring.config.schema import ConfigError
    with pytest.raises(ConfigError, match=match):
        compile_config(dict(env=dict(type='zero_sum_2x2'), parallel=parallel), save=False)


def test_a_lone_collector_with_a_forward_pass_worker_may_run_two_chunks_ahead(tmp_path):
    """Its actions come from another process: with one chunk ahead it would take turns with its learner."""
    from easydict import EasyDict

    from sparring.framework.collect_tasks import CollectTasks
    coordinator = EasyDict(player_ids=['p'])

    def par(workers, collectors=1, ahead=None):
        return EasyDict(learner_replicas=1, collectors=collectors, max_chunks_ahead=ahead,
                        inference=dict(workers=workers))
    assert CollectTasks(coordinator, par(0), 4).max_ahead == 1
    assert CollectTasks(coordinator, par(1), 4).max_ahead == 2
    assert CollectTasks(coordinator, par(1, collectors=3), 4).max_ahead == 3
    assert CollectTasks(coordinator, par(1, ahead=1), 4).max_ahead == 1  # a value the user set is kept


def test_a_live_workers_id_cannot_be_taken_only_an_expired_lease_can(tmp_path):
    commander, clock, learners = start(tmp_path)
    live, _ = join(commander, 'collector', worker_id='collector-1')
    kind, body, _ = commander.handle(req('register', role='learner', worker_id=f'learner-{commander.coordinator.player_ids[0]}',
                                         session=uuid.uuid4().hex, pid=2, host='elsewhere'))
    assert kind == 'error' and body['reason'] == 'id_held'  # a learner's id too
    for _ in range(6):  # six registers under a live, heartbeating collector's id: each refused, the collector kept
        kind, body, _ = commander.handle(req('register', role='collector', worker_id='collector-1',
                                             session=uuid.uuid4().hex, pid=2, host='elsewhere'))
        assert kind == 'error' and body['reason'] == 'id_held', body
        assert "'collector-1' is held by a live worker (pid 1 on 'here'" in body['error']
        clock.now += 3.0  # within the lease (worker_timeout_seconds=5) of its last heartbeat
        assert commander.handle(req('heartbeat', session=live))[0] == 'ack'
    assert commander.coordinator.counters['registers_refused_id_held'] == 7
    assert commander.coordinator.counters['collector_lost'] == 0 and live in commander.sessions.workers
    for session in (live, 'a b'):  # a live session under another id, a session the ledger could not keep
        kind, body, _ = commander.handle(req('register', role='collector', worker_id='collector-9', session=session,
                                             pid=2, host='elsewhere'))
        assert kind == 'error' and body['reason'] in ('replayed', 'schema'), body
    # silent past its lease: the id is free for the next process (a restarted worker takes it back so)
    clock.now += 5.5
    newcomer, body = join(commander, 'collector', worker_id='collector-1')
    assert body['worker_id'] == 'collector-1' and live not in commander.sessions.workers
    assert newcomer in commander.sessions.workers
