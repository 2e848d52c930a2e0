"""The MMD poker configs: they compile with the objective they name, and a short Kuhn run learns (exactly scored)."""
import pytest

pytest.importorskip('pyspiel')

from sparring.config import compile_config
from sparring.dizoo.openspiel.config import poker_mmd_config
from sparring.framework import serial_pipeline

# Exploitability of the uniform random policy in Kuhn poker (OpenSpiel's NashConv / 2).
KUHN_UNIFORM_EXPLOITABILITY = 0.4583


def test_poker_mmd_config_compiles_with_its_options(tmp_path):
    config = poker_mmd_config('leduc_poker', max_wall_seconds=60.0, n_steps=16, mmd_kl_coef=5.0, magnet_coef=0.1,
                              one_phase_step=7, eval_every_iters=3, magnet_coef_final=0.01)
    cfg = compile_config(config, exp_name=str(tmp_path / 'run'), save=False)
    learn = cfg.policy.learn
    assert (learn.objective, learn.mmd_kl_coef, learn.magnet, learn.magnet_coef, learn.magnet_coef_final) == \
        ('mmd', 5.0, 'uniform', 0.1, 0.01)
    assert cfg.env.game == 'leduc_poker' and cfg.league.players.naive_sp.one_phase_step == 7


@pytest.mark.slow
def test_a_short_kuhn_mmd_run_beats_the_uniform_policy(tmp_path):
    config = poker_mmd_config('kuhn_poker', max_wall_seconds=60.0, n_steps=8, mmd_kl_coef=5.0, magnet_coef=0.05,
                              one_phase_step=10, eval_every_iters=30, max_env_steps=30 * 8 * 32 * 2)
    config['env'].update(collector_env_num=32, evaluator_env_num=2, n_evaluator_episodes=2)
    config['train'].update(progress_bar=False, tensorboard=False)
    summary = serial_pipeline(config, exp_name=str(tmp_path / 'kuhn'))
    exact = summary['exact']
    assert exact['exploitability']['naive_sp_0'] < KUHN_UNIFORM_EXPLOITABILITY - 0.1
    assert len(exact['meta_strategy']) >= 3  # the live player and its snapshots
