"""Continuous Pong duel (paddle velocities in [-1, 1]): the same game as the discrete one, its bots, a league
on it with snapshots, resets and PFSP, the export of its Gaussian player, and ``play`` refusing it."""
import numpy as np
import pytest
import torch
from gymnasium import spaces

from sparring.config import compile_config, compile_section
from sparring.config.registry import BOT_REGISTRY, POLICY_REGISTRY
from sparring.config.schema import ConfigError
from sparring.dizoo.pong_duel.pong_duel_env import DOWN, OBS_INDEX, STAY, UP
from sparring.framework import serial_pipeline
from sparring.framework.export import export_player, export_policy
from sparring.framework.play import play_game
from sparring.framework.player_loader import TrainedRun
from sparring.framework.run_setup import complete_league_config
from sparring.framework.serial_run import SerialRun
from sparring.worker.checkpoint import CheckpointManager
from sparring.worker.env.battle import make_battle_env

VELOCITY_OF = {STAY: 0.0, UP: 1.0, DOWN: -1.0}


def test_full_velocities_play_exactly_the_discrete_game():
    """Velocity 1 is "up", -1 "down", 0 "stay": from one seed the two variants play the same game."""
    discrete = make_battle_env(dict(type='pong_duel'), 8, 7)
    continuous = make_battle_env(dict(type='pong_duel', continuous=True), 8, 7)
    assert continuous.action_space == spaces.Box(-1.0, 1.0, (1,), np.float32)
    a, b = discrete.reset(), continuous.reset()
    rng = np.random.default_rng(0)
    for _ in range(400):
        moves = rng.integers(0, 3, (8, 2))
        velocities = np.vectorize(VELOCITY_OF.get)(moves)[..., None]
        a, b = discrete.step(moves), continuous.step(velocities)
        np.testing.assert_array_equal(a.obs, b.obs)
        np.testing.assert_array_equal(a.reward, b.reward)
        np.testing.assert_array_equal(a.result, b.result)
    assert (a.terminated | a.truncated).any() or discrete.score.any()


def test_velocities_are_clipped_and_scaled_by_the_paddle_speed():
    env = make_battle_env(dict(type='pong_duel', continuous=True, paddle_speed=0.02), 1, 0)
    env.reset()
    env.step(np.array([[[0.5], [-9.0]]]))
    assert env.paddle_y[0].tolist() == pytest.approx([0.5 + 0.5 * 0.02, 0.5 - 0.02])


def test_the_tracker_gives_a_velocity_proportional_to_the_gap_and_beats_random(match):
    obs_space = spaces.Box(-1.0, 1.0, (7,), np.float32)
    box = spaces.Box(-1.0, 1.0, (1,), np.float32)
    tracker = BOT_REGISTRY.get('pong_duel_heuristic')({'reaction': 1.0, 'dead_zone': 0.0}, obs_space, box)
    obs = np.zeros((3, 7), np.float32)
    obs[:, OBS_INDEX['ball_y']] = [0.04, -0.5, 0.9]
    action = tracker.act(obs).action
    assert action.dtype == np.float32 and action.shape == (3, 1)
    assert action[:, 0].tolist() == pytest.approx([12.5 * 0.04, -1.0, 1.0])
    random = BOT_REGISTRY.get('random')({}, obs_space, box, seed=3).act(np.zeros((500, 7))).action
    assert random.shape == (500, 1) and -1.0 <= random.min() < -0.9 and 0.9 < random.max() <= 1.0
    continuous = dict(continuous=True)
    as_left = match('pong_duel', ('pong_duel_heuristic', 'random'), 32, seed=3, env_cfg=continuous)
    as_right = -match('pong_duel', ('random', 'pong_duel_heuristic'), 32, seed=4, env_cfg=continuous)
    assert (np.concatenate([as_left, as_right]) == 1).mean() >= 0.9
    with pytest.raises(ValueError, match=r'expected Pong duel\'s \(7,\) or longer, and 3 actions or a velocity'):
        BOT_REGISTRY.get('pong_duel_heuristic')({}, obs_space, spaces.Box(-1.0, 1.0, (2,), np.float32))
    with pytest.raises(ValueError, match='is unbounded; expected finite low and high'):
        BOT_REGISTRY.get('random')({}, obs_space, spaces.Box(-np.inf, np.inf, (1,), np.float32))


def _league_config(exp_name):
    return dict(
        exp_name=str(exp_name),
        env=dict(type='pong_duel', continuous=True, points_to_win=1, max_steps=80, collector_env_num=4,
                 evaluator_env_num=4, n_evaluator_episodes=4),
        policy=dict(type='ppo', model=dict(hidden_sizes=[16]), collect=dict(n_steps=16),
                    learn=dict(epochs=1, num_minibatches=2)),
        # PFSP over the snapshots and the bots, a reset to the initial parameters after every snapshot
        league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=2, mutate_prob=1.0,
                                                                 branch_probs=dict(pfsp=0.7, sp=0.3)))),
        train=dict(max_env_steps=640, eval_every_iters=5, checkpoint_every_iters=5, progress_bar=False,
                   tensorboard=False),
    )


@pytest.fixture(scope='module')
def continuous_run(tmp_path_factory):
    exp = tmp_path_factory.mktemp('continuous_pong') / 'run'
    return exp, serial_pipeline(_league_config(exp), seed=0)


@pytest.mark.slow
def test_a_ppo_league_trains_on_continuous_pong_with_snapshots_resets_and_pfsp(continuous_run):
    exp, summary = continuous_run
    assert summary['env_steps'] == 640 and summary['rounds'] == 10
    report = summary['eval']['naive_sp_0']
    assert set(report) == {'random', 'pong_duel_heuristic'} and all(r['games'] == 4 for r in report.values())
    # The league resumes from its checkpoint and trains on.
    cfg = compile_config(_league_config(exp), seed=0, save=False)
    complete_league_config(cfg)
    run = SerialRun(cfg, CheckpointManager.load(summary['checkpoint']))
    try:
        league = run.league
        player = league.get_player('naive_sp_0')
        snapshots = [p.player_id for p in league.historical_players if p.player_id.startswith('naive_sp_0_h')]
        assert len(snapshots) >= 3 and player.reset_count == len(snapshots) - 1  # a reset after every snapshot
        opponents = {away for home, away, record in league.payoff.played_pairs() if record['games'] > 0} | \
            {home for home, away, record in league.payoff.played_pairs() if record['games'] > 0}
        assert 'random' in opponents and len(opponents & set(snapshots)) >= 2  # PFSP drew bots and snapshots
        steps = run.env_steps
        run.train_round()
        assert run.env_steps == steps + 64
    finally:
        run.close()


def _exported_gaussian_agrees(policy, path):
    env = make_battle_env(dict(type='pong_duel', continuous=True), 6, 2)
    obs = env.reset().obs[:, 0]
    module = torch.jit.load(str(path))
    with torch.no_grad():
        mean, log_std, value, action = (t.numpy() for t in module(torch.as_tensor(obs)))
    np.testing.assert_allclose(mean, policy.act(obs, deterministic=True).action, atol=1e-5)
    np.testing.assert_allclose(log_std, np.broadcast_to(policy.model.log_std.detach().numpy(), (6, 1)), atol=1e-6)
    np.testing.assert_allclose(value, policy.value(obs), atol=1e-5)
    np.testing.assert_allclose(action, np.clip(mean, -1.0, 1.0), atol=1e-6)  # what the env takes


def test_a_box_player_exports_its_gaussian(tmp_path):
    env = make_battle_env(dict(type='pong_duel', continuous=True), 1, 0)
    cfg = compile_section('policy', dict(type='ppo', model=dict(hidden_sizes=[16]), obs_norm=True))
    policy = POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=0)
    policy.net.normalizer.update(torch.randn(64, 7) * 0.3 + 0.2)  # the normaliser goes into the file too
    out = tmp_path / 'player.pt'
    info = export_policy(policy, str(out), 'torchscript')
    assert info['inputs'] == ['obs'] and info['outputs'] == ['action_mean', 'action_log_std', 'value', 'action']
    _exported_gaussian_agrees(policy, out)


def test_a_box_players_exported_action_is_inside_the_bounds_its_mean_is_not(tmp_path):
    env = make_battle_env(dict(type='pong_duel', continuous=True), 1, 0)
    cfg = compile_section('policy', dict(type='ppo', model=dict(hidden_sizes=[16])))
    policy = POLICY_REGISTRY.get('ppo')(cfg, env.observation_space, env.action_space, seed=0)
    with torch.no_grad():
        policy.model.policy_head.bias.fill_(4.46)  # a trained mean beyond the paddle's top speed
    info = export_policy(policy, str(tmp_path / 'player.pt'), 'torchscript')
    obs = torch.zeros(3, 7)
    with torch.no_grad():
        outputs = dict(zip(info['outputs'], torch.jit.load(info['path'])(obs)))
    assert (outputs['action_mean'] > 1.0).all() and (outputs['action'] == 1.0).all()


@pytest.mark.slow
def test_the_trained_box_player_of_a_league_run_exports(continuous_run, tmp_path):
    exp, _ = continuous_run
    out = tmp_path / 'player.pt'
    info = export_player(str(exp), str(out), 'torchscript')
    assert info['player'] == 'naive_sp_0' and info['outputs'] == ['action_mean', 'action_log_std', 'value', 'action']
    _exported_gaussian_agrees(TrainedRun(str(exp)).policy(info['player']), out)


@pytest.mark.slow
def test_play_refuses_the_continuous_game_with_one_line(continuous_run):
    exp, _ = continuous_run
    with pytest.raises(ConfigError) as err:
        play_game(str(exp), read=lambda prompt: 'q', write=lambda text: None)
    assert "env 'pong_duel' has continuous actions (Box(-1.0, 1.0, (1,), float32))" in str(err.value)
    assert '\n' not in str(err.value)


@pytest.mark.slow
def test_surgery_widens_the_continuous_league_and_keeps_its_gaussian(continuous_run, tmp_path):
    from sparring.framework.surgery import surgery
    exp, summary = continuous_run
    wider = _league_config(tmp_path / 'wide')
    wider['policy'] = dict(wider['policy'], model=dict(hidden_sizes=[24]))
    report = surgery(summary['checkpoint'], wider, str(tmp_path / 'wide'), options=dict(widen='split'),
                     record_steps=8, log=lambda line: None)
    # The Gaussian's mean and the value are unchanged on the recorded observations (no masks: Box actions).
    assert report['max_value_change'] <= 1e-5
    assert report['changes'][0].startswith('actor.0: 16 -> 24')
