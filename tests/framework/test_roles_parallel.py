"""A parallel run of a game whose seats have roles (pursuit and evasion): a learner per role, each built for its
role's spaces; the pursuer's learner SIGKILLed mid-run restarts from its checkpoint, no game is lost or counted
twice, and the evader's learner runs on untouched."""
import os
import signal

import pytest

from sparring.framework.cli import load_config_file
from sparring.worker.checkpoint import CheckpointManager
from tests.configs import fast_parallel
from tests.framework.test_parallel_run import _check_games_counted_once
from tests.parallel_runs import parallel_run, to_the_end, wait_for

pytestmark = pytest.mark.slow  # a parallel run of several processes, one of them killed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, 'dizoo', 'pursuit', 'config', 'pursuit_league.py')
PURSUER, EVADER = 'learner-naive_sp_pursuer_0', 'learner-naive_sp_evader_0'


def _config(exp, max_env_steps):
    config = load_config_file(CONFIG)
    config['exp_name'] = str(exp)
    config['env'].update(collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=4, max_steps=10)
    config['policy']['model'] = dict(hidden_sizes=[16])
    config['policy']['collect'] = dict(n_steps=16)
    config['policy']['learn'].update(epochs=1, num_minibatches=1)
    config['train'] = dict(max_env_steps=max_env_steps, eval_every_iters=3, checkpoint_every_iters=3,
                           progress_bar=False, tensorboard=False)
    config['league']['payoff'] = dict(decay=1.0)  # every game counted whole: the payoff adds up to the journal
    config['parallel'] = fast_parallel(collectors=1, evaluators=1, worker_timeout_seconds=30.0, max_restarts=2)
    return config


def test_a_killed_learner_of_one_role_restarts_and_the_other_roles_learner_runs_on(tmp_path):
    exp = tmp_path / 'pursuit'
    with parallel_run(_config(exp, max_env_steps=6000)) as run:
        commander = run.commander
        evader_pid = run.launcher.processes[EVADER].pid
        ckpt = CheckpointManager(str(exp / 'workers' / PURSUER))
        wait_for(lambda: ckpt.latest() is not None, 'a checkpoint of the pursuer\'s learner', step=run.step)
        victim = run.launcher.processes[PURSUER].pid
        os.kill(victim, signal.SIGKILL)
        summary = to_the_end(run)
    assert summary['restarts'] == {PURSUER: 1}  # the evader's learner was never restarted
    started = run.launcher.all_pids
    assert victim in started and evader_pid in started and len(started) == 5  # 2 learners, a collector, an
    # evaluator, and the pursuer's learner again
    assert 'restored from' in (exp / 'workers' / PURSUER / 'log.txt').read_text()
    assert not (exp / 'workers' / EVADER / 'log.txt').read_text().count('restored from')
    iterations = summary['train_iterations']
    assert iterations['naive_sp_pursuer_0'] >= 3 and iterations['naive_sp_evader_0'] >= 3
    # each role's evaluation is against the other role's opponents only
    assert set(summary['eval']['naive_sp_pursuer_0']) == {'random_evader', 'pursuit_flee'}
    assert set(summary['eval']['naive_sp_evader_0']) == {'random_pursuer', 'pursuit_chase'}
    league = commander.coordinator.league
    recorded, _ = _check_games_counted_once(str(exp), league)
    assert summary['games'] == len(recorded)
    for home_id, away_id, _ in league.payoff.played_pairs():
        assert league.get_player(home_id).category != league.get_player(away_id).category, (home_id, away_id)
