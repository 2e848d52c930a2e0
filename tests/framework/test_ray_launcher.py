"""Parallel mode on Ray: a league on a two-node local cluster, collectors on the second node, a collector actor
killed and brought back by Ray, and every game counted once. Skipped without the ray extra."""
import os

import pytest

os.environ.setdefault('RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER', '0')  # keep Ray on 127.0.0.1 (set before ray loads)
ray = pytest.importorskip('ray')

from sparring.framework.parallel import ParallelRun  # noqa: E402
from sparring.framework.run_setup import prepare_config  # noqa: E402
from sparring.league import BaseLeague  # noqa: E402
from tests.parallel_runs import wait_for  # noqa: E402
from tests.scripts import load_script  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.alone]  # a two-node Ray cluster

helpers = load_script('tests/framework/test_parallel_run.py', 'parallel_run_helpers')


@pytest.fixture
def two_node_cluster():
    from ray.cluster_utils import Cluster
    cluster = Cluster(initialize_head=True, head_node_args=dict(num_cpus=4, resources=dict(head_node=4),
                                                                include_dashboard=False))
    cluster.add_node(num_cpus=4, resources=dict(collector_node=4))
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_a_league_on_a_two_node_ray_cluster_survives_a_killed_collector(tmp_path, two_node_cluster):
    exp = tmp_path / 'on_ray'
    config = helpers._config(exp, max_env_steps=4096)
    on_head = dict(num_cpus=1, resources=dict(head_node=1))
    config['parallel'].update(launcher='ray', max_restarts=3, worker_timeout_seconds=15.0, ray_resources=dict(
        learner=on_head, evaluator=on_head, collector=dict(num_cpus=1, resources=dict(collector_node=1))))
    run = ParallelRun(prepare_config(config, seed=3))
    try:
        run.start()
        commander = run.commander
        wait_for(lambda: commander.coordinator.counters['chunks'] >= 4, 'the first chunks', step=run.step)
        head = ray.get_runtime_context().get_node_id()
        nodes = {wid: ray.get(worker.actor.where.remote())[1] for wid, worker in run.launcher.processes.items()}
        assert nodes['learner-naive_sp_0'] == head and nodes['evaluator-0'] == head
        assert nodes['collector-0'] != head and nodes['collector-1'] != head
        ray.kill(run.launcher.processes['collector-0'].actor, no_restart=False)  # Ray brings it back
        wait_for(lambda: any(k.startswith('collector-0/') for k in commander.sessions.stats), 'collector-0 again',
                      step=run.step)
        chunks = commander.coordinator.counters['chunks']
        wait_for(lambda: run.finished, 'the run to end', step=run.step)
        summary = run.close()
    finally:
        if not run.closed:
            run.close(abort='test failed')
    assert summary['env_steps'] >= 4096 and commander.coordinator.counters['chunks'] > chunks
    league = BaseLeague.load(str(exp / 'league_state.npz'))
    helpers._check_games_counted_once(str(exp), league)  # nothing lost or doubled by the restart
    assert (exp / 'workers' / 'collector-0' / 'output.log').exists()


@pytest.fixture
def one_node_cluster():
    """A fresh one-node Ray cluster on this machine, shut down after the test."""
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, _node_ip_address='127.0.0.1')
    try:
        yield
    finally:
        ray.shutdown()


def test_a_league_on_ray_acts_through_a_forward_pass_worker(tmp_path, one_node_cluster):
    """The Ray launcher starts the inference role like the others: the collectors' networks run on it, and every
    game is counted once."""
    exp = tmp_path / 'ray_inference'
    config = helpers._config(exp, max_env_steps=2048, collectors=1, evaluators=0)
    config['parallel'].update(launcher='ray', worker_timeout_seconds=30.0, inference=dict(workers=1),
                              ray_resources=dict(inference=dict(num_cpus=1)))
    run = ParallelRun(prepare_config(config, seed=5))
    try:
        run.start()
        wait_for(lambda: run.finished, 'the run to end', step=run.step)
        summary = run.close()
    finally:
        if not run.closed:
            run.close(abort='test failed')
    assert summary['env_steps'] >= 2048
    stats = summary['worker_stats']
    inference = next(s for w, s in stats.items() if w.startswith('inference'))
    collector = next(s for w, s in stats.items() if w.startswith('collector'))
    assert inference['forward_passes'] > 0 and inference['malformed'] == 0
    assert collector['forward_round_trips'] > 0
    helpers._check_games_counted_once(str(exp), BaseLeague.load(str(exp / 'league_state.npz')))
