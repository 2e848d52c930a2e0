"""The exact analysis of a league of roles, on a stand-in game whose figures are worked by hand: whom each active
player is paired with, which snapshots make a role's recent average, and damaged or replaced snapshots."""
from types import SimpleNamespace

import pytest

from sparring.config.schema import ConfigError
from sparring.league.role_exact_analysis import RECENT_WINDOW, LeagueRoleAnalysis, RoleExactAnalysis
from sparring.worker.state_file import StateFileError


class Sums(RoleExactAnalysis):
    """A policy is a number; a role's gain is the other role's number, and a mixture the weighted mean."""

    roles = ('a', 'b')

    def __init__(self):
        self.profiled = []

    def profile(self, policy, role):
        self.profiled.append((policy, role))
        return float(policy)

    def pair(self, profiles):
        gains = {'a': profiles['b'], 'b': profiles['a']}
        return dict(nash_conv=sum(gains.values()), gains=gains, values=dict(a=0.0, b=0.0))

    def mixture(self, profiles, weights, role):
        return sum(p * w for p, w in zip(profiles, weights)) / sum(weights)


def league_of(active, historical):
    """A stand-in league: ``active`` {id: role}, ``historical`` [(id, role, param ref)] oldest first."""
    players = {pid: SimpleNamespace(player_id=pid, category=role, kind='active') for pid, role in active.items()}
    snapshots = [SimpleNamespace(player_id=pid, category=role, kind='historical', param_ref=ref)
                 for pid, role, ref in historical]
    players.update({p.player_id: p for p in snapshots})
    return SimpleNamespace(cfg=dict(player_category=['a', 'b']), get_player=players.__getitem__,
                           historical_players=snapshots)


VALUES = {'a0': 1.0, 'a1': 3.0, 'b0': 2.0, 'ha0': 10.0, 'ha1': 20.0, 'hb0': 40.0}


def policy_of(ref, role):
    return VALUES[ref]


def test_the_live_pair_and_each_players_exploitability_against_the_other_roles_first_player():
    league = league_of(dict(a0='a', a1='a', b0='b'), [])
    report = LeagueRoleAnalysis(Sums(), league, policy_of).report(['a0', 'a1', 'b0'])
    assert report['pair'] == dict(a='a0', b='b0')
    assert report['nash_conv'] == 3.0 and report['gains'] == dict(a=2.0, b=1.0)
    # a1 is paired with b0 (b's first): b's gain against a1 is a1's number
    assert report['exploitability'] == dict(a0=1.0, a1=3.0, b0=2.0)
    assert report['average_nash_conv'] == 3.0 and report['meta_exploitability'] == 1.5  # no snapshots yet


def test_the_recent_average_mixes_the_live_player_with_its_roles_newest_readable_snapshots():
    history = [(f'ha_{i}', 'a', f'ref_a{i}') for i in range(RECENT_WINDOW + 2)] + [('hb0', 'b', 'hb0')]
    values = dict(VALUES, **{f'ref_a{i}': float(i) for i in range(RECENT_WINDOW + 2)})
    damaged = []

    def policy(ref, role):
        if ref == 'ref_a9':
            raise StateFileError('torn file')
        return values[ref]
    analysis = LeagueRoleAnalysis(Sums(), league_of(dict(a0='a', b0='b'), history), policy,
                                  damaged=lambda ref, why: damaged.append(ref), dropped={'ref_a8': 'quarantined'})
    report = analysis.report(['a0', 'b0'])
    assert damaged == ['ref_a9']  # told once, then left out like the quarantined ref_a8
    kept_a = ['a0'] + [f'ha_{i}' for i in range(7, 7 - (RECENT_WINDOW - 1), -1)]
    assert [pid for pid in report['meta_strategy'] if pid.startswith(('a', 'ha'))] == kept_a
    mean_a = (1.0 + sum(range(1, 8))) / RECENT_WINDOW
    assert report['average_nash_conv'] == pytest.approx(mean_a + (2.0 + 40.0) / 2)


def test_a_snapshot_profile_is_computed_once_until_it_is_stored_anew():
    game = Sums()
    analysis = LeagueRoleAnalysis(game, league_of(dict(a0='a', b0='b'), [('ha0', 'a', 'ha0')]), policy_of)
    analysis.report(['a0', 'b0'])
    analysis.report(['a0', 'b0'])
    assert game.profiled.count((10.0, 'a')) == 1 and game.profiled.count((1.0, 'a')) == 2  # live: every time
    analysis.forget('ha0')
    analysis.report(['a0', 'b0'])
    assert game.profiled.count((10.0, 'a')) == 2


def test_a_league_whose_categories_are_not_the_games_roles_is_refused():
    league = league_of(dict(a0='a', b0='b'), [])
    league.cfg = dict(player_category=['red', 'blue'])
    with pytest.raises(ConfigError, match=r"league's categories \['blue', 'red'\] are not the game's roles \['a', "
                                          r"'b'\]"):
        LeagueRoleAnalysis(Sums(), league, policy_of)


def test_a_long_run_keeps_only_the_recent_averages_snapshot_profiles():
    """Snapshots that fall out of a role's recent average drop out of the kept profiles: the memory the analysis keeps
    does not grow with the run."""
    history = [(f'h{role}_{i}', role, f'ref_{role}{i}') for i in range(4 * RECENT_WINDOW) for role in 'ab']
    analysis = LeagueRoleAnalysis(Sums(), league_of(dict(a0='a', b0='b'), history),
                                  lambda ref, role: VALUES.get(ref, 1.0))
    analysis.report(['a0', 'b0'])
    newest = {f'ref_{role}{i}' for role in 'ab' for i in range(4 * RECENT_WINDOW - (RECENT_WINDOW - 1), 4 * RECENT_WINDOW)}
    assert set(analysis.profiles._frozen) == newest
