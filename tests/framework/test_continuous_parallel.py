"""A parallel league on continuous Pong duel: float action chunks cross the wire to the learner process."""
import pytest

from tests.configs import fast_parallel

pytestmark = pytest.mark.slow  # a commander with collector, learner and evaluator processes


def test_a_parallel_league_trains_on_a_box_game(tmp_path):
    from sparring.framework import parallel_pipeline
    from sparring.framework.player_loader import load_player
    run_dir = str(tmp_path / 'parallel')
    config = dict(
        exp_name=run_dir,
        env=dict(type='pong_duel', continuous=True, points_to_win=1, max_steps=80, collector_env_num=4,
                 evaluator_env_num=4, n_evaluator_episodes=4),
        policy=dict(type='ppo', model=dict(hidden_sizes=[16]), collect=dict(n_steps=16),
                    learn=dict(epochs=1, num_minibatches=1)),
        league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=4))),
        train=dict(max_env_steps=768, eval_every_iters=4, checkpoint_every_iters=5, progress_bar=False,
                   tensorboard=False),
        parallel=fast_parallel(evaluators=1))
    summary = parallel_pipeline(config, seed=0)
    assert summary['env_steps'] >= 768
    policy = load_player(run_dir)
    assert policy.version > 0 and policy.continuous  # the learner trained on the float action chunks
