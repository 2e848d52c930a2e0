"""A worker process under ``$SPARRING_PROFILE_DIR`` writes a cProfile of its run; without it, nothing is written."""
import pstats

from sparring.framework.workers import PROFILE_ENV, run_profiled


class FakeWorker:
    worker_id = 'collector-7'

    def __init__(self):
        self.ran = 0

    def run(self):
        self.ran += 1
        return sum(range(1000))


def test_a_profiled_worker_writes_its_profile_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv(PROFILE_ENV, str(tmp_path / 'profiles'))
    worker = FakeWorker()
    run_profiled(worker)
    written = list((tmp_path / 'profiles').glob('collector-7-*.prof'))
    assert worker.ran == 1 and len(written) == 1
    functions = {name for _, _, name in pstats.Stats(str(written[0])).stats}
    assert 'run' in functions


def test_without_the_variable_a_worker_just_runs(tmp_path, monkeypatch):
    monkeypatch.delenv(PROFILE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    worker = FakeWorker()
    run_profiled(worker)
    assert worker.ran == 1 and not list(tmp_path.rglob('*.prof'))
