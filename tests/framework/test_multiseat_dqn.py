"""DQN in a league of three seats: a short serial run on three-player Kuhn poker through ``serial_pipeline``. The
player learns from its own decisions only (transitions run between its moves along each seat's column), its network
moves away from its first snapshot, every game it collects reaches the league exactly once, and a second run with
the same seed ends with the same parameters."""
import os

import numpy as np
import pytest

from sparring import load_player
from sparring.framework.serial import serial_pipeline
from sparring.league import BaseLeague
from sparring.policy.dqn import DQNPolicy
from sparring.worker.multiseat_collector import MultiSeatCollector

pytest.importorskip('pyspiel')
pytestmark = pytest.mark.usefixtures('one_torch_thread')


def _config(exp_dir: str) -> dict:
    return dict(
        exp_name=exp_dir,
        env=dict(type='openspiel_multiseat', game='kuhn_poker', game_params=dict(players=3), collector_env_num=8,
                 evaluator_env_num=4, n_evaluator_episodes=8),
        policy=dict(type='dqn', model=dict(hidden_sizes=[32]), collect=dict(n_steps=8),
                    learn=dict(batch_size=32, updates_per_chunk=2, learning_starts=64, n_step=1, target_update_every=4)),
        league=dict(type='one_vs_one', seats=3,
                    players=dict(naive_sp=dict(one_phase_step=2, branch_probs=dict(sp=0.8, pfsp=0.2)))),
        torch_threads=1,
        train=dict(max_env_steps=64 * 8, max_wall_seconds=0.0, eval_every_iters=4, tensorboard=False,
                   progress_bar=False),
    )


def _params(policy) -> dict:
    return {k: v.detach().cpu().numpy().copy() for k, v in policy.get_params().items()}


def test_a_dqn_player_learns_from_its_own_moves_and_every_game_reaches_the_league_once(tmp_path, monkeypatch):
    collected, recorded, learnt = [], [], []
    collect, finish_job, learn = MultiSeatCollector.collect, BaseLeague.finish_job, DQNPolicy.learn

    def spy_collect(collector):
        chunk = collect(collector)
        if collector.player_id == 'naive_sp_0':  # (not an evaluation's)
            collected.extend(chunk.rankings)
        return chunk

    def spy_finish_job(league, job_result):
        recorded.append(job_result)
        return finish_job(league, job_result)

    def spy_learn(policy, chunk, progress=0.0):
        learnt.append((policy, int(np.count_nonzero(chunk['train_mask']))))
        return learn(policy, chunk, progress)

    monkeypatch.setattr(MultiSeatCollector, 'collect', spy_collect)
    monkeypatch.setattr(BaseLeague, 'finish_job', spy_finish_job)
    monkeypatch.setattr(DQNPolicy, 'learn', spy_learn)
    summary = serial_pipeline(_config(str(tmp_path / 'first')), seed=0)
    assert summary['env_steps'] == 64 * 8 and summary['rounds'] == 8

    policy = learnt[-1][0]
    decisions = sum(n for _, n in learnt)
    assert {id(p) for p, _ in learnt} == {id(policy)} and policy.agent_steps == decisions > 0
    assert 0 < len(policy.replay) <= decisions  # a transition per own decision, none from the opponents' seats

    initial, final = load_player(summary['exp_dir'], snapshot='naive_sp_0_h0'), load_player(summary['exp_dir'])
    before, after = _params(initial), _params(final)
    assert any(not np.array_equal(before[k], after[k]) for k in before)

    trained = [job for job in recorded if 'random' not in job['player_ids']]
    assert sum(len(job['result']) for job in trained) == len(collected) == summary['games'] > 0
    assert sorted((tuple(ids), tuple(ranks)) for ids, ranks, _ in collected) == \
        sorted((tuple(job['player_ids']), tuple(r)) for job in trained for r in job['result'])
    league = BaseLeague.load(os.path.join(summary['exp_dir'], 'league_state.npz'))
    assert league.get_player('naive_sp_0').self_play_games > 0 and league.payoff.totals('naive_sp_0')['games'] > 0

    again = serial_pipeline(_config(str(tmp_path / 'again')), seed=0)
    repeated = _params(load_player(again['exp_dir']))
    assert all(np.array_equal(after[k], repeated[k]) for k in after)
