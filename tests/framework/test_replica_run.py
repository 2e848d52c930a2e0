"""A parallel league whose player learns with two replicas: chunks go to both, and they stay identical."""
import importlib.util
import os
import re

from sparring.config import compile_config
from sparring.framework.parallel import parallel_pipeline

_spec = importlib.util.spec_from_file_location('parallel_run_helpers',
                                               os.path.join(os.path.dirname(__file__), 'test_parallel_run.py'))
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)


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
