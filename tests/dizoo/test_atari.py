"""The Atari wrapper stack, checked exactly on a scripted fake emulator, and the 'atari' env type.

The fake stands in for ALE: frame k of game g is a fixed pseudo-random RGB image, and lives,
rewards and game over happen at scripted frames, so every wrapper's output can be computed
independently here. One test plays real Breakout when ale-py is installed.
"""
import sys

import gymnasium
import numpy as np
import pytest

from sparring.config.schema import ConfigError
from sparring.dizoo.atari.wrappers import (EpisodicLife, FireOnLifeStart, GreyResize, MaxAndSkip, NoopReset,
                                           area_weights, wrap_atari)
from sparring.framework import serial_pipeline
from sparring.worker.env import EnvError, make_env
from sparring.worker.env.gym_env import evaluator_env_config

pytestmark = pytest.mark.usefixtures('one_torch_thread')
NOOP, FIRE, RIGHT, LEFT = range(4)
SHAPE = (210, 160, 3)


class FakeAle(gymnasium.Env):
    """A scripted emulator showing every frame; ``actions`` records every action it was stepped with."""

    metadata = {'render_modes': []}

    def __init__(self, lives=3, life_loss_frames=(), game_over_frame=None, rewards=None, meanings=None,
                 frameskip=1):
        self.observation_space = gymnasium.spaces.Box(0, 255, SHAPE, np.uint8)
        self.action_space = gymnasium.spaces.Discrete(4)
        self.start_lives, self.life_loss_frames = lives, set(life_loss_frames)
        self.game_over_frame, self.rewards = game_over_frame, dict(rewards or {})
        self.meanings = meanings or ['NOOP', 'FIRE', 'RIGHT', 'LEFT']
        self.actions, self.games, self.k, self.lives = [], 0, 0, lives

    def get_action_meanings(self):
        return list(self.meanings)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.games += 1
        self.k, self.lives = 0, self.start_lives
        return frame(self.games, 0), {'lives': self.lives}

    def step(self, action):
        self.actions.append(int(action))
        self.k += 1
        if self.k in self.life_loss_frames:
            self.lives -= 1
        game_over = self.lives == 0 or self.k == self.game_over_frame
        return frame(self.games, self.k), self.rewards.get(self.k, 0.0), game_over, False, {'lives': self.lives}


def frame(game: int, k: int) -> np.ndarray:
    return np.random.default_rng([game, k]).integers(0, 256, SHAPE, dtype=np.uint8)


gymnasium.register('SparringFakeAle-v0', entry_point=FakeAle,
                   kwargs=dict(lives=2, life_loss_frames=(120,), game_over_frame=200,
                                                   rewards={60: 3.0, 100: 4.0, 150: 1.0}))
gymnasium.register('SparringFakeAleSkip-v0', entry_point=FakeAle, kwargs=dict(frameskip=4))


def reference_grey_resize(rgb: np.ndarray, size: int) -> np.ndarray:
    """Area resampling written out cell by cell: each output pixel averages the luma it covers."""
    luma = rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    height, width = luma.shape
    sy, sx = height / size, width / size
    out = np.zeros((size, size))
    for i in range(size):
        for a in range(int(i * sy), min(height, int(np.ceil((i + 1) * sy)))):
            wy = min((i + 1) * sy, a + 1) - max(i * sy, a)
            for j in range(size):
                for b in range(int(j * sx), min(width, int(np.ceil((j + 1) * sx)))):
                    wx = min((j + 1) * sx, b + 1) - max(j * sx, b)
                    out[i, j] += wy * wx * luma[a, b]
    return np.rint(out / (sy * sx)).astype(np.uint8)


def grey_resize(rgb: np.ndarray, size: int = 84) -> np.ndarray:
    return GreyResize(FakeAle(), size).observation(rgb)


# -- grey-scale and resize ---------------------------------------------------------------------

def test_area_weights_by_hand():
    np.testing.assert_allclose(area_weights(4, 2), [[.5, .5, 0, 0], [0, 0, .5, .5]])
    np.testing.assert_allclose(area_weights(5, 2), [[.4, .4, .2, 0, 0], [0, 0, .2, .4, .4]], atol=1e-7)
    for src in (210, 160):
        np.testing.assert_allclose(area_weights(src, 84).sum(axis=1), 1.0, atol=1e-6)


def test_grey_uses_bt601_luma_on_pure_colours():
    for rgb, expected in (((255, 0, 0), 76), ((0, 255, 0), 150), ((0, 0, 255), 29), ((255, 255, 255), 255),
                          ((0, 0, 0), 0), ((10, 200, 30), 124)):
        out = grey_resize(np.broadcast_to(np.array(rgb, np.uint8), SHAPE).copy())
        assert out.shape == (84, 84) and out.dtype == np.uint8
        assert (out == expected).all(), (rgb, np.unique(out))


def test_resize_by_an_integer_factor_averages_blocks():
    env = FakeAle()
    env.observation_space = gymnasium.spaces.Box(0, 255, (4, 6), np.uint8)  # grey frames pass unconverted
    img = np.array([[0, 2, 4, 6, 8, 10], [2, 4, 6, 8, 10, 12], [100, 100, 0, 0, 255, 255],
                    [100, 101, 0, 1, 255, 255]], np.uint8)
    out = GreyResize(env, 2).observation(img)
    np.testing.assert_array_equal(out, [[3, 9], [67, 170]])  # means of 2x3 blocks: 401/6 and 1021/6 round


def test_resize_of_a_real_sized_frame_matches_the_cell_by_cell_definition():
    rgb = frame(7, 3)
    expected = reference_grey_resize(rgb, 84)
    out = grey_resize(rgb)
    diff = out.astype(int) - expected
    # float32 against float64 may round an exact .5 differently; nothing else may differ.
    assert np.abs(diff).max() <= 1 and np.count_nonzero(diff) <= 5


def test_grey_resize_rejects_frames_it_cannot_read():
    env = FakeAle()
    env.observation_space = gymnasium.spaces.Box(0, 255, (210, 160, 4), np.uint8)
    with pytest.raises(EnvError, match=r'\[H, W, 3\]'):
        GreyResize(env)


# -- frame skip, no-op reset, episodic life, FIRE, reward sign ---------------------------------

def test_frame_skip_repeats_the_action_sums_rewards_and_maxes_the_last_two_frames():
    fake = FakeAle(rewards={2: 1.0, 4: 2.5, 5: 7.0}, game_over_frame=6)
    env = MaxAndSkip(fake, 4)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs, frame(1, 0))
    obs, reward, terminated, truncated, info = env.step(RIGHT)
    assert fake.actions == [RIGHT] * 4 and reward == 3.5 and not terminated
    np.testing.assert_array_equal(obs, np.maximum(frame(1, 3), frame(1, 4)))
    assert (obs > frame(1, 4)).any() and (obs > frame(1, 3)).any()  # both frames contribute
    # The game ends on the 2nd frame of the next step: the step stops there, max of frames 5 and 6.
    obs, reward, terminated, truncated, info = env.step(LEFT)
    assert fake.actions == [RIGHT] * 4 + [LEFT] * 2 and reward == 7.0 and terminated
    np.testing.assert_array_equal(obs, np.maximum(frame(1, 5), frame(1, 6)))


def test_noop_reset_plays_a_seeded_random_number_of_noops():
    counts = []
    for seed in range(40):
        fake = FakeAle()
        obs, _ = NoopReset(fake, noop_max=30).reset(seed=seed)
        expected = int(gymnasium.utils.seeding.np_random(seed)[0].integers(1, 31))
        assert fake.actions == [NOOP] * expected
        np.testing.assert_array_equal(obs, frame(1, expected))
        counts.append(expected)
    assert min(counts) >= 1 and max(counts) <= 30 and len(set(counts)) > 10
    fake = FakeAle()
    NoopReset(fake, noop_max=0).reset(seed=0)
    assert fake.actions == []


def test_noop_reset_starts_again_if_the_game_ends_during_the_noops():
    fake = FakeAle(game_over_frame=1)
    NoopReset(fake, noop_max=30).reset(seed=0)
    assert fake.games >= 2


def test_episodic_life_ends_the_episode_at_a_lost_life_but_not_the_game():
    fake = FakeAle(lives=2, life_loss_frames=(6, 14))
    env = EpisodicLife(MaxAndSkip(fake, 4))
    env.reset(seed=0)
    assert env.step(RIGHT)[2] is False
    obs, reward, terminated, truncated, info = env.step(RIGHT)  # frames 5-8, a life lost at 6
    assert terminated and info['lives'] == 1 and fake.games == 1
    obs, info = env.reset()  # the game goes on with one no-op step, no emulator reset
    assert fake.games == 1 and fake.actions[-4:] == [NOOP] * 4 and info['lives'] == 1
    np.testing.assert_array_equal(obs, np.maximum(frame(1, 11), frame(1, 12)))
    obs, reward, terminated, truncated, info = env.step(RIGHT)  # frames 13-16: the last life lost
    assert terminated and info['lives'] == 0
    env.reset()
    assert fake.games == 2 and fake.k == 0  # game over: a real reset


def test_episodic_life_needs_lives_in_info():
    class NoLives(FakeAle):
        def step(self, action):
            obs, reward, terminated, truncated, _ = super().step(action)
            return obs, reward, terminated, truncated, {}

    env = EpisodicLife(NoLives())
    env.reset()
    with pytest.raises(EnvError, match='info\\["lives"\\]'):
        env.step(NOOP)


def test_fire_after_reset_and_within_the_step_that_lost_a_life_when_playing_whole_games():
    fake = FakeAle(lives=3, life_loss_frames=(7,), rewards={8: 2.0, 10: 1.0})
    env = FireOnLifeStart(MaxAndSkip(fake, 4), FIRE)
    env.reset(seed=0)
    assert fake.actions == [FIRE] * 4
    obs, reward, terminated, truncated, info = env.step(LEFT)  # frames 5-8 lose a life; FIRE plays 9-12
    assert fake.actions == [FIRE] * 4 + [LEFT] * 4 + [FIRE] * 4
    assert reward == 3.0 and not terminated and info['lives'] == 2
    np.testing.assert_array_equal(obs, np.maximum(frame(1, 11), frame(1, 12)))


def test_with_episodic_life_the_fire_comes_with_the_next_reset():
    fake = FakeAle(lives=3, life_loss_frames=(7,))
    env = FireOnLifeStart(EpisodicLife(MaxAndSkip(fake, 4)), FIRE)
    env.reset(seed=0)
    assert env.step(LEFT)[2] is True
    assert fake.actions == [FIRE] * 4 + [LEFT] * 4
    env.reset()
    assert fake.actions[8:] == [NOOP] * 4 + [FIRE] * 4 and fake.games == 1


def test_games_without_fire_get_no_fire_presses():
    fake = FakeAle(meanings=['NOOP', 'UP', 'DOWN', 'RIGHT'])
    wrap_atari(fake, noop_max=0).reset(seed=0)
    assert fake.actions == []
    with pytest.raises(EnvError, match='NOOP'):
        wrap_atari(FakeAle(meanings=['FIRE', 'NOOP', 'UP', 'DOWN']))


def test_training_rewards_are_the_sign_of_the_step_total_and_evaluation_keeps_the_raw_score():
    script = dict(rewards={1: 5.0, 2: 2.0, 6: -3.0})
    clipped = wrap_atari(FakeAle(**script), noop_max=0, fire_reset=False)
    raw = wrap_atari(FakeAle(**script), noop_max=0, fire_reset=False, clip_rewards=False)
    for env in (clipped, raw):
        env.reset(seed=0)
    assert [clipped.step(NOOP)[1] for _ in range(3)] == [1.0, -1.0, 0.0]
    assert [raw.step(NOOP)[1] for _ in range(3)] == [7.0, -3.0, 0.0]


# -- the whole stack ---------------------------------------------------------------------------

def test_the_stack_shows_the_last_four_processed_frames():
    fake = FakeAle(lives=3)
    env = wrap_atari(fake, noop_max=0)
    assert env.observation_space == gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    obs, _ = env.reset(seed=0)  # reset, then FIRE for 4 frames
    first = grey_resize(np.maximum(frame(1, 3), frame(1, 4)))
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
    for k in range(4):  # the stack starts filled with the first frame
        np.testing.assert_array_equal(obs[k], first)
    expected = [first] * 4
    for step in range(1, 6):
        obs = env.step(RIGHT)[0]
        last = 4 + 4 * step
        expected = expected[1:] + [grey_resize(np.maximum(frame(1, last - 1), frame(1, last)))]
        np.testing.assert_array_equal(obs, np.stack(expected))


# -- the 'atari' env type ----------------------------------------------------------------------

def test_atari_env_type_builds_the_stack_and_evaluation_plays_whole_games_with_raw_rewards():
    env = make_env(dict(type='atari', id='SparringFakeAle-v0'))
    assert env.observation_space.shape == (4, 84, 84) and env.cfg.episodic_life and env.cfg.clip_rewards
    eval_cfg = evaluator_env_config(dict(type='atari', id='SparringFakeAle-v0', reward_scaling=True))
    assert not eval_cfg.episodic_life and not eval_cfg.clip_rewards and not eval_cfg.reward_scaling
    assert eval_cfg.noop_max == 30 and eval_cfg.fire_reset
    env.close()


def test_atari_config_errors_name_the_key():
    with pytest.raises(ConfigError, match='skip 4 frames itself.*NoFrameskip'):
        make_env(dict(type='atari', id='SparringFakeAleSkip-v0'))
    make_env(dict(type='atari', id='SparringFakeAleSkip-v0', kwargs=dict(frameskip=1))).close()
    with pytest.raises(ConfigError, match='"env.noop_max"'):
        make_env(dict(type='atari', id='SparringFakeAle-v0', noop_max=-1))
    with pytest.raises(ConfigError, match='"env.frame_stack"'):
        make_env(dict(type='atari', id='SparringFakeAle-v0', frame_stack=0))
    with pytest.raises(ConfigError, match="Did you mean 'frame_skip'"):
        make_env(dict(type='atari', id='SparringFakeAle-v0', frameskip=4))


def test_an_unknown_game_without_ale_py_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, 'ale_py', None)  # import ale_py now raises ImportError
    with pytest.raises(ImportError, match=r'sparring\[atari\]'):
        make_env(dict(type='atari', id='SparringNoSuchGame-v4'))


def test_an_unknown_game_with_ale_py_is_a_config_error_with_close_ids():
    pytest.importorskip('ale_py')
    with pytest.raises(ConfigError, match="'BreakoutNoFrameskip-v4'"):
        make_env(dict(type='atari', id='BreakoutNoFrameskip-v9'))


@pytest.mark.slow
def test_serial_pipeline_trains_a_cnn_on_the_stack_and_evaluates_whole_raw_games(tmp_path):
    # Rewards fall after the longest no-op + FIRE start (34 frames), so every whole game scores 8,
    # while a training episode ends at the life lost at frame 120 and sees clipped rewards.
    config = dict(
        exp_name=str(tmp_path / 'fake_atari'),
        env=dict(type='atari', id='SparringFakeAle-v0', collector_env_num=2, evaluator_env_num=2,
                 n_evaluator_episodes=2),
        policy=dict(type='ppo', model=dict(type='cnn', hidden_size=32), collect=dict(n_steps=16),
                    learn=dict(epochs=1, num_minibatches=2)),
        train=dict(max_env_steps=64, eval_every_iters=0, progress_bar=False, tensorboard=False),
    )
    summary = serial_pipeline(config, seed=0)
    assert summary['env_steps'] == 64 and summary['train_iter'] == 2
    assert summary['eval_mean'] == 8.0 and summary['eval_std'] == 0.0


@pytest.mark.slow
def test_real_breakout_loses_a_life_without_ending_the_game():
    pytest.importorskip('ale_py')
    env = make_env(dict(type='atari', id='BreakoutNoFrameskip-v4'))
    assert env.observation_space == gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    assert env.action_space.n == 4
    obs, info = env.reset(seed=0)
    assert info['lives'] == 5 and obs.dtype == np.uint8 and obs.std() > 0
    for _ in range(2000):  # a still paddle misses the served ball within a few hundred frames
        obs, reward, terminated, truncated, info = env.step(NOOP)
        if terminated:
            break
    assert terminated and info['lives'] == 4
    frames_before = info['episode_frame_number']
    obs, info = env.reset()
    assert info['lives'] == 4 and info['episode_frame_number'] > frames_before  # the same game goes on
    env.close()
