"""A league of three-player Kuhn poker in parallel mode, with real processes: collectors seat a tuple of opponents per
job and report rankings, the evaluator worker reports rated rankings, the commander measures NashConv; a collector
and the learner SIGKILLed mid-run lose nothing and count no game twice. With a forward-pass worker (a single or a
double-buffered collector) every network acts there and every game is counted once."""
import copy
import os
import signal

import numpy as np
import pytest

from sparring.league.multiseat import pairwise_games
from tests.configs import fast_parallel
from tests.framework.test_parallel_run import _journal

pytest.importorskip('pyspiel')
from sparring.dizoo.openspiel.config.kuhn3_league import config as KUHN3
from tests.parallel_runs import alive, parallel_run, to_the_end, wait_for

pytestmark = pytest.mark.slow  # parallel runs of many processes, killed


def _config(exp, max_env_steps):
    config = copy.deepcopy(KUHN3)
    config.update(exp_name=str(exp))
    config['env'].update(collector_env_num=8, evaluator_env_num=4, n_evaluator_episodes=8)
    config['policy']['collect'].update(n_steps=8)
    config['league']['players']['naive_sp'].update(one_phase_step=2)
    config['league']['payoff'] = dict(decay=1.0)  # whole games, to count them
    config['train'].update(max_env_steps=max_env_steps, max_wall_seconds=0.0, eval_every_iters=4,
                           checkpoint_every_iters=2, tensorboard=False, progress_bar=False)
    config['parallel'] = fast_parallel(collectors=2, evaluators=1, worker_timeout_seconds=30.0, max_restarts=2)
    return config


def _counted_once(exp, league):
    """Every ranked game the journal accepted is in the league once: job ids recorded once and never also abandoned,
    and the payoff's games and the self-play games are exactly those of the journal's rankings."""
    entries = _journal(str(exp))
    recorded = [job for e in entries if e['op'] == 'ranked_games' for _, ids, _, _ in e['games'] for job in ids]
    abandoned = {job for e in entries if e['op'] == 'abandon' for job in e['jobs']}
    assert len(recorded) == len(set(recorded)) and not abandoned & set(recorded)
    assert not [e for e in entries if e['op'] in ('games', 'eval')]  # no two-seat operation in a game of three
    pairs = self_play = 0
    for entry in entries:
        if entry['op'] in ('ranked_games', 'ranked_eval'):
            for player_ids, _, rankings, teams in entry['games']:
                index = [league.get_player(pid).index for pid in player_ids]
                pairs += sum(len(codes) for codes in pairwise_games(index, np.array(rankings), teams).values())
                twice = {pid for pid in player_ids if player_ids.count(pid) > 1}
                self_play += len(rankings) * sum(league.get_player(pid).kind == 'active' for pid in twice)
    assert sum(r['games'] for _, _, r in league.payoff.played_pairs()) == pairs
    assert sum(p.self_play_games for p in league.active_players) == self_play
    return recorded, abandoned


def test_a_three_seat_league_trains_in_parallel_and_killed_workers_count_no_game_twice(tmp_path):
    exp = tmp_path / 'kuhn3'
    # saved as parallel_pipeline saves it: the run's directory opens for load_player
    with parallel_run(_config(exp, max_env_steps=64 * 40), save_to=exp) as run:
        commander = run.commander
        wait_for(lambda: commander.coordinator.counters['chunks'] >= 4 and any(
            w.worker_id == 'collector-0' and w.jobs for w in commander.sessions.workers.values()), 'the first chunks',
            step=run.step)
        victim = run.launcher.processes['collector-0'].pid
        os.kill(victim, signal.SIGKILL)
        ckpt = exp / 'workers' / 'learner-naive_sp_0' / 'ckpt'
        wait_for(lambda: ckpt.exists() and any(ckpt.iterdir()), 'a learner checkpoint', step=run.step)
        os.kill(run.launcher.processes['learner-naive_sp_0'].pid, signal.SIGKILL)
        summary = to_the_end(run)
    assert not [pid for pid in run.launcher.all_pids if alive(pid)], 'worker processes outlived the run'
    assert summary['restarts'] == {'collector-0': 1, 'learner-naive_sp_0': 1}
    assert summary['env_steps'] >= 64 * 40
    league = run.commander.coordinator.league
    recorded, abandoned = _counted_once(exp, league)
    assert abandoned, 'the killed collector held unfinished games'
    assert summary['games'] == len(recorded) > 0
    report = summary['eval']['naive_sp_0']  # the evaluator worker's rankings, rated
    assert set(report['ahead']) == {'random'} and report['games'] == 8
    assert league.payoff.totals('random')['games'] > 0
    exact = summary['exact']  # NashConv of the published network, its meta-strategy and recent average
    assert 0.0 < exact['nash_conv']['naive_sp_0'] < 2.0625 + 1e-9 and exact['meta_nash_conv'] > 0.0
    # the trained player loads from the parallel run's directory and plays the three-player game
    from sparring import load_player
    from sparring.dizoo.openspiel.exploitability import policy_nash_conv
    assert 0.0 < policy_nash_conv('kuhn_poker', load_player(str(exp)), game_params=dict(players=3)) < 2.0625 + 1e-9


@pytest.mark.parametrize('double_buffer', [False, True], ids=['single', 'double_buffered'])
def test_a_three_seat_league_acts_through_a_forward_pass_worker(tmp_path, double_buffer):
    """The home network and every opponent network of a step on the forward-pass worker (one wave a step): every
    request served there, none refused, no collector acting itself, the player trained, every game counted once."""
    exp = tmp_path / 'kuhn3_forward'
    config = _config(exp, max_env_steps=64 * 16)
    config['train'].update(eval_every_iters=0, checkpoint_every_iters=0)
    config['parallel'] = fast_parallel(collectors=1, evaluators=0, worker_timeout_seconds=30.0, inference=dict(
        workers=1, max_batch=64, max_wait_ms=2.0, double_buffer=double_buffer))
    with parallel_run(config) as run:
        summary = to_the_end(run)
    assert summary['env_steps'] >= 64 * 16 and not summary['restarts']
    served = summary['worker_stats']['inference-0']
    assert served['forward_passes'] > 0 and served['malformed'] == 0 and served['version_gone'] == 0
    collector = summary['worker_stats']['collector-0']
    assert collector['forward_round_trips'] > 0
    assert collector['forward_refusals'] == 0 and collector['local_forwards'] == 0
    assert summary['train_iterations']['naive_sp_0'] >= 1
    recorded, _ = _counted_once(exp, run.commander.coordinator.league)  # jobs in hand at the end are abandoned
    assert summary['games'] == len(recorded) > 0
