"""The commander's progress line: its steps per second count only what the run did since its last line."""
from collections import Counter
from types import SimpleNamespace

from sparring.framework.commander_report import ProgressReport


class Lines:
    def __init__(self):
        self.lines = []

    def scalars(self, figures, step, prefix=''):
        pass

    def line(self, text):
        self.lines.append(text)

    def progress(self, steps):
        pass


def test_the_first_line_after_a_resume_counts_only_the_steps_made_since():
    now = [1000.0]
    league = SimpleNamespace(historical_players=[])
    coordinator = SimpleNamespace(env_steps=400_000, counters=Counter(), league=league, recent_returns=[],
                                  phase='collect', players={'p': SimpleNamespace(train_iteration=7)}, player_ids=['p'])
    sessions = SimpleNamespace(workers={}, learners=lambda: [])
    logger = Lines()
    report = ProgressReport(coordinator, sessions, logger, lambda: now[0], print, 10.0, 'exp', started=now[0])
    now[0] += 10.0
    coordinator.env_steps += 500  # what the resumed run collected in its first ten seconds
    report.log_progress()
    assert 'sps=50 ' in logger.lines[-1] + ' ' and 'steps=400500' in logger.lines[-1]
