"""Player categories (DI-engine's ``player_category``, AlphaStar's races) on one game: every active kind per
category, snapshots in their parent's category, branches that draw across or within categories, the payoff
between categories, the saved state, the league table and the report page; one category is the league
without them."""
from collections import Counter

import numpy as np
import pytest

from sparring.config.schema import ConfigError
from sparring.framework.league_watch import category_scalars
from sparring.league import AlphaStarLeague, LeagueError, OneVsOneLeague
from sparring.league.persistence import FORMAT_VERSION
from sparring.league.report import HEADERS, league_table
from sparring.league.report_page import render_report

EXACT = dict(decay=1.0, min_win_rate_games=0)
RACES = ['terran', 'zerg']
N = 2000


def opponents(league, player_id, n=N):
    player = league.get_player(player_id)
    return Counter(player.get_opponent()[0].player_id for _ in range(n))


def categories_of(league, ids):
    return {league.get_player(pid).category for pid in ids}


def two_race_league(**player_cfg):
    return AlphaStarLeague(dict(player_category=RACES, payoff=EXACT, players=player_cfg))


# ------------------------------------------------------------------------------- the roster
def test_one_category_keeps_the_ids_and_names_it_default():
    league = AlphaStarLeague()
    assert league.categories == ['default']
    assert [p.player_id for p in league.active_players] == [
        'main_player_0', 'main_exploiter_0', 'league_exploiter_0', 'league_exploiter_1']
    assert {p.category for p in league.roster.players if p.kind != 'reference'} == {'default'}


def test_each_active_kind_is_created_per_category_and_snapshots_keep_their_parents_category(helpers):
    league = two_race_league(main_player=dict(one_phase_step=10))
    assert [(p.player_id, p.category) for p in league.active_players] == [
        ('main_player_terran_0', 'terran'), ('main_exploiter_terran_0', 'terran'),
        ('league_exploiter_terran_0', 'terran'), ('league_exploiter_terran_1', 'terran'),
        ('main_player_zerg_0', 'zerg'), ('main_exploiter_zerg_0', 'zerg'),
        ('league_exploiter_zerg_0', 'zerg'), ('league_exploiter_zerg_1', 'zerg')]
    verdict = helpers.advance(league, 'main_player_zerg_0', 20)
    assert verdict['snapshot']
    snapshot = league.get_player(verdict['historical_player']['player_id'])
    assert snapshot.player_id == 'main_player_zerg_0_h1' and snapshot.category == 'zerg'
    assert [p.category for p in league.roster.snapshots_of('main_player_terran_0').players] == ['terran']


@pytest.mark.parametrize('categories, expected', [
    ('terran', 'expected a list'), ([], 'expected a non-empty list'),
    (['terran', 'terran'], r"categories \['terran'\] are listed twice"), (['ter ran'], 'is not a name'),
    ([3], 'is not a name')])
def test_a_bad_category_list_is_refused_naming_the_key(categories, expected):
    with pytest.raises(ConfigError, match=r'league\.player_category.*' + expected):
        OneVsOneLeague(dict(player_category=categories))


def test_opponents_of_other_categories_need_two_categories():
    with pytest.raises(ConfigError, match=r"players\.naive_sp\.opponent_categories.*'others' needs at least two"):
        OneVsOneLeague(dict(players=dict(naive_sp=dict(opponent_categories='others'))))
    with pytest.raises(ConfigError, match=r"opponent_categories.*expected one of 'all', 'own', 'others', got 'mine'"):
        OneVsOneLeague(dict(player_category=RACES, players=dict(naive_sp=dict(opponent_categories='mine'))))


def test_a_reference_player_sharing_an_active_players_id_is_refused():
    with pytest.raises(ConfigError, match=r"player ids \['naive_sp_zerg_0'\] are used twice"):
        OneVsOneLeague(dict(player_category=RACES, reference_players=[dict(player_id='naive_sp_zerg_0')]))


# ------------------------------------------------------------------------------- branches
def test_naive_sp_plays_itself_and_pfsp_over_the_snapshots_of_every_category_by_default():
    league = OneVsOneLeague(dict(player_category=RACES, payoff=EXACT))
    counts = opponents(league, 'naive_sp_terran_0')
    assert set(counts) == {'naive_sp_terran_0', 'naive_sp_terran_0_h0', 'naive_sp_zerg_0_h0'}


@pytest.mark.parametrize('choice, expected', [('own', {'terran'}), ('others', {'zerg'}), ('all', {'terran', 'zerg'})])
def test_opponent_categories_narrow_the_pfsp_pool(choice, expected):
    league = OneVsOneLeague(dict(player_category=RACES, payoff=EXACT,
                                 players=dict(naive_sp=dict(branch_probs=dict(pfsp=1.0), opponent_categories=choice))))
    counts = opponents(league, 'naive_sp_terran_0')
    assert categories_of(league, counts) == expected
    assert all(league.get_player(pid).kind == 'historical' for pid in counts)


def test_main_player_self_play_meets_the_main_players_of_every_category():
    league = two_race_league(main_player=dict(branch_probs=dict(sp=1.0)))
    assert set(opponents(league, 'main_player_terran_0')) == {'main_player_terran_0', 'main_player_zerg_0'}
    own = two_race_league(main_player=dict(branch_probs=dict(sp=1.0), opponent_categories='own'))
    assert set(opponents(own, 'main_player_terran_0')) == {'main_player_terran_0'}


def test_main_exploiter_trains_against_the_main_players_of_every_category_or_of_the_others():
    league = two_race_league()
    assert set(opponents(league, 'main_exploiter_zerg_0')) == {'main_player_terran_0', 'main_player_zerg_0'}
    others = two_race_league(main_exploiter=dict(opponent_categories='others'))
    assert set(opponents(others, 'main_exploiter_zerg_0')) == {'main_player_terran_0'}
    # and it snapshots once it beats those it trains against, not its own race's main player
    assert others.get_player('main_exploiter_zerg_0')._snapshot_opponents().ids == ['main_player_terran_0']


def test_league_exploiter_pfsp_covers_every_categorys_snapshots():
    league = two_race_league()
    assert categories_of(league, opponents(league, 'league_exploiter_zerg_1')) == {'terran', 'zerg'}


def test_main_player_verification_looks_at_the_exploiters_of_every_category(helpers):
    league = two_race_league(main_player=dict(branch_probs=dict(verification=1.0)))
    helpers.record(league, 'main_player_terran_0', 'main_exploiter_terran_0_h0', wins=10)
    helpers.record(league, 'main_player_terran_0', 'main_exploiter_zerg_0_h0', losses=10)
    assert set(opponents(league, 'main_player_terran_0', 200)) == {'main_exploiter_zerg_0_h0'}
    own = two_race_league(main_player=dict(branch_probs=dict(verification=1.0), opponent_categories='own'))
    helpers.record(own, 'main_player_terran_0', 'main_exploiter_zerg_0_h0', losses=10)
    # the zerg exploiter is not its concern: nothing to verify, so self-play among the terran main players
    assert set(opponents(own, 'main_player_terran_0', 200)) == {'main_player_terran_0'}


def test_one_category_draws_exactly_as_without_categories():
    """'own' in a league of one category is 'all': the same draws from the same seed."""
    drawn = []
    for choice in ('all', 'own'):
        league = AlphaStarLeague(dict(seed=3, players=dict(main_player=dict(opponent_categories=choice),
                                                            league_exploiter=dict(opponent_categories=choice))))
        drawn.append([league.get_job_info()['player_ids'][1] for _ in range(300)])
    assert drawn[0] == drawn[1]


# ------------------------------------------------------------------------------- payoff between categories
def test_category_payoff_by_hand(helpers):
    league = OneVsOneLeague(dict(player_category=RACES, payoff=EXACT, players=dict(naive_sp=dict()),
                                 reference_players=[dict(player_id='bot', param_ref='bot:random')]))
    helpers.record(league, 'naive_sp_terran_0', 'naive_sp_zerg_0', wins=6, draws=2, losses=2)
    helpers.record(league, 'naive_sp_terran_0', 'naive_sp_zerg_0_h0', wins=1, losses=3)
    helpers.record(league, 'naive_sp_zerg_0', 'naive_sp_zerg_0_h0', wins=4)
    helpers.record(league, 'naive_sp_zerg_0', 'bot', losses=5)  # a bot belongs to no category
    categories, rates, games = league.category_payoff()
    assert categories == RACES
    # terran against zerg: (6 + 1 + 1) of 14 games; zerg against zerg: 4 games seen from both sides
    np.testing.assert_allclose(games, [[0, 14], [14, 8]])
    np.testing.assert_allclose(rates, [[0.5, 8 / 14], [6 / 14, 0.5]])
    text = league_table(league)
    assert 'Payoff between categories' in text and '0.571 (14)' in text and '0.429 (14)' in text
    assert category_scalars(league) == {'league/category/terran/win_rate/zerg': pytest.approx(8 / 14),
                                        'league/category/zerg/win_rate/terran': pytest.approx(6 / 14)}


def test_one_category_shows_no_category_column_table_or_figures(helpers):
    league = OneVsOneLeague(dict(payoff=EXACT))
    helpers.record(league, 'naive_sp_0', 'naive_sp_0_h0', wins=3)
    text = league_table(league)
    assert text.splitlines()[0].split() == [w for h in HEADERS for w in h.split()]
    assert 'categor' not in text and category_scalars(league) == {}
    page = render_report(league, dict(evaluations=[], snapshots=[], exact=[]), {'run': 'r', 'env steps': 0})
    assert 'categor' not in page


def test_the_league_table_and_report_page_show_categories(helpers):
    league = two_race_league()
    helpers.record(league, 'main_player_terran_0', 'main_player_zerg_0', wins=3, losses=1)
    header, _, first = league_table(league, sort_by='joined').splitlines()[:3]
    assert header.split()[:3] == ['player', 'kind', 'category'] and first.split()[:3] == [
        'main_player_terran_0', 'active', 'terran']
    page = render_report(league, dict(evaluations=[], snapshots=[], exact=[]), {'run': 'r', 'env steps': 0})
    assert '<th>category</th>' in page and '<h2>Payoff between categories</h2>' in page
    section = page[page.index('<table class="categories">'):]
    assert '<td>terran</td><td>0.500 (0)</td>' not in section  # never met within terran: no rate shown
    assert '<td>terran</td><td>-</td><td>0.750 (4)</td>' in section


# ------------------------------------------------------------------------------- state
def test_the_saved_state_keeps_every_players_category(tmp_path, helpers):
    league = two_race_league(league_exploiter=dict(one_phase_step=5))
    helpers.advance(league, 'league_exploiter_zerg_1', 10)
    path = league.save(str(tmp_path / 'league.npz'))
    restored = AlphaStarLeague.load(path)
    assert [(p.player_id, p.category) for p in restored.roster.players] == [
        (p.player_id, p.category) for p in league.roster.players]
    assert restored.get_player('league_exploiter_zerg_1_h1').category == 'zerg'
    helpers.assert_states_equal(restored.state_dict(), league.state_dict())
    assert FORMAT_VERSION == 2  # league state files carry categories from version 2 on


def test_a_state_saved_with_other_categories_is_refused(tmp_path):
    path = two_race_league().save(str(tmp_path / 'league.npz'))
    with pytest.raises(LeagueError, match='differ from this config'):
        AlphaStarLeague.load(path, cfg=dict(player_category=['terran', 'protoss']))


def test_a_player_saved_in_another_category_is_refused():
    league = OneVsOneLeague(dict(player_category=RACES))
    state = league.state_dict()
    state['players'][0]['category'] = 'zerg'
    with pytest.raises(LeagueError, match="'naive_sp_terran_0': saved in category 'zerg', configured in 'terran'"):
        OneVsOneLeague(dict(player_category=RACES)).load_state_dict(state)
