"""SAC in parallel mode: collectors stream chunks, the learner's replay buffer fills from them, and the run stops
cleanly with every worker process gone."""

import pytest

from sparring.framework.parallel import parallel_pipeline
from tests.parallel_runs import alive
from tests.scripts import load_script

pytestmark = pytest.mark.slow  # a parallel run with real worker processes

helpers = load_script('tests/framework/test_parallel_run.py', 'parallel_run_helpers')


def test_a_two_process_sac_league_trains_and_stops_cleanly(tmp_path):
    exp = tmp_path / 'sac_parallel'
    config = helpers._config(exp, max_env_steps=1024, collectors=1, evaluators=0)
    config['policy'] = dict(type='sac', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8),
                            learn=dict(learning_starts=32, updates_per_chunk=2, batch_size=16),
                            replay=dict(capacity=2000))
    summary = parallel_pipeline(config, seed=0)
    assert summary['env_steps'] >= 1024
    learner = summary['worker_stats']['learner-naive_sp_0']
    assert learner['chunks_received'] > 0
    # Sample reuse is the replay ratio: samples through gradient steps (2 x 16 per chunk once the buffer holds
    # 32 transitions) per transition received.
    assert 0 < learner['samples_consumed'] <= 2 * 16 * learner['chunks_received']
    assert learner['sample_reuse'] > 1.0  # every transition was drawn more than once on average
    assert not alive(int(learner['pid']))  # the learner process has exited


def test_a_parallel_sac_learner_forgets_transitions_against_aged_out_snapshots(tmp_path):
    exp = tmp_path / 'sac_parallel_forget'
    config = helpers._config(exp, max_env_steps=1024, collectors=1, evaluators=0)
    config['policy'] = dict(type='sac', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8),
                            learn=dict(learning_starts=32, updates_per_chunk=1, batch_size=16),
                            replay=dict(capacity=2000, max_opponent_age=1))
    summary = parallel_pipeline(config, seed=0)
    learner = summary['worker_stats']['learner-naive_sp_0']
    # The publish replies carried the league's opponent ages; snapshots every 4 iterations aged the older out.
    assert learner['replay_transitions_forgotten'] > 0
    assert not alive(int(learner['pid']))
