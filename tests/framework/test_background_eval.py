"""Evaluation beside training (``train.eval_in_background``): the child process, the round each result is
recorded at, reproducibility, a dying child, a failing evaluation and checkpoints with evaluations in flight."""
import os
import signal

import numpy as np
import pytest

from sparring.framework import serial_pipeline
from sparring.framework.run_setup import prepare_config
from sparring.framework.serial_run import SerialRun
from sparring.worker.background_evaluation import BackgroundEvaluationError
from tests.scripts import load_script

pytestmark = pytest.mark.slow  # every test trains a league with an evaluation child process

golden_runs = load_script('tests/framework/golden_runs.py', 'golden_runs')


def in_background(config: dict) -> None:
    config['train']['eval_in_background'] = True


def league_run(tmp_path, name: str, **train) -> SerialRun:
    config = golden_runs.league_config(str(tmp_path / name))
    config['train'].update(dict(eval_in_background=True), **train)
    return SerialRun(prepare_config(config))


def test_a_background_run_is_reproducible_bit_for_bit(tmp_path):
    # The child's speed decides only when a result arrives, never the round it is recorded at.
    first = golden_runs.run_case('tictactoe_league', str(tmp_path / 'a'), edit=in_background)
    second = golden_runs.run_case('tictactoe_league', str(tmp_path / 'b'), edit=in_background)
    assert sorted(first) == sorted(second)
    differ = [key for key in first if not np.array_equal(first[key], second[key])]
    assert not differ, differ[:5]


def test_results_are_recorded_eval_every_iters_rounds_after_they_were_sent(tmp_path):
    run = league_run(tmp_path, 'lag')  # eval_every_iters=3
    try:
        recorded_at = []
        for _ in range(9):
            run.train_round()
            if run.evaluate_pending():
                recorded_at.append(run.rounds)
        # Due after round 3 and 6 (sent then), recorded after rounds 6 and 9.
        assert recorded_at == [6, 9]
        assert [entry['env_steps'] for entry in run.history] == [3 * 64, 6 * 64]  # dated when the parameters were sent
        assert [version for version, _ in run.records.history['main_player_0']] == [3, 6]
        assert [e['due_round'] for e in run.evaluations.in_flight] == [12, 12]  # sent after round 9
        reports = run.settle_evaluations()
        assert sorted(reports) == ['main_exploiter_0', 'main_player_0'] and not run.evaluations.in_flight
        assert run.coordinator.players['main_player_0'].evaluated_version == 9
    finally:
        run.close()


def test_a_killed_child_is_restarted_and_nothing_is_lost(tmp_path):
    run = league_run(tmp_path, 'killed')
    try:
        for _ in range(3):
            run.train_round()
        run.evaluate_pending()
        assert len(run.evaluations.in_flight) == 2
        os.kill(run.evaluations.background.process.pid, signal.SIGKILL)
        run.evaluations.background.process.join(timeout=10)
        reports = run.settle_evaluations()
        assert sorted(reports) == ['main_exploiter_0', 'main_player_0']
        assert run.evaluations.background.restarts == 1
        assert all(r['random']['games'] == 8 for r in reports.values())
    finally:
        run.close()


def test_an_evaluation_that_fails_in_the_child_is_raised_with_its_message(tmp_path):
    run = league_run(tmp_path, 'failing')
    run.coordinator.eval_opponents.append(('ghost', 'no_such_snapshot'))
    try:
        for _ in range(3):
            run.train_round()
        run.evaluate_pending()
        with pytest.raises(BackgroundEvaluationError, match='no_such_snapshot'):
            run.settle_evaluations()
    finally:
        run.close()


@pytest.mark.parametrize('resume_in_background', [True, False])
def test_a_checkpoint_keeps_the_evaluations_in_flight(tmp_path, resume_in_background):
    run = league_run(tmp_path, 'saved')
    try:
        for _ in range(3):
            run.train_round()
        run.evaluate_pending()
        sent = [(e['player_id'], e['version']) for e in run.evaluations.in_flight]
        state = run.state_dict()
    finally:
        run.close()
    assert [(e['player_id'], e['version']) for e in state['evaluations_in_flight']] == sent == [
        ('main_player_0', 3), ('main_exploiter_0', 3)]
    config = golden_runs.league_config(str(tmp_path / 'saved'))
    config['train']['eval_in_background'] = resume_in_background
    resumed = SerialRun(prepare_config(config, resume=True), state)
    try:
        resumed.settle_evaluations()
        assert {p: c.evaluated_version for p, c in resumed.coordinator.players.items()} == {'main_player_0': 3,
                                                                                         'main_exploiter_0': 3}
        assert [entry['env_steps'] for entry in resumed.history] == [3 * 64]
        assert not resumed.evaluations.in_flight
    finally:
        resumed.close()


def test_the_pipeline_waits_for_the_background_before_its_final_evaluation(tmp_path):
    config = golden_runs.league_config(str(tmp_path / 'whole'))
    config['train'].update(eval_in_background=True, max_env_steps=640)  # 10 rounds: evaluations sent at 3, 6, 9
    summary = serial_pipeline(config)
    assert [entry['env_steps'] for entry in summary['history']] == [192, 384, 576]
    assert set(summary['eval']) == {'main_player_0', 'main_exploiter_0'}
