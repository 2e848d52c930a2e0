"""The exact analysis of a league of three or more seats as the ``nash`` branch's meta-strategy source: multiplicative
weights over the branch's candidates, solved once per group of snapshots, the damaged and quarantined ones weighing
nothing, and only the newest that the meta-game fits weighed."""
import numpy as np

from sparring.league import OneVsOneLeague
from sparring.league.multiseat_exact import MultiSeatLeagueExact
from sparring.worker.state_file import StateFileError

HOME = 'naive_sp_0'


class LabelAnalysis:
    """A stand-in analysis: a policy's profile is its label; the meta-strategy weighs the k-th profile it is given
    k (normalised), and it keeps what it solved, so a test can read which candidates were weighed."""

    def __init__(self, capacity=100):
        self.capacity, self.solved = capacity, []

    def profile(self, policy):
        return policy

    def meta_capacity(self):
        return self.capacity

    def meta_strategy(self, profiles):
        self.solved.append(list(profiles))
        weights = np.arange(1, len(profiles) + 1, dtype=np.float64)
        return weights / weights.sum()


def league_with_snapshots(n):
    league = OneVsOneLeague(dict(seats=3, active_players=dict(naive_sp=1),
                                 players=dict(naive_sp=dict(one_phase_step=1))))
    for step in range(2, 2 * (n + 1), 2):
        league.update_active_player(dict(player_id=HOME, train_iteration=step))
        assert league.judge_snapshot(HOME)['snapshot']
    return league


def snapshot_ids(league):
    return [p.player_id for p in league.historical_players]


def test_the_mixture_is_the_analysis_meta_strategy_solved_once_per_group_of_snapshots():
    league, analysis = league_with_snapshots(2), LabelAnalysis()
    exact = MultiSeatLeagueExact(analysis, league, policy_of=lambda ref: f'policy of {ref}')
    ids = snapshot_ids(league)
    np.testing.assert_allclose(exact.meta_strategy(ids), [1 / 6, 2 / 6, 3 / 6])
    exact.meta_strategy(ids)
    assert analysis.solved == [[f'policy of {league.get_player(pid).param_ref}' for pid in ids]]
    exact.forget(league.get_player(ids[1]).param_ref)  # stored anew: solved again
    exact.meta_strategy(ids)
    assert len(analysis.solved) == 2


def test_damaged_and_quarantined_snapshots_weigh_nothing_and_only_the_newest_that_fit_are_weighed():
    league, analysis = league_with_snapshots(4), LabelAnalysis()
    ids = snapshot_ids(league)
    refs = {pid: league.get_player(pid).param_ref for pid in ids}
    told = []

    def policy_of(ref):
        if ref == refs[ids[3]]:
            raise StateFileError(f'{ref}: truncated')
        return ref

    exact = MultiSeatLeagueExact(analysis, league, policy_of, damaged=lambda ref, why: told.append(ref),
                                 dropped={refs[ids[4]]: 'damaged'})
    analysis.capacity = 2
    weights = exact.meta_strategy(ids)  # readable: h0, h1, h2; the newest two fit
    np.testing.assert_allclose(weights, [0.0, 1 / 3, 2 / 3, 0.0, 0.0])
    assert told == [refs[ids[3]]] and analysis.solved == [[refs[ids[1]], refs[ids[2]]]]


def test_live_players_are_profiled_each_time_asked():
    league, analysis = league_with_snapshots(1), LabelAnalysis()
    exact = MultiSeatLeagueExact(analysis, league, policy_of=lambda ref: ref)
    for _ in range(2):
        np.testing.assert_allclose(exact.meta_strategy([HOME, snapshot_ids(league)[0]]), [1 / 3, 2 / 3])
    assert analysis.solved == [[HOME, league.get_player(snapshot_ids(league)[0]).param_ref]] * 2


def test_only_the_newest_window_of_snapshots_is_profiled_and_weighed(monkeypatch):
    monkeypatch.setattr('sparring.league.multiseat_exact.META_WINDOW', 2)
    league, analysis = league_with_snapshots(3), LabelAnalysis()
    asked = []
    exact = MultiSeatLeagueExact(analysis, league, policy_of=lambda ref: asked.append(ref) or ref)
    ids = snapshot_ids(league)
    np.testing.assert_allclose(exact.meta_strategy(ids), [0.0, 0.0, 1 / 3, 2 / 3])
    assert sorted(asked) == sorted(league.get_player(pid).param_ref for pid in ids[2:])


class ScoredLabels(LabelAnalysis):
    """LabelAnalysis with the report's NashConv figures: a population's is its size."""

    def nash_conv(self, profile):
        return 0.0

    def population_nash_conv(self, profiles, weights):
        return float(len(profiles))


def test_a_long_runs_report_profiles_and_keeps_only_its_newest_snapshots():
    """However many snapshots the run has learnt, a report profiles only the newest the meta-strategy and the recent
    average read, and keeps no others: its work and its memory do not grow with the run."""
    from sparring.league.multiseat_exact import AVERAGE_WINDOW, META_WINDOW
    league, analysis = league_with_snapshots(3 * META_WINDOW), ScoredLabels()
    asked = []
    exact = MultiSeatLeagueExact(analysis, league, policy_of=lambda ref: asked.append(ref) or ref)
    report = exact.report([HOME])
    kept = max(META_WINDOW, AVERAGE_WINDOW)
    newest = [p.param_ref for p in league.historical_players][-kept:]
    assert report['snapshots'] == len(league.historical_players)
    assert set(asked) - {HOME} <= set(newest) and len(asked) <= kept + 1
    assert set(exact.profiles._frozen) <= set(newest)
    asked.clear()
    exact.report([HOME])  # the kept profiles are not computed again
    assert asked == [HOME]
