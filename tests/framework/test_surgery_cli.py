"""`sparring surgery` on real runs: the new checkpoint computes the old function, and training resumes.

A league run (Pong duel) gets a wider network and a new observation feature; its snapshots
from before the surgery keep their networks and still play, through adapters. A single-agent
run (CartPole) is widened by Net2Net splits.
"""
import json
import os

import numpy as np
import pytest
import torch

from sparring.framework import serial_pipeline
from sparring.worker.checkpoint import CheckpointManager
from sparring.framework.cli import main
from sparring.framework.surgery import REPORT_FILE, surgery
from sparring.league.base_league import build_league
from sparring.policy.feature_map import AdaptedPolicy, SurgeryError
from sparring.worker.env.battle import make_battle_env
from sparring.worker.policy_pool import ParamStore, PolicyPool

pytestmark = pytest.mark.usefixtures('one_torch_thread')
QUIET = dict(eval_every_iters=0, checkpoint_every_iters=0, progress_bar=False, tensorboard=False)


def pong_league(exp, hidden=16, extra_features=False, steps=512):
    return dict(
        exp_name=str(exp),
        env=dict(type='pong_duel', collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=4, points_to_win=1,
                 max_steps=60, extra_features=extra_features),
        policy=dict(type='ppo', model=dict(hidden_sizes=[hidden]), collect=dict(n_steps=16),
                    learn=dict(epochs=1, num_minibatches=2)),
        # Always a snapshot as opponent: every game after the surgery is against a historical player.
        league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=2, branch_probs=dict(pfsp=1.0)))),
        train=dict(max_env_steps=steps, **QUIET),
    )


def write_config(path, config) -> str:
    path.write_text(f'config = {config!r}\n')
    return str(path)


def payoff_games(checkpoint: str) -> dict:
    state = CheckpointManager.load(checkpoint)['league_state']
    league = build_league(state['config'])
    league.load_state_dict(state)
    games = {}
    for home, away, record in league.payoff.played_pairs():
        for pid in (home, away):
            games[pid] = games.get(pid, 0) + record['games']
    return games


@pytest.mark.slow
def test_league_surgery_widens_adds_a_feature_and_the_league_goes_on(tmp_path):
    old_dir, new_dir = tmp_path / 'old', tmp_path / 'new'
    first = serial_pipeline(pong_league(old_dir), seed=1)
    new_config = pong_league(new_dir, hidden=32, extra_features=True, steps=1024)
    assert main(['surgery', '--checkpoint', str(old_dir), '--config', write_config(tmp_path / 'new.py', new_config),
                 '--out', str(new_dir), '--record-steps', '16']) == 0

    report = json.loads((new_dir / REPORT_FILE).read_text())
    assert report['max_prob_change'] <= 1e-6 and report['max_value_change'] <= 1e-6
    assert 'obs: 7 -> 8: +1 at [7] (ball_intercept_y)' in report['changes']
    assert any(c.startswith('actor.0: 16 -> 32') for c in report['changes'])
    sets = report['players']['naive_sp_0']
    assert sets['old_env']['observations'] == sets['new_env']['observations'] == 16 * 16 * 2
    old_state, new_state = CheckpointManager.load(first['checkpoint']), CheckpointManager.load(report['new_checkpoint'])
    before_ids = {p['player_id'] for p in old_state['league_state']['players'] if p['kind'] == 'historical'}
    assert len(before_ids) >= 3
    # counters and the sampling RNG as they were: the player makes the very moves it would have made
    old_learner, new_learner = old_state['learners']['naive_sp_0'], new_state['learners']['naive_sp_0']
    assert torch.equal(new_learner['policy']['generator'], old_learner['policy']['generator'])
    assert new_learner['env_steps'] == old_learner['env_steps']
    assert torch.equal(new_state['rng']['torch'], old_state['rng']['torch'])

    # the store: snapshots keep their networks behind adapters; resets go to the transplanted init
    store = ParamStore(str(new_dir / 'params'))
    init, old_init = store.get('init'), store.get('init@before_surgery_1')
    assert tuple(init['params']['model.actor_trunk.0.weight'].shape) == (32, 8) and 'adapter' not in init
    assert tuple(old_init['params']['model.actor_trunk.0.weight'].shape) == (16, 7) and 'adapter' in old_init
    env = make_battle_env(new_config['env'], 4, 0)
    pool = PolicyPool(store, env.observation_space, env.action_space)
    snapshot = pool.get('naive_sp_0_h1')
    assert isinstance(snapshot, AdaptedPolicy)
    obs = env.reset().obs[:, 0]
    old_obs = obs[:, :7]
    np.testing.assert_allclose(snapshot.value(obs), snapshot.inner.value(old_obs), atol=1e-6)

    resumed = serial_pipeline(new_config, exp_name=str(new_dir), resume=True)
    assert resumed['env_steps'] == 1024 and resumed['rounds'] == 2 * first['rounds']
    log = (new_dir / 'log.txt').read_text()
    assert log.startswith('surgery: ') and 'discount horizon: gamma 0.99 -> 100 steps = 3.33 game seconds' in log
    # the payoff goes on: pre-surgery snapshots played more games after the surgery
    before, after = payoff_games(first['checkpoint']), payoff_games(resumed['checkpoint'])
    assert sum(after.get(pid, 0) - before.get(pid, 0) for pid in before_ids) > 0
    assert after['naive_sp_0'] > before['naive_sp_0']


def test_single_agent_surgery_splits_units_and_resumes(tmp_path):
    config = dict(exp_name=str(tmp_path / 'cp'), env=dict(type='gym', id='CartPole-v1', collector_env_num=4,
                                                          evaluator_env_num=2, n_evaluator_episodes=2,
                                                          manager=dict(type='base')),
                  policy=dict(type='ppo', obs_norm=True, model=dict(hidden_sizes=[8, 8]), collect=dict(n_steps=16),
                              learn=dict(epochs=1, num_minibatches=2)),
                  train=dict(max_env_steps=128, **QUIET))
    first = serial_pipeline(config, seed=0)
    wider = dict(config, policy=dict(config['policy'], model=dict(hidden_sizes=[20, 12])),
                 train=dict(config['train'], max_env_steps=256))
    report = surgery(first['checkpoint'], wider, str(tmp_path / 'cp_wide'), options=dict(widen='split'),
                     record_steps=8, log=lambda line: None)
    assert report['max_prob_change'] <= 1e-6 and report['max_value_change'] <= 1e-6
    assert report['changes'][0] == 'actor.0: 8 -> 20: 12 split'
    state = CheckpointManager.load(report['new_checkpoint'])
    assert state['collector']['env_steps'] == 128
    assert tuple(state['learner']['policy']['params']['model.actor_trunk.0.weight'].shape) == (20, 4)
    resumed = serial_pipeline(wider, exp_name=str(tmp_path / 'cp_wide'), resume=True)
    assert resumed['env_steps'] == 256 and resumed['train_iter'] == 4


@pytest.mark.slow
def test_surgery_refuses_to_overwrite_or_to_change_the_league(tmp_path):
    old_dir = tmp_path / 'old'
    serial_pipeline(pong_league(old_dir, steps=64), seed=0)
    quiet = dict(record_steps=2, log=lambda line: None)
    with pytest.raises(SurgeryError, match="run's own directory"):
        surgery(str(old_dir), pong_league(old_dir), str(old_dir), **quiet)
    changed = pong_league(tmp_path / 'x')
    changed['league']['active_players'] = dict(naive_sp=2)
    with pytest.raises(SurgeryError, match='league.active_players'):
        surgery(str(old_dir), changed, str(tmp_path / 'x'), **quiet)
    with pytest.raises(FileNotFoundError, match='not found'):
        surgery(str(tmp_path / 'nowhere.pt'), pong_league(tmp_path / 'y'), str(tmp_path / 'y'), **quiet)
    surgery(str(old_dir), pong_league(tmp_path / 'y', hidden=24), str(tmp_path / 'y'), **quiet)
    with pytest.raises(FileExistsError, match='already holds a checkpoint'):
        surgery(str(old_dir), pong_league(tmp_path / 'y', hidden=24), str(tmp_path / 'y'), **quiet)
    assert os.path.exists(tmp_path / 'y' / 'config.json')  # the first surgery's run is intact
