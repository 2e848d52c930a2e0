"""``benchmarks/peer_runs.py`` (what the comparisons with SB3 share) and the summary of ``cartpole_vs_sb3.py``,
on cases worked by hand."""
import math

import pytest

from tests.scripts import load_script


@pytest.fixture(scope='module')
def peer_runs():
    return load_script('benchmarks/peer_runs.py')


@pytest.fixture(scope='module')
def cartpole_vs_sb3():
    return load_script('benchmarks/cartpole_vs_sb3.py')


def test_median_counts_a_run_that_never_got_there_as_the_slowest(peer_runs):
    assert peer_runs.median([3.0, 1.0, 2.0]) == 2.0
    assert peer_runs.median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert peer_runs.median([1.0, math.inf, 2.0]) == 2.0
    assert peer_runs.median([1.0, math.inf]) == math.inf
    with pytest.raises(ValueError, match='no values'):
        peer_runs.median([])


def test_ratio_of_medians_keeps_the_pairs_together(peer_runs):
    # theirs is ours doubled seed by seed: every resample of the pairs has the ratio 0.5
    out = peer_runs.ratio_of_medians([1.0, 2.0, 3.0, 10.0], [2.0, 4.0, 6.0, 20.0], resamples=500)
    assert out['ratio'] == 0.5 and out['ci_low'] == 0.5 and out['ci_high'] == 0.5
    assert out['pairs'] == 4 and out['level'] == 0.95 and out['resamples'] == 500


def test_ratio_of_medians_interval_holds_the_ratio_and_is_reproducible(peer_runs):
    ours = [1.0, 1.2, 0.8, 1.1, 0.9, 1.5, 0.7, 1.3]
    theirs = [2.0, 1.0, 3.0, 2.5, 1.5, 2.2, 1.8, 2.7]
    out = peer_runs.ratio_of_medians(ours, theirs)
    assert out['ratio'] == pytest.approx(1.05 / 2.1)
    assert out['ci_low'] <= out['ratio'] <= out['ci_high']
    assert peer_runs.ratio_of_medians(ours, theirs) == out


def test_ratio_of_medians_with_runs_that_never_reached_the_target(peer_runs):
    out = peer_runs.ratio_of_medians([1.0, 2.0, 3.0], [math.inf, math.inf, 4.0], resamples=200)
    assert out['ratio'] is None  # their median is infinite: no finite ratio
    assert out['ci_low'] is not None and out['ci_low'] >= 0.0
    assert peer_runs.ratio_of_medians([1.0, math.inf, math.inf], [2.0, 2.0, 2.0], resamples=200)['ratio'] is None
    with pytest.raises(ValueError, match='paired runs expected, got 2 and 3'):
        peer_runs.ratio_of_medians([1.0, 2.0], [1.0, 2.0, 3.0])


def test_clocks_split_the_time_into_training_and_evaluation(peer_runs):
    wall, cpu = iter([10.0, 12.0, 15.0, 20.0]), iter([1.0, 2.0, 2.5, 4.0])
    clocks = peer_runs.Clocks(wall=lambda: next(wall), cpu=lambda: next(cpu))  # started at (10, 1)
    assert clocks.evaluation(lambda: 7.0) == 7.0  # from (12, 2) to (15, 2.5)
    assert clocks.split() == dict(wall_seconds=10.0, cpu_seconds=3.0, train_wall_seconds=7.0, train_cpu_seconds=2.5,
                                  eval_wall_seconds=3.0, eval_cpu_seconds=0.5)


def test_evaluate_greedy_starts_every_call_from_the_same_states(peer_runs):
    import numpy as np

    def push_left(obs):
        return np.zeros(len(obs), dtype=np.int64)
    first = peer_runs.evaluate_greedy(push_left, 'CartPole-v1', 4, seed=7)
    assert first == peer_runs.evaluate_greedy(push_left, 'CartPole-v1', 4, seed=7)
    assert 1.0 <= first < 30.0  # always pushing one way topples the pole within a few dozen steps


def _run(reached, env_steps, wall, cpu, ms):
    return dict(reached=reached, env_steps=env_steps, wall_seconds=wall, cpu_seconds=cpu, train_wall_seconds=wall - 1,
                train_cpu_seconds=cpu - 1, eval_wall_seconds=1.0, eval_cpu_seconds=1.0, train_cpu_ms_per_env_step=ms,
                eval_cpu_us_per_env_step=100 * ms)


def test_the_summary_counts_an_unreached_run_as_the_slowest_and_pairs_the_seeds(cartpole_vs_sb3):
    per_seed = {1: dict(sparring=_run(True, 1000, 2.0, 1.5, 0.2), sb3=_run(True, 2000, 8.0, 6.0, 0.4)),
                2: dict(sparring=_run(False, 9000, 50.0, 40.0, 0.3), sb3=_run(True, 3000, 10.0, 7.0, 0.5)),
                3: dict(sparring=_run(True, 1500, 3.0, 2.0, 0.1), sb3=_run(False, 9000, 90.0, 70.0, 0.6))}
    out = cartpole_vs_sb3.summary(per_seed, ('sparring', 'sb3'))
    ours, theirs = out['medians']['sparring'], out['medians']['sb3']
    assert (ours['reached'], ours['runs'], theirs['reached']) == (2, 3, 2)
    assert ours['median_wall_seconds'] == 3.0 and theirs['median_wall_seconds'] == 10.0  # the unreached is inf
    assert ours['median_env_steps'] == 1500 and theirs['median_env_steps'] == 3000
    assert ours['median_train_cpu_ms_per_env_step'] == 0.2  # every run's pace, reached or not
    assert theirs['median_eval_cpu_us_per_env_step'] == 50.0
    assert out['ratios']['eval_cpu_us_per_env_step']['ratio'] == pytest.approx(0.4)
    assert out['ratios']['wall_seconds']['ratio'] == pytest.approx(0.3)
    assert out['ratios']['cpu_seconds']['ratio'] == pytest.approx(2.0 / 7.0)
    assert set(cartpole_vs_sb3.summary(per_seed, ('sparring',))) == {'medians'}  # one library: no ratios
