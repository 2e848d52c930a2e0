"""Pong duel: physics, scoring, mirrored observations, episode ends, seeding and the tracker bot."""
import numpy as np
import pytest

from sparring.dizoo.pong_duel.pong_duel_env import DOWN, OBS_INDEX, STAY, UP
from sparring.worker.env.battle import make_battle_env


def make(num_envs=4, seed=0, **cfg):
    env = make_battle_env(dict(type='pong_duel', **cfg), num_envs, seed)
    return env, env.reset()


def stay(env):
    return np.full((env.num_envs, 2), STAY)


def test_observations_are_mirrored_for_the_right_seat(random_actions):
    env, step = make(16)
    rng = np.random.default_rng(0)
    i = OBS_INDEX
    for _ in range(200):
        left, right = step.obs[:, 0], step.obs[:, 1]
        np.testing.assert_allclose(right[:, i['ball_x']], -left[:, i['ball_x']], atol=1e-6)
        np.testing.assert_allclose(right[:, i['ball_vx']], -left[:, i['ball_vx']], atol=1e-6)
        np.testing.assert_array_equal(right[:, i['ball_y']], left[:, i['ball_y']])
        np.testing.assert_array_equal(right[:, i['ball_vy']], left[:, i['ball_vy']])
        np.testing.assert_array_equal(right[:, i['own_paddle_y']], left[:, i['opponent_paddle_y']])
        np.testing.assert_array_equal(right[:, i['score_difference']], -left[:, i['score_difference']])
        assert np.abs(step.obs).max() <= 1.0 + 1e-6
        step = env.step(random_actions(step, rng))


def test_a_missed_ball_scores_for_the_other_seat_and_a_new_ball_is_served():
    env, _ = make(1)
    env.ball[0] = [0.01, 0.9]
    env.velocity[0] = [-0.02, 0.0]
    env.paddle_y[0, 0] = 0.2  # far from the ball
    step = env.step(stay(env))
    assert step.reward.tolist() == [[-1.0, 1.0]] and env.score.tolist() == [[0, 1]]
    assert env.ball.tolist() == [[0.5, 0.5]] and not step.terminated.any()
    assert step.obs[0, 1, OBS_INDEX['score_difference']] == pytest.approx(1 / env.cfg.points_to_win)


@pytest.mark.parametrize('hit_at, rises', [(0.05, True), (-0.05, False)])
def test_a_returned_ball_leaves_at_an_angle_set_by_where_it_hit(hit_at, rises):
    env, _ = make(1)
    env.paddle_y[0, 1] = 0.5
    env.ball[0] = [0.99, 0.5 + hit_at]
    env.velocity[0] = [0.02, 0.0]
    step = env.step(stay(env))
    assert not step.reward.any()
    assert env.velocity[0, 0] < 0 and (env.velocity[0, 1] > 0) == rises
    assert 0.0 <= env.ball[0, 0] <= 1.0
    # Hitting off-centre sends the ball away at a steeper angle than hitting the centre.
    assert abs(env.velocity[0, 1]) > 0.005


def test_walls_reflect_the_ball_and_paddles_stay_in_the_court():
    env, _ = make(1)
    env.ball[0] = [0.5, 0.99]
    env.velocity[0] = [0.01, 0.02]
    env.step(stay(env))
    assert env.ball[0, 1] == pytest.approx(0.99) and env.velocity[0, 1] < 0
    for _ in range(40):
        env.step(np.array([[UP, DOWN]]))
    half = env.cfg.paddle_half_height
    assert env.paddle_y[0].tolist() == pytest.approx([1.0 - half, half])


def test_rewards_are_zero_sum_and_sum_to_the_final_score_difference(random_actions):
    env, step = make(8, points_to_win=2)
    rng = np.random.default_rng(1)
    totals = np.zeros((8, 2))
    checked = 0
    for _ in range(2000):
        step = env.step(random_actions(step, rng))
        assert (step.reward.sum(axis=1) == 0).all()
        totals += step.reward
        for i in np.flatnonzero(step.terminated):
            assert totals[i].max() > 0 and step.result[i].tolist() == np.sign(totals[i]).astype(int).tolist()
            checked += 1
        totals[step.terminated] = 0.0
    assert checked > 20


def test_long_games_are_truncated_and_decided_by_the_score():
    env, step = make(16, max_steps=150, points_to_win=50)
    for t in range(150):
        step = env.step(stay(env))
        assert step.truncated.all() == (t == 149) and not step.terminated.any()
    final_score_difference = step.final_obs[:, 0, OBS_INDEX['score_difference']] * 50
    np.testing.assert_array_equal(step.result[:, 0], np.sign(np.round(final_score_difference)))
    assert step.result.any() and (step.result[:, 0] == -step.result[:, 1]).all()
    assert not step.obs[:, :, OBS_INDEX['score_difference']].any()  # the new games start at 0 - 0


def test_same_seed_same_game_other_seed_another(random_actions):
    def trajectory(seed):
        env, step = make(4, seed)
        rng = np.random.default_rng(0)
        out = []
        for _ in range(300):
            step = env.step(random_actions(step, rng))
            out.append(step.obs)
        return np.stack(out)

    np.testing.assert_array_equal(trajectory(5), trajectory(5))
    assert not np.array_equal(trajectory(5), trajectory(6))


def test_episodes_last_hundreds_of_steps_and_the_tracker_beats_random(match):
    env, step = make(32, seed=2)
    rng = np.random.default_rng(2)
    lengths, current = [], np.zeros(32, int)
    while len(lengths) < 32:
        step = env.step(rng.integers(0, 3, (32, 2)))
        current += 1
        done = step.terminated | step.truncated
        lengths += current[done].tolist()
        current[done] = 0
    assert 100 <= np.mean(lengths) <= 1000
    as_left = match('pong_duel', ('pong_duel_heuristic', 'random'), 32, seed=3)
    as_right = -match('pong_duel', ('random', 'pong_duel_heuristic'), 32, seed=4)
    assert (np.concatenate([as_left, as_right]) == 1).mean() >= 0.9
