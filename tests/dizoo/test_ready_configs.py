"""Every ready config under ``dizoo/*/config`` compiles; a battle config also builds its league run,
including every reference player and evaluation opponent (so a misspelt bot or bot option fails here,
not half an hour into a benchmark)."""
import glob
import os

import pytest

from sparring.config import compile_config
from sparring.framework.cli import load_config_file
from sparring.worker.env.battle import is_battle_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, 'dizoo', '*', 'config', '*.py'))
                 if not p.endswith('__init__.py'))
# The optional extra each env family needs; its configs are skipped without it.
NEEDS = dict(atari='ale_py', mujoco='mujoco', openspiel='pyspiel')


@pytest.mark.parametrize('path', CONFIGS)
def test_ready_config_compiles_and_builds(path, tmp_path):
    family = path.split(os.sep)[1]
    if family in NEEDS:
        pytest.importorskip(NEEDS[family])
    config = load_config_file(os.path.join(ROOT, path))
    cfg = compile_config(config, exp_name=str(tmp_path / 'run'), save=False)
    if not (cfg.league is not None or is_battle_env(cfg.env.type)):
        return
    from sparring.framework.league_pipeline import LeagueRun, complete_league_config, evaluation_opponents
    complete_league_config(cfg)
    cfg.env.collector_env_num = cfg.env.evaluator_env_num = 2
    run = LeagueRun(cfg)
    try:
        for _, ref in evaluation_opponents(run.league, cfg):
            assert run.pool.get(ref) is not None
    finally:
        run.close()


def test_the_ready_configs_are_found():
    assert len(CONFIGS) >= 20 and 'dizoo/board_games/config/connect_four_league.py' in CONFIGS
