"""Trust boundaries on a run's files, its directory, its budget and the command line (issue #28): an earlier run is
refused before anything is written, committed journal lines are durable and their loss is noticed, a spent budget
ends a resumed run, a damaged snapshot is quarantined, a learner's fresh start says so, the CLI answers in one
line, and links in the run directory are not followed. Each test is named after the defect it pins."""
import os

import numpy as np
import pytest

from sparring.config.compile import to_plain
from sparring.config.schema import ConfigError
from sparring.framework.cli import main
from sparring.framework.commander import Commander
from sparring.framework.parallel import parallel_pipeline
from sparring.framework.run_setup import prepare_config
from sparring.framework.serial import serial_pipeline
from tests.scripts import load_script

helpers = load_script('tests/framework/test_parallel_commander.py', 'commander_helpers')
Clock, join, publish, report, req, start = (helpers.Clock, helpers.join, helpers.publish, helpers.report,
                                            helpers.req, helpers.start)


def _played(tmp_path, chunks=3):
    """A commander that handed out jobs, recorded a few chunks' games and saved: a parallel run's directory."""
    commander, clock, learners = start(tmp_path, active_players=dict(naive_sp=1))
    pid = commander.coordinator.player_ids[0]
    collector, _ = join(commander, 'collector')
    for _ in range(chunks):
        _, batch, _ = commander.handle(req('jobs', session=collector, player_id=pid, count=2))
        report(commander, collector, pid, [[j['job_id'], 'win'] for j in batch['jobs']])
    commander.save()
    return commander, clock, learners, pid, collector


def _lines(path):
    with open(path, 'rb') as f:
        return f.read().count(b'\n')


# -- defect 1: an earlier run in the directory is refused, in every layout, before anything is touched -----------
def test_defect1_a_new_run_of_either_mode_in_a_parallel_runs_directory_is_refused_and_deletes_nothing(tmp_path):
    commander, *_ = _played(tmp_path)
    commander.close()
    journal = os.path.join(commander.dir, 'journal.jsonl')
    before = (_lines(journal), sorted(os.listdir(commander.dir)), sorted(os.listdir(commander.exp_dir)))
    config = to_plain(commander.cfg)
    for pipeline in (parallel_pipeline, serial_pipeline):
        with pytest.raises(FileExistsError, match='holds an earlier run'):
            pipeline(config)
    assert (_lines(journal), sorted(os.listdir(commander.dir)), sorted(os.listdir(commander.exp_dir))) == before
    # only a learner's checkpoint left (the commander's files gone): still an earlier run
    os.remove(journal)
    os.remove(os.path.join(commander.dir, 'state.npz'))
    for name in os.listdir(os.path.join(commander.exp_dir, 'params')):
        os.remove(os.path.join(commander.exp_dir, 'params', name))
    ckpt = os.path.join(commander.exp_dir, 'workers', 'learner-x', 'ckpt')
    os.makedirs(ckpt)
    open(os.path.join(ckpt, 'iter_00000005.pt'), 'wb').close()
    with pytest.raises(FileExistsError, match='learner-x'):
        prepare_config(config)
    with pytest.raises(FileExistsError, match='holds an earlier run'):
        Commander(commander.cfg)  # the commander built by hand refuses too, rather than delete the checkpoint
    assert os.path.exists(os.path.join(ckpt, 'iter_00000005.pt'))


# -- defect 4: a spent budget ends a resumed run; a budget must be positive ------------------------------------
def test_defect4_a_resumed_run_whose_budget_is_spent_drains_instead_of_waiting_forever(tmp_path):
    commander, *_ = _played(tmp_path, chunks=16)  # 16 chunks of 4 steps: the budget of 64 is spent
    assert commander.coordinator.phase == 'drain'
    commander.close()
    resumed = Commander(commander.cfg, resume=True, clock=Clock())
    resumed.tick()
    assert resumed.coordinator.phase == 'drain' and 'env-step budget of 64 spent' in resumed.coordinator.stop_reason
    resumed.close()
    cfg = commander.cfg
    cfg.train.max_env_steps = 32  # resumed with a budget below the steps done
    lower = Commander(cfg, resume=True, clock=Clock())
    lower.tick()
    assert lower.coordinator.phase == 'drain'
    lower.close()


@pytest.mark.parametrize('budget', [0, -5])
def test_defect4_a_budget_that_is_not_positive_is_refused(tmp_path, budget):
    config = to_plain(helpers._cfg(tmp_path))
    with pytest.raises(ConfigError, match='max_env_steps'):
        prepare_config(config, max_env_steps=budget)
    config['train']['max_env_steps'] = budget
    with pytest.raises(ConfigError, match='max_env_steps'):
        prepare_config(config)
    assert not os.path.exists(config['exp_name'])


# -- defect 14: the command line answers a mistake in one line with exit code 2 ------------------------------------
def _one_line(capsys, *needles):
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and 'Traceback' not in err, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_defect14_cli_mistakes_are_one_line_and_exit_code_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv('PYTHONPATH', os.environ.get('PYTHONPATH', ''))
    assert main(['train', str(tmp_path)]) == 2  # a directory given as the config
    _one_line(capsys, 'is a directory', 'expected a config file')
    for address in ('nonsense', 'tcp://127.0.0.1', 'tcp://127.0.0.1:99999', 'tcp://a b:5'):
        assert main(['worker', '--role', 'collector', '--commander', address, '--timeout', '1']) == 2
        _one_line(capsys, 'tcp://HOST:PORT')
    config = tmp_path / 'cfg.py'
    config.write_text(f'config = {to_plain(helpers._cfg(tmp_path))!r}\n')
    assert main(['train', str(config), '--max-env-steps', '-5']) == 2
    _one_line(capsys, 'max_env_steps', 'positive')


# -- defect 15: links in the run directory are not followed ---------------------------------------------------
def _victim(tmp_path):
    victim = tmp_path / 'someone_elses_file'
    victim.write_text('precious\n')
    return victim


def test_defect15_run_files_are_never_written_through_a_planted_link(tmp_path):
    from sparring.config import save_config
    from sparring.worker.logger import RunLogger
    from sparring.worker.run_files import LinkedRunFile, write_atomically
    victim = _victim(tmp_path)
    run = tmp_path / 'shared_run'
    run.mkdir()
    (run / 'log.txt').symlink_to(victim)
    with pytest.raises(LinkedRunFile, match='log.txt is a symbolic link'):
        RunLogger(str(run), 10, tensorboard=False, progress_bar=False)
    # whole-file rewrites (the commander's address, reports, the saved config) replace a link, never follow it
    (run / 'address').symlink_to(victim)
    write_atomically(str(run / 'address'), 'tcp://127.0.0.1:5555\n')
    assert not (run / 'address').is_symlink() and (run / 'address').read_text() == 'tcp://127.0.0.1:5555\n'
    (run / 'config.json.tmp').symlink_to(victim)
    save_config(dict(a=1), str(run))
    assert victim.read_text() == 'precious\n'


def test_defect15_a_resumed_commander_refuses_a_journal_that_is_a_link(tmp_path):
    from sparring.worker.run_files import LinkedRunFile
    commander, *_ = _played(tmp_path)
    commander.close()
    journal = os.path.join(commander.dir, 'journal.jsonl')
    victim = _victim(tmp_path)
    with open(journal, 'rb') as f:
        victim.write_bytes(f.read() + b'{"torn')  # a torn tail, which resuming would cut off
    before = victim.read_bytes()
    os.remove(journal)
    os.symlink(victim, journal)
    with pytest.raises(LinkedRunFile, match='journal.jsonl is a symbolic link'):
        Commander(commander.cfg, resume=True, clock=Clock())
    assert victim.read_bytes() == before


# -- defect 2: committed journal lines are durable before they are acknowledged, and their loss is noticed --------
def test_defect2_a_journal_that_lost_its_last_committed_lines_is_refused(tmp_path):
    from sparring.framework.journal import JournalDamaged
    commander, *_ = _played(tmp_path, chunks=4)
    collector, _ = join(commander, 'collector')
    for _ in range(3):  # three entries after the snapshot
        commander.handle(req('jobs', session=collector, player_id=commander.coordinator.player_ids[0], count=2))
    commander.close()
    journal = os.path.join(commander.dir, 'journal.jsonl')
    with open(journal, 'rb') as f:
        lines = f.read().splitlines(keepends=True)
    entries = len(lines) - 1  # the first line is the journal's format version
    with open(journal, 'wb') as f:
        f.write(b''.join(lines[:-3]))  # the last three committed lines lost, e.g. never written to the disk
    with pytest.raises(JournalDamaged, match=rf'ends at entry {entries - 3}, but {entries} entries were '
                                             rf'committed .*3 lines are missing'):
        Commander(commander.cfg, resume=True, clock=Clock())
    with open(journal, 'wb') as f:
        f.write(b''.join(lines))
    Commander(commander.cfg, resume=True, clock=Clock()).close()  # whole again: it resumes


def test_defect2_results_are_acknowledged_only_after_the_journal_is_synced(tmp_path):
    from sparring.framework.parallel import ParallelRun
    commander, clock, learners, pid, collector = _played(tmp_path, chunks=1)
    _, batch, _ = commander.handle(req('jobs', session=collector, player_id=pid, count=3))
    waiting = [(b'peer', req('chunk_report', session=collector, task_id=None, chunk_id=f'c{i}', player_id=pid,
                             version=0, env_steps=4, results=[[job['job_id'], 'win']]))
               for i, job in enumerate(batch['jobs'])]
    replies = []

    class Server:
        def recv(self, timeout):
            return waiting.pop(0) if waiting else None

        def reply(self, peer, reply_to, kind, body, arrays=None):
            # what the reply acknowledges is on the disk already, and recorded as committed
            replies.append((kind, body, commander.state.journal.synced, commander.state.journal.seq, commander.state.journal.committed()))

    run = ParallelRun.__new__(ParallelRun)
    run.commander, run.server, run.logger = commander, Server(), None
    run.serve(0.0)
    assert [(kind, body['accepted']) for kind, body, *_ in replies] == [('ack', 1)] * 3
    assert all(synced == seq == committed for *_, synced, seq, committed in replies)
    commander.close()


# -- defect 12: a learner killed during its first checkpoint says it starts from the initial parameters ------------
def test_defect12_a_learner_without_a_checkpoint_to_restore_says_its_parameters_are_the_initial_ones():
    from sparring.worker.remote.learner import describe_start, restarted_version
    # killed while writing its first checkpoint after publishing iteration 10 (version 10): nothing to restore
    line = describe_start(None, 10, 10, restarted_version(0, 10))
    assert line.startswith('fresh parameters (the initial ones') and '10 iterations trained before are lost' in line
    assert 'iteration 10, version 11' in line
    assert describe_start(None, 0, 0, 0) == 'fresh, iteration 0, version 0'
    assert describe_start('ckpt/iter_00000010.pt', 10, 10, 11).startswith('restored from ckpt/iter_00000010.pt')


# -- defect 10: a damaged snapshot is quarantined, the run goes on -------------------------------------------------
def test_defect10_a_damaged_snapshot_is_quarantined_and_the_run_goes_on(tmp_path):
    commander, _, learners = start(tmp_path, active_players=dict(naive_sp=1))
    pid = commander.coordinator.player_ids[0]
    publish(commander, learners[pid], pid, 5, 5)  # a snapshot of the player, stored in params/
    (snapshot,) = [p for p in commander.coordinator.league.historical_players if p.step == 5]
    commander.save()
    commander.close()
    path = commander.coordinator.store._path(commander.coordinator.store.directory, snapshot.param_ref)
    with open(path, 'rb') as f:
        data = f.read()
    with open(path, 'wb') as f:
        f.write(data[:len(data) // 2])  # cut in half
    logger = helpers.RecordingLogger()
    resumed = Commander(commander.cfg, resume=True, clock=Clock(), logger=logger)
    learner, _ = join(resumed, 'learner', player_id=pid)
    publish(resumed, learner, pid, 6, 6)
    collector, _ = join(resumed, 'collector')
    _, batch, _ = resumed.handle(req('jobs', session=collector, player_id=pid, count=64))
    against = [j for j in batch['jobs'] if j['param_ref'] == snapshot.param_ref]
    assert against, 'the league draws its snapshot'
    # the collector asks for the damaged snapshot: a stand-in to finish the games it holds, not a crash
    kind, body, arrays = resumed.handle(req('params_request', session=collector, ref=snapshot.param_ref,
                                            have_version=None))
    assert kind == 'params' and arrays
    # from now on the league draws it no more; the games played against the stand-in are not recorded
    _, later, _ = resumed.handle(req('jobs', session=collector, player_id=pid, count=64))
    assert later['jobs'] and not [j for j in later['jobs'] if j['param_ref'] == snapshot.param_ref]
    assert resumed.coordinator.counters['snapshots_quarantined'] == 1 and snapshot.param_ref in resumed.coordinator.dropped
    assert [line for line in logger.lines if f'snapshot {snapshot.param_ref!r} quarantined' in line
            and 'damaged or cut short' in line]
    assert logger.scalars_seen['run/dropped/snapshots_quarantined'] == 1
    games_before = resumed.coordinator.counters['games']
    report(resumed, collector, pid, [[j['job_id'], 'win'] for j in batch['jobs']])
    assert resumed.coordinator.counters['results_quarantined'] == len(against)
    assert resumed.coordinator.counters['games'] == games_before + len(batch['jobs']) - len(against)
    payoff = resumed.coordinator.league.state_dict()['payoff']
    resumed.close()
    # the journal holds the quarantine: a replay draws and records exactly as the run did
    again = Commander(commander.cfg, resume=True, clock=Clock())
    np.testing.assert_equal(again.coordinator.league.state_dict()['payoff'], payoff)
    assert snapshot.param_ref in again.coordinator.dropped
    again.close()



def test_defect10_an_evaluation_opponent_whose_file_is_damaged_is_left_out_not_played_by_a_stand_in(tmp_path):
    commander, _, learners = start(tmp_path, active_players=dict(naive_sp=1))
    pid = commander.coordinator.player_ids[0]
    publish(commander, learners[pid], pid, 5, 5)
    (snapshot,) = [p for p in commander.coordinator.league.historical_players if p.step == 5]
    commander.coordinator.eval_opponents.append(('old_self', snapshot.param_ref))  # battle.eval_opponents names it
    evaluator, _ = join(commander, 'evaluator')
    commander.coordinator._queue_evaluation(pid, final=False)
    kind, job, _ = commander.handle(req('eval_task', session=evaluator))
    assert kind == 'eval_job' and ['old_self', snapshot.param_ref] in job['opponents']
    path = commander.coordinator.store._path(commander.coordinator.store.directory, snapshot.param_ref)
    with open(path, 'rb') as f:
        data = f.read()
    with open(path, 'wb') as f:
        f.write(data[:len(data) // 2])
    commander.coordinator.store._entries.pop(snapshot.param_ref, None)  # as after a restart: read from the file again
    commander.params.forget(snapshot.param_ref)
    # the evaluator running the job is served a stand-in for it; what it plays there is not recorded
    kind, _, arrays = commander.handle(req('params_request', session=evaluator, ref=snapshot.param_ref,
                                           have_version=None))
    assert kind == 'params' and arrays
    games = commander.cfg.env.n_evaluator_episodes
    kind, _, _ = commander.handle(req('eval_report', session=evaluator, task_id=job['task_id'], player_id=pid,
                                      version=5, results={oid: ['win'] * games for oid, _ in job['opponents']}))
    assert kind == 'ack' and 'old_self' not in commander.coordinator.last_eval[pid]
    assert snapshot.param_ref in commander.coordinator.dropped
    # later evaluations leave it out
    commander.coordinator._queue_evaluation(pid, final=False)
    kind, job, _ = commander.handle(req('eval_task', session=evaluator))
    assert kind == 'eval_job' and job['opponents'] and all(ref != snapshot.param_ref for _, ref in job['opponents'])
    commander.close()


def test_defect15_a_run_directory_whose_folders_are_links_is_refused_before_anything_is_written(tmp_path):
    from sparring.worker.run_files import LinkedRunFile
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    config = to_plain(helpers._cfg(tmp_path))  # exp_name: tmp_path / 'run'
    run = tmp_path / 'run'
    (run / 'workers' / 'learner-x').mkdir(parents=True)
    (run / 'workers' / 'learner-x' / 'ckpt').symlink_to(elsewhere)
    for resume in (False, True):
        with pytest.raises(LinkedRunFile, match='learner-x/ckpt is a symbolic link'):
            prepare_config(config, resume=resume)
    os.remove(run / 'workers' / 'learner-x' / 'ckpt')
    (run / 'commander').symlink_to(elsewhere)
    with pytest.raises(LinkedRunFile, match='commander is a symbolic link'):
        parallel_pipeline(config)
    assert os.listdir(elsewhere) == [] and sorted(os.listdir(run)) == ['commander', 'workers']


def test_tensorboard_event_files_are_never_written_through_a_planted_link(tmp_path):
    import socket
    import time as clock

    from sparring.worker.logger import RunLogger
    from sparring.worker.run_files import LinkedRunFile
    victim = tmp_path / 'victim.txt'
    victim.write_text('precious\n')
    linked = tmp_path / 'linked'
    (tmp_path / 'elsewhere').mkdir()
    linked.mkdir()
    os.symlink(tmp_path / 'elsewhere', linked / 'tb')  # the whole folder a link: refused before anything is written
    with pytest.raises(LinkedRunFile, match='tb'):
        RunLogger(str(linked), 100, tensorboard=True, progress_bar=False)
    assert not os.listdir(tmp_path / 'elsewhere')
    run = tmp_path / 'run'
    (run / 'tb').mkdir(parents=True)
    now = int(clock.time())
    for second in range(now, now + 5):  # links at every name tensorboardX alone would pick in the next seconds
        os.symlink(victim, run / 'tb' / f'events.out.tfevents.{second}.{socket.gethostname()}')
    logger = RunLogger(str(run), 100, tensorboard=True, progress_bar=False)
    logger.scalars(dict(x=1.0), 1)
    logger.close()
    assert victim.read_text() == 'precious\n'
    written = [p for p in (run / 'tb').iterdir() if not p.is_symlink()]
    assert len(written) == 1 and 'tfevents' in written[0].name and written[0].stat().st_size > 0
