"""``sparring eval`` and ``sparring report`` on a single-agent run (returns with standard errors, greedy and
sampled; a page with the return curve), and the distinct games a league evaluation saw."""
import json
import os
import sys

import pytest

from sparring.framework.cli import main
from sparring.framework.evaluate_player import evaluate_player, format_report, return_statistics
from tests.configs import fast_parallel

pytestmark = pytest.mark.usefixtures('one_torch_thread')


@pytest.fixture(autouse=True)
def own_module_path(monkeypatch):
    monkeypatch.setattr(sys, 'path', list(sys.path))
    monkeypatch.setenv('PYTHONPATH', os.environ.get('PYTHONPATH', ''))


@pytest.fixture(scope='module')
def cartpole_run(tmp_path_factory):
    from sparring.framework import serial_pipeline
    run = tmp_path_factory.mktemp('single') / 'cartpole'
    serial_pipeline(dict(exp_name=str(run), env=dict(type='gym', id='CartPole-v1', collector_env_num=2,
                                                     evaluator_env_num=1, n_evaluator_episodes=2),
                         policy=dict(type='ppo', model=dict(hidden_sizes=[8]), collect=dict(n_steps=16),
                                     learn=dict(epochs=1, num_minibatches=1)),
                         train=dict(max_env_steps=96, eval_every_iters=1, progress_bar=False, tensorboard=False)))
    return str(run)


def test_a_single_agent_run_writes_a_page_with_its_return_curve(cartpole_run, capsys):
    course = json.load(open(os.path.join(cartpole_run, 'report_data.json')))
    assert [e['env_steps'] for e in course['returns']] == [32, 64, 96]
    os.remove(os.path.join(cartpole_run, 'report.html'))
    assert main(['report', cartpole_run]) == 0
    assert capsys.readouterr().out.strip().endswith('report.html')
    page = open(os.path.join(cartpole_run, 'report.html')).read()
    assert 'Run report' in page and page.count('<circle') == 3


def test_eval_of_a_single_agent_gives_greedy_and_sampled_returns_with_errors(cartpole_run, capsys):
    assert main(['eval', cartpole_run, '--games', '3']) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith('3 episodes per mode, seed 0')
    assert out[1].startswith('  greedy: return ') and out[2].startswith('  sampled: return ')
    assert all('(standard error;' in line for line in out[1:])
    report = evaluate_player(cartpole_run, [], games=3, sampled=True)
    assert list(report['returns']) == ['sampled'] and report['returns']['sampled']['episodes'] == 3
    assert main(['eval', cartpole_run, '--against', 'bot:random']) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'no opponents' in err[0]


def test_return_statistics_use_the_sample_deviation():
    stats = return_statistics([1.0, 3.0])
    assert stats['mean'] == 2.0 and stats['std'] == pytest.approx(2 ** 0.5) and stats['se'] == pytest.approx(1.0)
    assert return_statistics([5.0])['se'] == 0.0


def test_greedy_evaluation_says_how_many_distinct_games_it_saw(tmp_path):
    from sparring.framework import serial_pipeline
    run = str(tmp_path / 'rps')
    serial_pipeline(dict(exp_name=run, env=dict(type='rock_paper_scissors', collector_env_num=4, evaluator_env_num=2,
                                                n_evaluator_episodes=2),
                         policy=dict(type='ppo', model=dict(hidden_sizes=[8]), collect=dict(n_steps=4)),
                         league=dict(type='one_vs_one'),
                         train=dict(max_env_steps=64, eval_every_iters=0, progress_bar=False, tensorboard=False)))
    greedy = evaluate_player(run, ['naive_sp_0_h0'], games=20)
    assert greedy['opponents']['naive_sp_0_h0']['distinct_games'] <= 2  # greedy against greedy: the same games
    assert '20: the games repeat' in format_report(greedy)
    sampled = evaluate_player(run, ['bot:random'], games=20, sampled=True)
    assert sampled['opponents']['bot:random']['distinct_games'] > 2


@pytest.mark.slow
def test_a_parallel_single_agent_run_stops_at_its_wall_budget_and_writes_its_page(tmp_path, capsys):
    path = tmp_path / 'cfg.py'
    config = dict(exp_name=str(tmp_path / 'par'),
                  env=dict(type='gym', id='CartPole-v1', collector_env_num=2, evaluator_env_num=1, n_evaluator_episodes=2),
                  policy=dict(type='ppo', model=dict(hidden_sizes=[8]), collect=dict(n_steps=16),
                              learn=dict(epochs=1, num_minibatches=1)),
                  train=dict(max_env_steps=10_000_000, eval_every_iters=0, progress_bar=False, tensorboard=False),
                  parallel=fast_parallel(worker_timeout_seconds=20.0))
    path.write_text(f'config = {config!r}\n')
    assert main(['train', str(path), '--mode', 'parallel', '--max-wall-seconds', '5']) == 0
    printed = capsys.readouterr().out
    summary = json.loads(printed[printed.index('{\n'):])
    assert summary['env_steps'] < 10_000_000 and 'eval_mean' in summary  # (none at all when the workers start late)
    assert json.load(open(tmp_path / 'par' / 'config.json'))['train']['max_wall_seconds'] == 5.0
    course = json.load(open(tmp_path / 'par' / 'report_data.json'))
    assert [e['env_steps'] for e in course['returns']] == [summary['env_steps']]
    assert 'time budget of 5 s spent' in (tmp_path / 'par' / 'log.txt').read_text()


def test_a_resumed_single_agent_course_keeps_its_past_and_drops_its_lost_future(tmp_path):
    from sparring.framework.report_page import write_return_report

    def entry(steps):
        return dict(env_steps=steps, seconds=1.0, mean=float(steps), std=0.0, episodes=2)
    run = str(tmp_path)
    write_return_report(run, [entry(0), entry(100), entry(200), entry(300)], 0, {})
    write_return_report(run, [entry(200), entry(250)], 200, {})  # resumed from the checkpoint at 200 steps
    course = json.load(open(os.path.join(run, 'report_data.json')))
    assert [e['env_steps'] for e in course['returns']] == [0, 100, 200, 250]
