"""What LeagueWatch writes for TensorBoard, without a run: an evaluation's figures stamped with the evaluated
parameters' env steps, and a payoff image with its players' labels."""
import glob
import os
from types import SimpleNamespace

import numpy as np
import pytest
from easydict import EasyDict

from sparring.framework.league_watch import LeagueWatch, payoff_image
from sparring.league.leagues import OneVsOneLeague
from sparring.worker.evaluation import GameEvaluation
from tests.framework.test_league_watch import read_events


def _league():
    league = OneVsOneLeague(dict(reference_players=[dict(player_id='random', param_ref='bot:random')]))
    for _ in range(10):
        league.record_eval_result('naive_sp_0', 'random', ['win', 'win', 'loss'])
    return league


def test_a_delayed_evaluation_is_stamped_with_the_env_steps_of_the_parameters_it_evaluated(tmp_path):
    pytest.importorskip('tensorboardX')
    cfg = EasyDict(exp_name=str(tmp_path), train=dict(tensorboard=True), env=dict(type='tictactoe'))
    coordinator = SimpleNamespace(cfg=cfg, league=_league(), logger=object(), env_steps=5000, wall_seconds=3.0,
                                  phase='collect', kind=SimpleNamespace(evaluation_class=GameEvaluation))
    watch = LeagueWatch(coordinator)
    report = dict(random=dict(win=0.6, draw=0.0, loss=0.4, games=30))
    watch.evaluated('naive_sp_0', report, env_steps=1000)  # parameters taken at 1000 steps, reported at 5000
    watch.close()
    steps = {}
    for path in glob.glob(os.path.join(tmp_path, 'tb', 'events.out.tfevents.*')):
        for event in read_events(path):
            for value in event.summary.value:
                steps[value.tag] = event.step
    assert steps['league/naive_sp_0/elo'] == steps['league/naive_sp_0/win_rate/random'] == 1000
    assert steps['league/payoff'] == 1000


def test_the_payoff_image_labels_its_rows_and_columns():
    league = _league()
    image = payoff_image(league)
    n = len(league.roster)
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    dark = (image < 100).all(axis=-1)
    rows, cols = np.nonzero((image == 224).all(axis=-1))  # the grey of pairs that never played: the first
    left, top = cols.min(), rows.min()  # and last columns here (the snapshot has played no one)
    assert dark[:, :left].any() and dark[:top, :].any()  # words left of the cells and above them
    assert (cols.max() - left + 1) / n >= 20  # a small league's cells are big enough to read, not 8 px
