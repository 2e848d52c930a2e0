"""A serial run survives a chunk its learner drops: the round goes on, the drop is logged as the parallel run's is."""
import sparring.dizoo  # noqa: F401  (registers the envs)
from sparring.config import compile_config
from sparring.framework.run_setup import complete_league_config
from sparring.framework.serial_run import SerialRun
from tests.chunk_cases import learn_fails_once
from tests.configs import tiny_league_config


class Scalars:
    """A logger that keeps what was logged under ``run/dropped/``."""

    def __init__(self):
        self.dropped = []

    def scalars(self, values, step, prefix=''):
        if prefix == 'run/dropped/':
            self.dropped.append(dict(values))

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def test_a_round_whose_update_raises_drops_the_chunk_logs_it_and_the_next_round_learns(tmp_path, monkeypatch):
    cfg = compile_config(tiny_league_config(tmp_path / 'drops', train=dict(max_env_steps=10_000)), save=False)
    complete_league_config(cfg)
    logger = Scalars()
    run = SerialRun(cfg, logger=logger)
    try:
        learner = run.learners[run.player_ids[0]]
        learn_fails_once(monkeypatch, learner.policy, ValueError('operands could not be broadcast together'))
        stats = run.train_round()
        assert learner.dropped == dict(invalid=0, failed=1) and learner.train_iter == 0
        assert stats[run.player_ids[0]]['games'] >= 0  # the round's figures are there, without the update's
        assert dict(learner_dropped_invalid=0.0, learner_dropped_failed=1.0) in logger.dropped
        run.train_round()
        assert learner.train_iter == 1
    finally:
        run.close()
