"""Parallel runs with real processes on tiny games: a collector SIGKILLed mid-run, bad frames and an unsigned
peer refused while the run goes on, a commander killed and resumed, and no process left behind."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
import zmq

from sparring.framework.journal import JOURNAL_FILE, Journal
from sparring.framework.messaging import Security
from sparring.framework.parallel import parallel_pipeline
from sparring.league.persistence import load_state
from sparring.worker.remote.transport import DataPusher, RequestClient
from sparring.worker.remote.wire import MAGIC, MessageError, Signer
from tests.configs import fast_parallel, tiny_league_config
from tests.parallel_runs import alive, parallel_run, to_the_end, wait_for

pytestmark = pytest.mark.slow  # parallel runs of many processes, killed and resumed


def _config(exp_name, max_env_steps, collectors=2, evaluators=1):
    return tiny_league_config(
        exp_name, league=dict(active_players=dict(naive_sp=1), payoff=dict(decay=1.0)),
        battle=dict(eval_opponents=['bot:random']),
        train=dict(max_env_steps=max_env_steps, checkpoint_every_iters=5),
        parallel=fast_parallel(collectors=collectors, evaluators=evaluators, worker_timeout_seconds=30.0,
                               max_restarts=2))


def _journal(exp):
    """Every journal entry on the disk (the file being written and the sealed segments kept)."""
    return Journal(os.path.join(exp, 'commander', JOURNAL_FILE)).read()


def _check_games_counted_once(exp, league):
    """Payoff game counts equal the games the journal accepted; no job both recorded and abandoned."""
    entries = _journal(exp)
    recorded = [job for e in entries if e['op'] == 'games' for _, ids, _ in e['games'] for job in ids]
    abandoned = {job for e in entries if e['op'] == 'abandon' for job in e['jobs']}
    assert len(recorded) == len(set(recorded)) and not abandoned & set(recorded)
    payoff_games = sum(r['games'] for home, away, r in league.payoff.played_pairs()
                       if league.get_player(home).kind == 'active' or league.get_player(away).kind == 'active')
    self_play = sum(p.self_play_games for p in league.active_players)
    eval_games = sum(len(o) for e in entries if e['op'] == 'eval' for o in e['results'].values())
    assert payoff_games + self_play == len(recorded) + eval_games
    return recorded, abandoned


def test_killed_workers_and_bad_peers_do_not_stop_the_run_or_count_a_game_twice(tmp_path):
    exp = tmp_path / 'killed'
    with parallel_run(_config(exp, max_env_steps=2048)) as run:
        commander = run.commander
        wait_for(lambda: commander.coordinator.counters['chunks'] >= 4 and any(
            w.worker_id == 'collector-0' and w.jobs for w in commander.sessions.workers.values()), 'the first chunks',
            step=run.step)
        # an unsigned peer and a malformed frame at the commander ...
        context = zmq.Context()
        try:
            intruder = RequestClient(context, run.address, Security(Signer(b'not-the-run-secret-at-all')), 'x',
                                     timeout=10.0)
            refused = []

            def intrude():
                try:
                    intruder.request('heartbeat', dict(session='x'))
                except MessageError as err:
                    refused.append(err)

            thread = threading.Thread(target=intrude)
            thread.start()
            wait_for(lambda: not thread.is_alive(), 'the intruder to be told', step=run.step)
            assert refused and 'shared secret' in str(refused[0])  # told at once, not after its timeout
            intruder.close()
            raw = context.socket(zmq.DEALER)
            run.security.client(raw)  # a buggy worker holding the secret
            raw.connect(run.address)
            raw.send_multipart([b'not a sparring message'])
            broken = b'{"kind":'  # signed with the run's secret, as a buggy worker would
            raw.send_multipart([MAGIC, broken, run.security.signer.tag([MAGIC, broken])])
            # ... and at the learner: a signed chunk that fits no spec (2 x 2 arrays full of NaN), refused at its
            # socket by the player's chunk schema, and an unsigned one
            learner = next(w for w in commander.sessions.workers.values() if w.role == 'learner')
            body = dict(chunk_id='evil', player_id=learner.player_id, version=0, env_steps=4)
            arrays = {k: np.full((2, 2), np.nan, np.float32) for k in ('obs', 'log_prob', 'value', 'reward',
                                                                       'next_value')}
            arrays.update(action=np.zeros((2, 2), np.int64), terminated=np.zeros((2, 2), bool),
                          truncated=np.zeros((2, 2), bool))
            for signer in (run.security.signer, Signer(None)):
                DataPusher(context, learner.endpoint, Security(signer), 'x').send('chunk', body, arrays, timeout=5)
        finally:
            context.destroy(linger=1000)
        victim = run.launcher.processes['collector-0'].pid
        os.kill(victim, signal.SIGKILL)

        def learner_refused_both():
            stats = commander.sessions.stats.get('learner-naive_sp_0', {})
            return stats.get('rejected_unauthenticated', 0) >= 1 and stats.get('rejected_schema', 0) >= 1

        wait_for(learner_refused_both, 'the learner to report the refused chunks', step=run.step)
        # the learner too, once it has a checkpoint to restart from
        ckpt = exp / 'workers' / 'learner-naive_sp_0' / 'ckpt'
        wait_for(lambda: ckpt.exists() and any(ckpt.iterdir()), 'a learner checkpoint', step=run.step)
        os.kill(run.launcher.processes['learner-naive_sp_0'].pid, signal.SIGKILL)
        summary = to_the_end(run)
    started = run.launcher.all_pids
    assert victim in started and len(started) == 6  # 2 collectors, a learner, an evaluator, 2 restarted
    assert not [pid for pid in started if alive(pid)], 'worker processes outlived the run'
    assert summary['restarts'] == {'collector-0': 1, 'learner-naive_sp_0': 1}
    assert summary['env_steps'] >= 2048 and summary['train_iterations']['naive_sp_0'] >= 5
    assert 'restored from' in (exp / 'workers' / 'learner-naive_sp_0' / 'log.txt').read_text()
    assert summary['rejected_messages'].get('unauthenticated', 0) >= 1
    assert summary['rejected_messages'].get('malformed', 0) >= 2
    first_learner = next(s for wid, s in summary['worker_stats'].items() if wid.startswith('learner-naive_sp_0/'))
    assert first_learner['rejected_unauthenticated'] >= 1 and first_learner['rejected_schema'] >= 1
    assert set(summary['eval']['naive_sp_0']) == {'random'}
    recorded, abandoned = _check_games_counted_once(str(exp), run.commander.coordinator.league)
    assert abandoned, 'the killed collector held unfinished games'
    assert summary['games'] == len(recorded)


RUNNER = textwrap.dedent('''
    import json, sys
    from sparring.framework import parallel_pipeline
    parallel_pipeline(json.loads(sys.argv[1]), seed=0)
''')


def test_a_killed_commander_takes_its_workers_along_and_resumes_from_its_saved_state(tmp_path):
    exp = tmp_path / 'resumed'
    config = _config(exp, max_env_steps=1_000_000, collectors=1, evaluators=0)
    commander = subprocess.Popen([sys.executable, '-c', RUNNER, json.dumps(config)], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
    state_file = exp / 'commander' / 'state.npz'

    def saved():
        return load_state(str(state_file))['commander']

    try:
        def progressed():
            if not state_file.exists():
                return False
            state = saved()
            return state['train_iterations']['naive_sp_0'] >= 6 and state['env_steps'] >= 256

        wait_for(progressed, 'the first run to train a little and save its state')
        time.sleep(0.3)  # a little more goes only into the journal
    finally:
        commander.send_signal(signal.SIGKILL)
        commander.wait()
    with open(exp / 'workers' / 'pids.json') as f:
        pids = json.load(f)
    orphans = pids['started'] + [pids['fork_server']]  # the launcher's fork server goes with it too
    wait_for(lambda: not any(alive(pid) for pid in orphans), 'the orphaned processes to exit', timeout=30)
    before = saved()
    killed_at = sum(e.get('steps', 0) for e in _journal(str(exp)) if e['op'] == 'games')
    assert killed_at >= before['env_steps']  # the journal holds at least what the state saved

    summary = parallel_pipeline(config, seed=0, resume=True, max_env_steps=killed_at + 512)
    assert summary['env_steps'] >= killed_at + 512
    assert summary['train_iterations']['naive_sp_0'] > before['train_iterations']['naive_sp_0']
    log = (exp / 'log.txt').read_text()
    assert f'resumed from {exp / "commander"}: {killed_at} env steps' in log
    learner_log = (exp / 'workers' / 'learner-naive_sp_0' / 'log.txt').read_text()
    assert 'restored from' in learner_log
    from sparring.league import BaseLeague
    league = BaseLeague.load(str(exp / 'league_state.npz'))
    _check_games_counted_once(str(exp), league)
    with open(exp / 'workers' / 'pids.json') as f:
        assert not [pid for pid in json.load(f)['started'] if alive(pid)]
