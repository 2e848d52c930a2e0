"""The serial league pipeline: games reach the payoff once, snapshots keep their parameters, resume."""
import os

import numpy as np
import pytest
import torch

from sparring.config import compile_config
from sparring.framework import serial_pipeline
from sparring.framework.run_setup import complete_league_config
from sparring.framework.serial_run import SerialRun
from sparring.worker.checkpoint import CheckpointManager
from tests.configs import tiny_league_config


def _config(exp_name, **train):
    return tiny_league_config(
        exp_name, policy=dict(model=dict(hidden_sizes=[32]), learn=dict(num_minibatches=2)),
        league=dict(active_players=dict(naive_sp=2), payoff=dict(decay=1.0), players=dict(naive_sp=dict(one_phase_step=3))),
        train=dict(dict(checkpoint_every_iters=2), **train))


def _run(tmp_path, **train):
    cfg = compile_config(_config(tmp_path / 'league', **train), save=False)
    complete_league_config(cfg)
    return SerialRun(cfg)


def test_every_game_reaches_the_payoff_exactly_once(tmp_path):
    run = _run(tmp_path)
    try:
        for _ in range(6):
            run.train_round()
        assert all(c.episodes > 0 for c in run.collectors.values())
        # 6 rounds of 4 envs x 8 steps each (a chunk has a column per seat: 2 x 4 columns)
        assert all(learner.env_steps == 6 * 32 for learner in run.learners.values())
        assert all(learner.sample_reuse > 0 for learner in run.learners.values())
        # each game counted once: the pair's record holds it, seen from either side
        games_as_home = sum(c.episodes for c in run.collectors.values())
        self_play = sum(run.league.get_player(pid).self_play_games for pid in run.player_ids)
        recorded = sum(rec['games'] for home, away, rec in run.league.payoff.played_pairs())
        assert recorded == pytest.approx(games_as_home - self_play)
    finally:
        run.close()


def test_snapshots_freeze_the_parameters_of_their_moment(tmp_path):
    run = _run(tmp_path, max_env_steps=10_000)  # a budget far away: the learning rate is not annealed to 0
    try:
        for _ in range(8):  # one_phase_step=3: snapshots by iteration 6 at the latest
            run.train_round()
        # annealing follows env steps against the per-player share of the budget
        assert all(learner.progress == pytest.approx(8 * 32 / 5_000) for learner in run.learners.values())
        snapshots = [p for p in run.league.historical_players if not p.player_id.endswith('_h0')]
        assert snapshots
        first = snapshots[0]
        stored = run.store.get(first.param_ref)
        live = run.learners[first.parent_id].policy.get_params()
        assert any(not torch.equal(stored['params'][k], live[k]) for k in live)  # training went on
        frozen = run.pool.get(first.param_ref)
        assert frozen is not run.learners[first.parent_id].policy
        assert all(torch.equal(frozen.get_params()[k], stored['params'][k]) for k in live)
    finally:
        run.close()


@pytest.mark.slow
def test_league_run_resumes_with_the_same_league_state(tmp_path):
    exp = tmp_path / 'resumable'
    first = serial_pipeline(_config(exp), seed=4)
    saved = CheckpointManager.load(first['checkpoint'])
    cfg = compile_config(_config(exp), seed=4, save=False)
    complete_league_config(cfg)
    resumed = SerialRun(cfg, saved)
    try:
        assert resumed.league.state_dict().keys() == saved['league_state'].keys()
        np.testing.assert_equal(resumed.league.payoff.state_dict(), saved['league_state']['payoff'])
        for pid in resumed.player_ids:
            assert resumed.learners[pid].train_iter == saved['learners'][pid]['train_iter']
        # the next opponent choices are those the saved league would have made
        choices = [resumed.league.get_job_info(pid)['player_ids'][1] for pid in resumed.player_ids * 5]
    finally:
        resumed.close()
    again = SerialRun(cfg, CheckpointManager.load(first['checkpoint']))
    try:
        assert [again.league.get_job_info(pid)['player_ids'][1] for pid in again.player_ids * 5] == choices
    finally:
        again.close()
    more = serial_pipeline(_config(exp), seed=4, resume=True, max_env_steps=512)
    assert more['env_steps'] == 512 and more['rounds'] == 2 * first['rounds']


def test_battle_config_without_league_gets_naive_self_play_and_bot_opponents(tmp_path):
    cfg = _config(tmp_path / 'plain')
    del cfg['league']
    summary = serial_pipeline(cfg, seed=0, max_env_steps=64)
    assert set(summary['eval']['naive_sp_0']) == {'random', 'tictactoe_heuristic', 'tictactoe_mcts'}
    assert 'naive_sp_0' in summary['league_table']
    pictures = summary['pictures']  # drawn in a base install, as SVG files
    assert pictures and all(p.endswith('.svg') and os.path.exists(p) for p in pictures)


def _matrix_config(tmp_path, env_type='zero_sum_2x2', **battle):
    return dict(
        exp_name=str(tmp_path / 'exact'), seed=0,
        env=dict(type=env_type, collector_env_num=8, evaluator_env_num=4, n_evaluator_episodes=8),
        policy=dict(type='ppo', model=dict(hidden_sizes=[8]), collect=dict(n_steps=2),
                    learn=dict(epochs=1, num_minibatches=1, gamma=0.0, gae_lambda=0.0)),
        league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=2, branch_probs=dict(nash=1.0),
                                                                  mutate_prob=1.0))),
        battle=dict(exact_analysis=True, **battle),
        train=dict(max_env_steps=8 * 2 * 6, eval_every_iters=3, checkpoint_every_iters=0, progress_bar=False,
                   tensorboard=False))


@pytest.mark.slow
def test_exact_analysis_reports_exploitability_and_drives_the_nash_branch(tmp_path):
    summary = serial_pipeline(_matrix_config(tmp_path))
    exact = summary['exact']
    assert set(exact['exploitability']) == {'naive_sp_0'}
    weights = exact['meta_strategy']
    assert {'naive_sp_0', 'naive_sp_0_h0', 'naive_sp_0_h1'} <= set(weights)
    assert sum(weights.values()) == pytest.approx(1.0)
    assert 0.0 <= exact['meta_exploitability'] <= max(exact['exploitability'].values()) + 2.5
    np.testing.assert_allclose(np.sum(exact['meta_strategy_actions'], axis=1), 1.0)
    log = (tmp_path / 'exact' / 'log.txt').read_text()
    assert 'meta_expl=' in log and 'population meta-strategy' in log


def test_exact_analysis_on_a_game_without_one_is_a_config_error(tmp_path):
    from sparring.config.schema import ConfigError
    with pytest.raises(ConfigError, match='battle.exact_analysis'):
        serial_pipeline(_matrix_config(tmp_path, env_type='prisoners_dilemma'))


def test_exact_analysis_of_a_recurrent_model_is_a_config_error_before_training(tmp_path):
    """The analysis reads move probabilities per information state without a recurrent state: refused at set-up,
    not at the first report (where PPO asked for a state it was not given)."""
    from sparring.config.schema import ConfigError
    cfg = _matrix_config(tmp_path)
    cfg['policy']['model'] = dict(type='lstm', hidden_size=8, bptt_len=2)
    with pytest.raises(ConfigError, match='battle.exact_analysis.*recurrent'):
        serial_pipeline(cfg)
    assert not (tmp_path / 'exact' / 'ckpt').exists()


@pytest.mark.slow
def test_branch_counts_survive_a_resume(tmp_path):
    """The league watch's games per opponent branch go on from the checkpoint's counts, not from zero."""
    whole = serial_pipeline(_config(tmp_path / 'whole'), seed=4, max_env_steps=512)
    first = serial_pipeline(_config(tmp_path / 'halves'), seed=4, max_env_steps=256)
    resumed = serial_pipeline(_config(tmp_path / 'halves'), seed=4, resume=True, max_env_steps=512)
    counts = {name: CheckpointManager.load(s['checkpoint'])['branch_games']
              for name, s in (('whole', whole), ('first', first), ('resumed', resumed))}
    total = {name: sum(n for branches in c.values() for n in branches.values()) for name, c in counts.items()}
    assert set(counts['first']) == {'naive_sp_0', 'naive_sp_1'} and total['first'] > 0
    for pid, branches in counts['first'].items():
        assert all(counts['resumed'][pid][branch] >= n for branch, n in branches.items())
    # Games in progress at the checkpoint are drawn again after the resume, so a resumed run counts at
    # least what the uninterrupted one did (and about half of that when the counts restarted at zero).
    assert total['resumed'] >= total['whole'] > total['first']
