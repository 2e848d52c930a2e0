"""A parallel league whose player learns with two replicas: chunks go to both, and they stay identical."""
import os
import re

import pytest

from sparring.framework.parallel import parallel_pipeline
from tests.parallel_runs import wait_for
from tests.scripts import load_script

pytestmark = pytest.mark.slow  # parallel runs with replica learner processes

helpers = load_script('tests/framework/test_parallel_run.py', 'parallel_run_helpers')


def test_a_league_player_trains_with_two_replicas_that_stay_identical(tmp_path):
    exp = tmp_path / 'replicas'
    config = helpers._config(exp, max_env_steps=2048)
    config['parallel'].update(learner_replicas=2)
    summary = parallel_pipeline(config, seed=1)
    assert summary['env_steps'] >= 2048
    stats = summary['worker_stats']
    lead, other = stats['learner-naive_sp_0'], stats['learner-naive_sp_0-r1']
    assert lead['chunks_received'] > 0 and other['chunks_received'] > 0  # collectors sent chunks to both
    digests = []
    for worker in ('learner-naive_sp_0', 'learner-naive_sp_0-r1'):
        text = (exp / 'workers' / worker / 'log.txt').read_text()
        digests += re.findall(r'parameters ([0-9a-f]{16}) after (\d+) iterations', text)
    assert len(digests) == 2 and digests[0] == digests[1] and int(digests[0][1]) > 0, digests


def test_a_killed_replica_restarts_its_group_and_the_run_goes_on(tmp_path):
    import signal

    from sparring.framework.parallel import ParallelRun
    from sparring.framework.run_setup import prepare_config
    exp = tmp_path / 'killed_replica'
    config = helpers._config(exp, max_env_steps=3072)
    config['parallel'].update(learner_replicas=2, worker_timeout_seconds=10.0)
    run = ParallelRun(prepare_config(config, seed=2))
    try:
        run.start()
        commander = run.commander
        wait_for(lambda: commander.coordinator.counters['chunks'] >= 6, 'the first chunks', step=run.step)
        os.kill(run.launcher.processes['learner-naive_sp_0-r1'].pid, signal.SIGKILL)
        wait_for(lambda: run.launcher.restarts.get('learner-naive_sp_0', 0) >= 1, 'the group to restart',
                      step=run.step)
        wait_for(lambda: run.finished, 'the run to end', step=run.step)
        summary = run.close()
    finally:
        if not run.closed:
            run.close(abort='test failed')
    assert summary['env_steps'] >= 3072 and summary['restarts']['learner-naive_sp_0-r1'] >= 1
    text = [(exp / 'workers' / w / 'log.txt').read_text() for w in ('learner-naive_sp_0', 'learner-naive_sp_0-r1')]
    finals = [re.findall(r'parameters ([0-9a-f]{16}) after (\d+) iterations', t)[-1] for t in text]
    assert finals[0] == finals[1]


def test_a_parallel_league_computes_the_exact_meta_game_and_exploitability(tmp_path):
    """battle.exact_analysis in parallel mode: the nash branch solves the exact meta-game of the published
    players, and every evaluation reports exploitability, as in the serial mode."""
    exp = tmp_path / 'exact'
    config = helpers._config(exp, max_env_steps=2048)
    config['env'].update(type='rock_paper_scissors', collector_env_num=8)
    config['policy']['learn'].update(gamma=0.0, gae_lambda=0.0)
    config['league']['players'] = dict(naive_sp=dict(one_phase_step=3, branch_probs=dict(nash=1.0), mutate_prob=1.0))
    config['battle'] = dict(exact_analysis=True)
    config['train'].update(eval_every_iters=4)
    summary = parallel_pipeline(config, seed=0)
    exact = summary['exact']
    assert set(exact['exploitability']) == {'naive_sp_0'} and 0.0 <= exact['meta_exploitability'] <= 2.0
    assert len(exact['meta_strategy']) >= 2  # snapshots joined the population the meta-strategy mixes
    assert any(entry['exact'] for entry in summary['history'])
