"""A SAC league forgets replayed transitions against opponents that aged out (``replay.max_opponent_age``)."""
import numpy as np
import pytest

from sparring.framework.serial_run import SerialRun


def _config(exp_name, max_age):
    return dict(
        exp_name=exp_name, seed=5,
        env=dict(type='tictactoe', collector_env_num=4, evaluator_env_num=2, n_evaluator_episodes=2),
        policy=dict(type='sac', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8),
                    learn=dict(batch_size=16, updates_per_chunk=1, learning_starts=16),
                    replay=dict(capacity=10_000, max_opponent_age=max_age)),
        league=dict(type='one_vs_one', players=dict(naive_sp=dict(one_phase_step=1, branch_probs=dict(sp=0.5, pfsp=0.5))),
                    reference_players=[dict(player_id='random', param_ref='bot:random')]),
        train=dict(max_env_steps=10_000, eval_every_iters=0, checkpoint_every_iters=0, progress_bar=False,
                   tensorboard=False))


@pytest.mark.parametrize('max_age', [None, 1])
def test_transitions_against_aged_out_snapshots_are_forgotten(tmp_path, max_age, one_torch_thread):
    from sparring.framework.run_setup import prepare_config
    run = SerialRun(prepare_config(_config(str(tmp_path / 'run'), max_age)))
    try:
        for _ in range(6):
            run.train_round()
        league = run.coordinator.league
        ages = league.opponent_ages()
        snapshots = [p.player_id for p in league.historical_players]
        assert len(snapshots) >= 3 and ages[snapshots[-1]] == 1 and ages[snapshots[0]] == len(snapshots)
        assert ages['naive_sp_0'] == 0 and ages['random'] == 0
        policy = run.learners['naive_sp_0'].policy
        stored = policy.replay.storage['opponent'][:len(policy.replay)]
        names = {policy.opponents.name(code) for code in np.unique(stored)}
        forgotten = run.coordinator.counters['replay_transitions_forgotten']
        if max_age is None:
            assert forgotten == 0 and len(names & set(snapshots[:-1])) >= 1  # old snapshots' games stay
        else:
            assert forgotten > 0 and not names & set(snapshots[:-1])  # only the newest snapshot's games stay
    finally:
        run.close()
