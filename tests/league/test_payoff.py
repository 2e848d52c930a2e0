"""BattleRecordDict and BattleSharedPayoff: decay arithmetic, symmetry, growth, threads, errors."""
import threading

import numpy as np
import pytest

from sparring.league import BattleRecordDict, BattleSharedPayoff, LeagueError, UnknownPlayerError


def make(n, **kwargs):
    payoff = BattleSharedPayoff(**kwargs)
    for i in range(n):
        payoff.add_player(f'p{i}')
    return payoff


def test_decay_arithmetic_matches_a_hand_computation():
    payoff = make(2, decay=0.9, min_win_rate_games=0)
    payoff.record('p0', 'p1', ['win', 'win', 'loss', 'draw'])
    # Each game first multiplies the pair's counts by 0.9, then adds itself:
    # win: w=1 | win: w=0.9+1=1.9 | loss: w=1.71, l=1 | draw: w=1.539, l=0.9, d=1
    rec = payoff.get_record('p0', 'p1')
    assert rec['wins'] == pytest.approx(1.539)
    assert rec['losses'] == pytest.approx(0.9)
    assert rec['draws'] == pytest.approx(1.0)
    assert rec['games'] == pytest.approx(1 + 0.9 + 0.81 + 0.729)
    assert payoff.win_rate('p0', 'p1') == pytest.approx((1.539 + 0.5) / 3.439)
    # A second job continues the same pair: one more decay step, then the loss.
    payoff.record('p0', 'p1', ['loss'])
    rec = payoff.get_record('p0', 'p1')
    assert (rec['wins'], rec['draws'], rec['losses']) == pytest.approx((1.3851, 0.9, 1.81))
    # The undecayed totals count games as they are.
    assert payoff.totals('p0') == BattleRecordDict(2, 1, 2)
    assert payoff.totals('p1') == BattleRecordDict(2, 1, 2)


def test_record_dict_decay_and_reverse():
    rec = BattleRecordDict(wins=4, draws=2, losses=2)
    assert rec['games'] == 8 and rec.win_rate() == 0.625
    assert rec * 0.5 == BattleRecordDict(2, 1, 1) and 0.5 * rec == rec * 0.5
    assert rec.reversed() == BattleRecordDict(2, 2, 4)
    assert rec.win_rate(min_games=9) == 0.5


def test_min_win_rate_games_reports_unknown_as_one_half():
    payoff = make(2, decay=1.0, min_win_rate_games=4)
    payoff.record('p0', 'p1', ['win'] * 3)
    assert payoff.win_rate('p0', 'p1') == 0.5
    payoff.record('p0', 'p1', ['win'])
    assert payoff.win_rate('p0', 'p1') == 1.0
    assert payoff.win_rate('p1', 'p0') == 0.0


def test_win_rates_are_symmetric_for_every_pair():
    """Active-like players (rows) and snapshot-like players (no row), in every combination."""
    rng = np.random.default_rng(0)
    payoff = make(12, decay=0.97, min_win_rate_games=0, initial_capacity=2)
    homes = [0, 1, 2]  # these launch most games; 5 and 9 become rows only later
    for k in range(3000):
        home = int(rng.choice(homes + ([5] if k > 1000 else []) + ([9] if k > 2000 else [])))
        away = int(rng.integers(12))
        if away != home:
            payoff.record(f'p{home}', f'p{away}', [('win', 'draw', 'loss')[rng.integers(3)]])
    ids = list(payoff.player_ids)
    for a in ids:
        rates = payoff.win_rates(a, ids)
        assert isinstance(rates, np.ndarray) and rates.shape == (12,)
        for j, b in enumerate(ids):
            if a != b:
                assert rates[j] + payoff.win_rate(b, a) == pytest.approx(1.0)
                assert payoff.get_record(a, b) == pytest.approx(payoff.get_record(b, a).reversed())


def test_a_win_for_home_is_a_loss_for_away():
    payoff = make(3, decay=1.0, min_win_rate_games=0)
    payoff.record('p0', 'p1', ['win', 'win', 'draw'])
    payoff.record('p2', 'p1', ['loss'])  # p1 gets a row only now: its earlier games must follow
    assert payoff.get_record('p1', 'p0') == BattleRecordDict(0, 1, 2)
    assert payoff.get_record('p1', 'p2') == BattleRecordDict(1, 0, 0)
    assert payoff['p1', ['p0', 'p2']] == pytest.approx([1 / 6, 1.0])
    assert payoff['p0', 'p1'] == pytest.approx(5 / 6)


def test_grows_to_thousands_of_players_and_keeps_records():
    payoff = make(3, decay=1.0, min_win_rate_games=0, initial_capacity=1)
    payoff.record('p0', 'p2', ['win'])
    for i in range(3, 3000):
        payoff.add_player(f'p{i}')
        if i % 100 == 0:
            payoff.record('p0', f'p{i}', ['loss'])
    assert payoff.win_rate('p0', 'p2') == 1.0
    rates = payoff.win_rates('p0', [f'p{i}' for i in range(100, 3000, 100)])
    assert np.all(rates == 0.0)
    assert len(payoff) == 3000


def test_concurrent_updates_lose_nothing():
    payoff = make(6, decay=1.0, min_win_rate_games=0)

    def play(home, away):
        for _ in range(2000):
            payoff.record(home, away, ['win'])

    threads = [threading.Thread(target=play, args=(f'p{i % 3}', f'p{3 + i % 2}')) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(payoff.totals(f'p{i}')['wins'] for i in range(3)) == 16000
    assert sum(payoff.totals(f'p{i}')['losses'] for i in (3, 4)) == 16000
    assert sum(payoff.get_record(f'p{i}', f'p{j}')['games'] for i in range(3) for j in (3, 4)) == 16000


@pytest.mark.parametrize('call, error, message', [
    (lambda p: p.record('p0', 'ghost', ['win']), UnknownPlayerError, "'ghost'"),
    (lambda p: p.record('p0', 'p1', ['win', 'victory']), LeagueError, "'victory'"),
    (lambda p: p.record('p0', 'p1', [['win']]), LeagueError, 'nested'),
    (lambda p: p.record('p0', 'p1', 'win'), LeagueError, 'flat list'),
    (lambda p: p.record('p0', 'p1', []), LeagueError, 'at least one'),
    (lambda p: p.record('p0', 'p0', ['win']), LeagueError, 'against itself'),
    (lambda p: p.add_player('p0'), LeagueError, 'already registered'),
])
def test_bad_input_raises_and_records_nothing(call, error, message, helpers):
    payoff = make(2, decay=0.9)
    payoff.record('p0', 'p1', ['win'])
    before = payoff.state_dict()
    with pytest.raises(error, match=message):
        call(payoff)
    helpers.assert_states_equal(payoff.state_dict(), before)


@pytest.mark.parametrize('kwargs', [dict(decay=0.0), dict(decay=1.5), dict(min_win_rate_games=-1)])
def test_bad_settings(kwargs):
    with pytest.raises(LeagueError):
        BattleSharedPayoff(**kwargs)


def test_prints_as_a_table_and_round_trips(helpers):
    payoff = make(3, decay=0.99, min_win_rate_games=1)
    payoff.record('p0', 'p1', ['win', 'loss', 'win'])
    payoff.record('p1', 'p2', ['draw'])
    text = str(payoff)
    assert 'home' in text and 'win rate' in text and 'p0' in text and '3 players' in text
    assert text.count('\n') == 4  # header, column names, rule, two pairs
    copy = BattleSharedPayoff()
    copy.load_state_dict(payoff.state_dict())
    helpers.assert_states_equal(copy.state_dict(), payoff.state_dict())
    assert copy.win_rate('p2', 'p1') == payoff.win_rate('p2', 'p1') == 0.5
    with pytest.raises(LeagueError, match='shape'):
        bad = payoff.state_dict()
        bad['wins'] = bad['wins'][:, :1]
        copy.load_state_dict(bad)
