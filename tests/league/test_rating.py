"""Elo and TrueSkill: update arithmetic, configured parameters, fixed anchors, optional import."""
import sys

import pytest

from sparring.league import EloRating, LeagueError, LeagueRatings, TrueSkillRating, UnknownPlayerError


def test_elo_update_matches_a_hand_computation():
    elo = EloRating(k=32, initial=1200)
    elo.add_player('a', rating=1200.0)
    elo.add_player('b', rating=1000.0)
    expected = 1 / (1 + 10 ** (-200 / 400))  # 0.7597
    assert elo.expected_score('a', 'b') == pytest.approx(expected)
    new_a, new_b = elo.update('a', 'b', 'win')
    assert new_a == pytest.approx(1200 + 32 * (1 - expected))
    assert new_b == pytest.approx(1000 - 32 * (1 - expected))
    elo.update('a', 'b', 'draw')
    assert elo['a'] + elo['b'] == pytest.approx(2200)  # Elo is zero-sum between unfixed players


def test_elo_k_is_configurable():
    small, large = EloRating(k=10), EloRating(k=40)
    for elo in (small, large):
        elo.update('a', 'b', 'loss')
    assert 1200 - small['a'] == pytest.approx(5.0) and 1200 - large['a'] == pytest.approx(20.0)


def test_fixed_reference_anchors_the_scale():
    elo = EloRating(k=32)
    elo.add_player('random_bot', rating=0.0, fixed=True)
    for _ in range(50):
        elo.update('agent', 'random_bot', 'win')
        elo.update('random_bot', 'agent', 'loss')
    assert elo['random_bot'] == 0.0
    assert elo['agent'] > 400  # the agent climbs away from the anchor


def test_strict_mode_rejects_unknown_players_and_self_games():
    elo = EloRating(auto_add=False)
    elo.add_player('a')
    with pytest.raises(UnknownPlayerError, match="'b'"):
        elo.update('a', 'b', 'win')
    with pytest.raises(LeagueError, match='itself'):
        elo.update('a', 'a', 'win')
    with pytest.raises(LeagueError, match="'won'"):
        elo.update('a', 'a', 'won')
    with pytest.raises(LeagueError, match='already has a rating'):
        elo.add_player('a')


def test_trueskill_uses_the_configured_parameters():
    trueskill = pytest.importorskip('trueskill')
    params = dict(mu=30.0, sigma=5.0, beta=3.0, tau=0.5, draw_probability=0.2)
    ts = TrueSkillRating(**params)
    assert (ts.env.mu, ts.env.sigma, ts.env.beta, ts.env.tau, ts.env.draw_probability) == tuple(params.values())
    reference = trueskill.TrueSkill(**params)
    a, b = reference.create_rating(), reference.create_rating()
    for outcome in ('win', 'loss', 'draw'):
        ts.update('a', 'b', outcome)
        if outcome == 'win':
            a, b = trueskill.rate_1vs1(a, b, env=reference)
        elif outcome == 'loss':
            b, a = trueskill.rate_1vs1(b, a, env=reference)
        else:
            a, b = trueskill.rate_1vs1(a, b, drawn=True, env=reference)
        assert (ts['a'].mu, ts['a'].sigma, ts['b'].mu, ts['b'].sigma) == pytest.approx((a.mu, a.sigma, b.mu, b.sigma))
    # Another beta gives other ratings: the parameter is used, not ignored.
    other = TrueSkillRating(**dict(params, beta=8.0))
    other.update('a', 'b', 'win')
    first = TrueSkillRating(**params)
    first.update('a', 'b', 'win')
    assert other['a'].mu != pytest.approx(first['a'].mu)


def test_trueskill_fixed_player_and_state():
    pytest.importorskip('trueskill')
    ts = TrueSkillRating()
    ts.add_player('bot', rating=(20.0, 1.0), fixed=True)
    ts.update('x', 'bot', 'win')
    assert (ts['bot'].mu, ts['bot'].sigma) == (20.0, 1.0)
    assert ts['x'].mu > 25.0 and ts.exposure('x') == pytest.approx(ts['x'].mu - 3 * ts['x'].sigma)
    copy = TrueSkillRating()
    copy.load_state_dict(ts.state_dict())
    assert copy['x'] == ts['x'] and copy.is_fixed('bot')


def test_missing_trueskill_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, 'trueskill', None)
    with pytest.raises(ImportError, match=r'pip install sparring\[league\]'):
        TrueSkillRating()


def test_league_ratings_update_both_systems_and_copy_parents():
    pytest.importorskip('trueskill')
    cfg = dict(elo=dict(enabled=True, k=16.0, initial=1000.0, scale=400.0),
               trueskill=dict(enabled=True, mu=25.0, sigma=25 / 3, beta=25 / 6, tau=25 / 300, draw_probability=0.1),
               history_interval=10, history_points=1000)
    ratings = LeagueRatings.from_config(cfg)
    ratings.add_player('a')
    ratings.add_player('bot', fixed=True, elo=500.0, trueskill=(10.0, 2.0))
    ratings.update('a', 'bot', 'win')
    ratings.add_player('a_h1', like='a')
    assert ratings.summary('a_h1') == ratings.summary('a')
    assert ratings.summary('bot')['elo'] == 500.0 and ratings.summary('bot')['trueskill_mu'] == 10.0
    for step in (0, 5, 10, 25):
        ratings.record_history('a', step)
    assert [p[0] for p in ratings.history['a']] == [0, 10, 25]  # at most one point per 10 steps
    ratings.reset('a')
    assert ratings.summary('a')['elo'] == 1000.0
    with pytest.raises(UnknownPlayerError):
        ratings.update('a', 'nobody', 'win')


def test_rating_history_stays_bounded_and_spans_the_run():
    ratings = LeagueRatings(EloRating(auto_add=False), history_points=10)
    ratings.add_player('a')
    for step in range(1000):
        ratings.record_history('a', step)
    points = ratings.history['a']
    assert len(points) <= 10 and points[0][0] == 0 and points[-1][0] >= 900
    gaps = [b[0] - a[0] for a, b in zip(points, points[1:])]
    assert max(gaps) <= 3 * min(gaps)  # evenly spread, not crowded at the end
