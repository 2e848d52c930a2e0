"""``sparring eval RUN --perfect``: a connect-four player's error rate against perfect play, per group."""
import json

import pytest

from sparring.framework.cli import main


@pytest.fixture(scope='module')
def connect_four_run(tmp_path_factory):
    from sparring.framework import serial_pipeline
    run_dir = str(tmp_path_factory.mktemp('runs') / 'c4')
    serial_pipeline(dict(
        exp_name=run_dir, seed=3,
        env=dict(type='connect_four', collector_env_num=4, evaluator_env_num=2, n_evaluator_episodes=2),
        policy=dict(type='ppo', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8),
                    learn=dict(epochs=1, num_minibatches=1)),
        league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=2))),
        train=dict(max_env_steps=128, eval_every_iters=0, checkpoint_every_iters=0, progress_bar=False,
                   tensorboard=False)))
    return run_dir


def test_eval_perfect_reports_each_group_of_the_reported_set(connect_four_run, capsys, tmp_path, one_torch_thread):
    out = str(tmp_path / 'report.json')
    assert main(['eval', connect_four_run, '--perfect', '--out', out]) == 0
    text = capsys.readouterr().out
    assert 'against perfect play (the network alone), positions of connect_four_positions_2.npz (seed 2)' in text
    report = json.load(open(out))['perfect_play']
    groups = report['groups']
    assert groups['all']['positions'] == sum(g['positions'] for name, g in groups.items() if name != 'all')
    assert all(0.0 <= g['error_rate'] <= 1.0 and g['errors'] <= g['positions'] for g in groups.values())
    assert f'{groups["all"]["errors"]} of {groups["all"]["positions"]}' in text
    everything = groups['all']
    assert f'{everything["missed_wins"]} missed a win in one, {everything["missed_blocks"]} a block' in text


def test_eval_perfect_with_search_and_an_opponent(connect_four_run, capsys, one_torch_thread):
    assert main(['eval', connect_four_run, '--against', 'bot:random', '--games', '2', '--perfect',
                 '--search', '4']) == 0
    text = capsys.readouterr().out
    assert 'random' in text and 'against perfect play (with a search of 4 simulations)' in text


def test_eval_perfect_refuses_another_game_and_a_missing_file(trained_tictactoe, connect_four_run, capsys):
    run_dir, _ = trained_tictactoe
    assert main(['eval', run_dir, '--perfect']) == 2
    assert "the labelled positions are of connect four (env type 'connect_four')" in capsys.readouterr().err
    assert main(['eval', connect_four_run, '--perfect', '/no/such/positions.npz']) == 2
    assert "no positions file '/no/such/positions.npz'" in capsys.readouterr().err
