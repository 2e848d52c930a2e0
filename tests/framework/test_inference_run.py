"""A tic-tac-toe league whose collectors act through a forward-pass worker: it trains and stops cleanly, and a
forward-pass worker SIGKILLed mid-run is restarted while its collectors resend, with no game lost or counted
twice; the probabilities its networks give equal the collectors' own on the same observations. Leagues of games
whose seats have roles (pursuit, and OpenSpiel's sheriff) train through one too, each role's networks served there."""
import json
import os
import signal

import numpy as np
import pytest

from sparring.config import compile_config
from sparring.config.registry import POLICY_REGISTRY
from sparring.framework.cli import load_config_file
from sparring.worker.inference_forward import forward_rows, probabilities_from_forward
from sparring.worker.remote.inference import inference_addresses
from sparring.worker.remote.wire import arrays_to_params
from sparring.worker.run_kind import run_kind
from tests.configs import fast_parallel
from tests.framework.test_parallel_run import _check_games_counted_once
from tests.framework.test_roles_parallel import ROOT, _config as role_config
from tests.parallel_runs import parallel_run, to_the_end, wait_for

pytestmark = pytest.mark.slow  # a parallel run of five processes, one of them killed



def _config(exp_name):
    return dict(
        exp_name=str(exp_name),
        env=dict(type='tictactoe', collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=4),
        policy=dict(type='ppo', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8),
                    learn=dict(epochs=1, num_minibatches=1)),
        league=dict(type='one_vs_one', active_players=dict(naive_sp=1), payoff=dict(decay=1.0),
                    players=dict(naive_sp=dict(one_phase_step=4))),
        battle=dict(eval_opponents=['bot:random']),
        train=dict(max_env_steps=2048, eval_every_iters=0, checkpoint_every_iters=0, progress_bar=False,
                   tensorboard=False),
        parallel=dict(collectors=2, evaluators=0, heartbeat_seconds=0.5, worker_timeout_seconds=30.0,
                      request_timeout_seconds=2.0, drain_timeout_seconds=3.0, shutdown_seconds=30.0, max_restarts=2,
                      inference=dict(workers=1, max_batch=64, max_wait_ms=2.0, double_buffer=True)),
    )


def test_a_league_acting_through_a_killed_and_restarted_forward_pass_worker_loses_and_doubles_nothing(tmp_path):
    exp = tmp_path / 'inference'
    with parallel_run(_config(exp)) as run:
        commander = run.commander
        wait_for(lambda: commander.sessions.stats.get('inference-0', {}).get('forward_passes', 0) > 20
              and commander.coordinator.counters['chunks'] >= 4, 'forward passes', run.step)
        first_address = inference_addresses(str(exp))
        os.kill(run.launcher.processes['inference-0'].pid, signal.SIGKILL)
        summary = to_the_end(run)
    assert summary['restarts'] == {'inference-0': 1}
    assert summary['env_steps'] >= 2048
    assert inference_addresses(str(exp)) != first_address  # the restarted worker listens elsewhere, and says so
    stats = summary['worker_stats']
    assert stats['inference-0']['forward_passes'] > 0 and stats['inference-0']['malformed'] == 0
    assert sum(s.get('forward_resends', 0) for w, s in stats.items() if w.startswith('collector')) >= 1
    # every game reported once: the journal's accepted jobs are distinct, none also abandoned, and the payoff
    # holds exactly them
    with open(exp / 'commander' / 'journal.jsonl') as f:
        entries = [json.loads(line) for line in f][1:]
    recorded = [job for e in entries if e['op'] == 'games' for _, ids, _ in e['games'] for job in ids]
    abandoned = {job for e in entries if e['op'] == 'abandon' for job in e['jobs']}
    assert len(recorded) == len(set(recorded)) and not abandoned & set(recorded)
    league = run.commander.coordinator.league
    payoff_games = sum(r['games'] for home, away, r in league.payoff.played_pairs()
                       if league.get_player(home).kind == 'active' or league.get_player(away).kind == 'active')
    eval_games = sum(len(o) for e in entries if e['op'] == 'eval' for o in e['results'].values())
    assert payoff_games + sum(p.self_play_games for p in league.active_players) == len(recorded) + eval_games
    assert summary['games'] == len(recorded)


def test_the_forward_half_gives_the_acting_policys_probabilities(tmp_path):
    """The figures a forward-pass worker sends back make the same distribution as the policy's own act."""
    cfg = compile_config(dict(_config(tmp_path / 'x'), league=dict(type='one_vs_one')), save=False)
    obs_space, act_space = run_kind(cfg).spaces()
    policy = POLICY_REGISTRY.get('ppo')(cfg.policy, obs_space, act_space, seed=5)
    rng = np.random.default_rng(0)
    policy.set_params(arrays_to_params({k: v.numpy() + rng.normal(0, 0.1, v.shape).astype(np.float32)
                                        for k, v in policy.get_params().items()}), 3)
    obs = rng.integers(-1, 2, size=(32, *obs_space.shape)).astype(obs_space.dtype)
    mask = rng.random((32, act_space.n)) < 0.6
    mask[:, 4] = True
    np.testing.assert_allclose(probabilities_from_forward(forward_rows(policy, obs), mask),
                               policy.action_probabilities(obs, mask), atol=1e-5)


def _pursuit(exp):
    """Pursuit, Box moves, observations of 6 and 8 numbers; a double-buffered collector (two halves, each with its own
    policies of both roles)."""
    config = role_config(exp, max_env_steps=1536)
    config['parallel'].update(evaluators=0, inference=dict(workers=1, max_batch=64, max_wait_ms=2.0,
                                                           double_buffer=True))
    config['train']['eval_every_iters'] = 0
    return config, ('naive_sp_pursuer_0', 'naive_sp_evader_0')


def _sheriff(exp):
    """OpenSpiel's sheriff declared with roles: turn-based, masked moves, both roles with the game's common spaces."""
    pytest.importorskip('pyspiel')
    config = load_config_file(os.path.join(ROOT, 'dizoo', 'openspiel', 'config', 'sheriff_league.py'))
    config.update(exp_name=str(exp), battle=dict(config['battle'], exact_analysis=False),
                  train=dict(max_env_steps=1024, eval_every_iters=0, checkpoint_every_iters=0, progress_bar=False,
                             tensorboard=False),
                  parallel=fast_parallel(inference=dict(workers=1, max_batch=64, max_wait_ms=2.0)))
    config['env'].update(collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=4)
    config['league']['payoff'] = dict(decay=1.0)  # every game counted whole: the payoff adds up to the journal
    config['policy'].update(collect=dict(n_steps=16), learn=dict(config['policy']['learn'], epochs=1,
                                                                   num_minibatches=1))
    return config, ('naive_sp_smuggler_0', 'naive_sp_sheriff_0')


@pytest.mark.parametrize('game', [_pursuit, _sheriff], ids=['pursuit', 'sheriff'])
def test_a_league_of_roles_acts_through_a_forward_pass_worker_serving_each_roles_networks(tmp_path, game):
    """Each role's networks on the forward-pass worker: every request served there (none refused, no collector
    acting itself), both roles trained, every game counted once and between the two roles."""
    exp = tmp_path / 'roles'
    config, players = game(exp)
    with parallel_run(config) as run:
        summary = to_the_end(run)
    assert summary['env_steps'] >= run.cfg.train.max_env_steps and not summary['restarts']
    served = summary['worker_stats']['inference-0']
    assert served['forward_passes'] > 0 and served['malformed'] == 0 and served['version_gone'] == 0
    collector = summary['worker_stats']['collector-0']
    assert collector['forward_round_trips'] > 0
    assert collector['forward_refusals'] == 0 and collector['local_forwards'] == 0
    assert all(summary['train_iterations'][player] >= 1 for player in players)
    league = run.commander.coordinator.league
    recorded, _ = _check_games_counted_once(str(exp), league)
    assert summary['games'] == len(recorded) > 0
    for home_id, away_id, _ in league.payoff.played_pairs():
        assert league.get_player(home_id).category != league.get_player(away_id).category, (home_id, away_id)
