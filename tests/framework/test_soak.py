"""A short soak (benchmarks/soak.py): workers SIGKILLed in turn and a flood of forged messages, yet no game
is lost or counted twice and collection never stands still for a worker timeout."""

import pytest
from tests.scripts import load_script

soak = load_script('benchmarks/soak.py', 'soak')


@pytest.mark.slow  # workers killed in turn for a while
def test_a_short_soak_loses_and_doubles_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv('SPARRING_SECRET', raising=False)
    result = soak.soak(str(tmp_path), seconds=30.0, kill_every=2.0, flooders=2, flood_mb=4.0)
    assert result['games_lost'] == 0 and result['games_doubled'] == 0
    assert result['games_recorded'] > 0 and sum(result['kills'].values()) >= 4
    assert result['restarts'] >= sum(result['kills'].values()) - 1  # the last kill may come as the run ends
    assert not result['stalled'], result['longest_collection_stall_seconds']
    assert result['rejected_messages'].get('unauthenticated', 0) > 0


@pytest.mark.slow
def test_a_hostile_holder_of_the_secret_takes_no_live_id_and_spends_no_budget_with_reports_of_no_task(tmp_path,
                                                                                                     monkeypatch):
    monkeypatch.delenv('SPARRING_SECRET', raising=False)
    result = soak.soak(str(tmp_path), seconds=30.0, kill_every=3.0, flooders=0, flood_mb=1.0, hostile=True)
    assert result['games_lost'] == 0 and result['games_doubled'] == 0
    assert result['live_ids_tried'] > 0 and result['live_ids_taken'] == 0
    assert result['registers_refused_id_held'] >= result['live_ids_tried'] - 1  # one may find its worker just gone
    assert 0 < result['reportless_steps_claimed'] <= result['env_steps_refused']
    assert result['hostile_accepted'] == 0, result['hostile_accepted_kinds']
    assert not result['exits_not_by_kill'], result['exits_not_by_kill']
    assert set(result['worker_rss_idle_mb']) >= {'collector-0', 'collector-1', 'evaluator-0'}


def _result(**changes):
    result = dict(games_lost=0, games_doubled=0, stalled=False, commander_rss_idle_mb=300.0, commander_rss_peak_mb=320.0,
                  worker_rss_idle_mb={'collector-0': 250.0}, worker_rss_peak_mb={'collector-0': 260.0},
                  probe_p95_ms=5.0, hostile_accepted=0, live_ids_taken=0, env_steps_refused=64,
                  reportless_steps_claimed=64, forward_liar_replies={'unknown_bot': {'error': 3}}, recurrent=False,
                  exits_not_by_kill=[])
    result.update(changes)
    return result


def test_the_soaks_targets_name_what_failed():
    assert all(soak.targets_met(_result()).values())
    failed = {key for key, met in soak.targets_met(_result(
        exits_not_by_kill=[('inference-0', 1, 'RegistryError: unknown bot')],
        worker_rss_peak_mb={'collector-0': 400.0}, env_steps_refused=0, live_ids_taken=1,
        forward_liar_replies={'unknown_bot': {'forwarded': 1}})).items() if not met}
    assert failed == {'no_process_exited_because_of_a_message', 'every_worker_rss_under_1_5x_idle',
                      'reportless_reports_spent_nothing', 'no_live_id_taken', 'no_forward_lie_answered'}
    # a wrong recurrent state answered by a network that has none is no lie let through; by an LSTM it is
    assert soak.targets_met(_result(forward_liar_replies={'wrong_state_width': {'forwarded': 1}}))[
        'no_forward_lie_answered']
    assert not soak.targets_met(_result(forward_liar_replies={'wrong_state_width': {'forwarded': 1}},
                                        recurrent=True))['no_forward_lie_answered']
