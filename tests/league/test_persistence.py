"""Saving and restoring a league: identical next choices, atomic writes, clear errors."""
import os

import numpy as np
import pytest

from sparring.league import AlphaStarLeague, BaseLeague, LeagueError, OneVsOneLeague, load_state, save_state

OUTCOMES = ('win', 'draw', 'loss')

CONFIGS = {
    'alphastar': (AlphaStarLeague, dict(
        seed=7, players=dict(main_player=dict(one_phase_step=3), main_exploiter=dict(one_phase_step=3),
                             league_exploiter=dict(one_phase_step=3)),
        rating=dict(trueskill=dict(enabled=True)),
        reference_players=[dict(player_id='random_bot', elo=0.0)])),
    'one_vs_one_mixed': (OneVsOneLeague, dict(
        seed=11, active_players=dict(naive_sp=1, mlagents_sp=1, openai_five_sp=1),
        players=dict(naive_sp=dict(one_phase_step=3), mlagents_sp=dict(save_steps=4, swap_steps=3, window=3),
                     openai_five_sp=dict(save_steps=4, quality_lr=0.5)))),
}


def drive(league, n_jobs, outcome_seed, start_step):
    """A reproducible training loop; returns every choice the league made."""
    outcomes = np.random.default_rng(outcome_seed)
    actives = [p.player_id for p in league.active_players]
    choices = []
    for k in range(n_jobs):
        player_id = actives[k % len(actives)]
        job = league.get_job_info(player_id, eval_flag=bool(league.reference_players) and k % 10 == 9)
        choices.append((job['job_id'], tuple(job['player_ids']), job['branch']))
        league.finish_job(dict(player_ids=job['player_ids'],
                               result=[OUTCOMES[i] for i in outcomes.integers(0, 3, size=3)]))
        if k % len(actives) == len(actives) - 1:
            step = start_step + k // len(actives)
            for pid in actives:
                league.update_active_player(dict(player_id=pid, train_iteration=step, agent_steps=step))
                judged = league.judge_snapshot(pid)
                choices.append((pid, judged['snapshot'], judged['reset']))
    choices.append(league.get_job_info()['launch_player'])
    return choices


@pytest.mark.parametrize('name', sorted(CONFIGS))
def test_save_load_gives_identical_next_100_job_choices(name, tmp_path, helpers):
    league_cls, cfg = CONFIGS[name]
    original = league_cls(cfg)
    drive(original, 150, outcome_seed=1, start_step=1)
    path = str(tmp_path / 'league.npz')
    original.save(path)
    expected = drive(original, 100, outcome_seed=2, start_step=1000)

    restored = BaseLeague.load(path)
    assert type(restored) is league_cls
    assert drive(restored, 100, outcome_seed=2, start_step=1000) == expected
    helpers.assert_states_equal(restored.state_dict(), original.state_dict())
    assert len([c for c in expected if len(c) == 3 and c[1] is True]) > 0  # snapshots happened after loading

    in_place = league_cls(cfg)
    in_place.restore(path)
    assert drive(in_place, 100, outcome_seed=2, start_step=1000) == expected


def test_state_holds_counters_snapshots_payoff_ratings_quality_and_rng(tmp_path):
    league_cls, cfg = CONFIGS['one_vs_one_mixed']
    league = league_cls(cfg)
    drive(league, 90, outcome_seed=3, start_step=1)
    state = league.state_dict()
    assert state['league_type'] == 'one_vs_one'
    assert {'config', 'rng_state', 'job_count', 'players', 'payoff', 'ratings'} <= set(state)
    kinds = [p['kind'] for p in state['players']]
    assert kinds.count('active') == 3 and kinds.count('historical') > 3
    openai = next(p for p in state['players'] if p.get('player_type') == 'openai_five_sp')
    assert len(openai['extra']['quality']) == len(openai['extra']['past_ids']) > 1
    path = save_state(state, str(tmp_path / 'state.npz'))
    loaded = load_state(path)
    assert loaded['payoff']['wins'].dtype == np.float64
    restored = league_cls(cfg)
    restored.load_state_dict(loaded)
    assert restored.get_player('openai_five_sp_0').quality_scores == league.get_player('openai_five_sp_0').quality_scores
    assert restored.ratings.elo['naive_sp_0'] == league.ratings.elo['naive_sp_0']
    assert restored.get_player('naive_sp_0').last_snapshot_step == league.get_player('naive_sp_0').last_snapshot_step


def test_writes_are_atomic(tmp_path, monkeypatch):
    league = OneVsOneLeague()
    path = str(tmp_path / 'league.npz')
    league.save(path)
    good = open(path, 'rb').read()
    league.finish_job(dict(player_ids=['naive_sp_0', 'naive_sp_0_h0'], result=['win']))

    def crash(*args, **kwargs):
        raise OSError('disk full')

    monkeypatch.setattr(np, 'savez', crash)
    with pytest.raises(OSError, match='disk full'):
        league.save(path)
    assert open(path, 'rb').read() == good  # the old file is intact
    assert os.listdir(tmp_path) == ['league.npz']  # and no temporary file is left behind


def test_bad_state_is_rejected_and_the_league_left_unchanged(tmp_path, helpers):
    league = AlphaStarLeague()
    league.finish_job(dict(player_ids=['main_player_0', 'main_exploiter_0'], result=['win']))
    state = league.state_dict()
    before = league.state_dict()

    with pytest.raises(LeagueError, match="saved from a 'alphastar' league"):
        OneVsOneLeague().load_state_dict(state)
    with pytest.raises(LeagueError, match='differ from this config'):
        AlphaStarLeague(dict(active_players=dict(main_player=2))).load_state_dict(state)
    broken = dict(state, payoff=dict(state['payoff'], wins=state['payoff']['wins'][:, :2]))
    with pytest.raises(LeagueError, match='shape'):
        league.load_state_dict(broken)
    helpers.assert_states_equal(league.state_dict(), before)
    (tmp_path / 'junk.npz').write_bytes(b'not a league')
    with pytest.raises(LeagueError, match='cannot read'):
        BaseLeague.load(str(tmp_path / 'junk.npz'))


def test_a_league_state_of_another_format_is_refused_by_its_version_not_as_malformed():
    """A checkpoint embeds the league's state dict: one written before a format change (here, before players had a
    category) is refused naming the versions, not with whichever key happens to be missing."""
    league = AlphaStarLeague()
    before = league.state_dict()
    older = {k: v for k, v in before.items() if k != 'format_version'}
    older['players'] = [{k: v for k, v in p.items() if k != 'category'} for p in older['players']]
    with pytest.raises(LeagueError, match=r'league state of format version none: written before versions; .* reads '
                                          r'version 2\. Start a new run directory'):
        league.load_state_dict(older)
    with pytest.raises(LeagueError, match='league state of format version 1;'):
        league.load_state_dict(dict(before, format_version=1))
    league.load_state_dict(before)
