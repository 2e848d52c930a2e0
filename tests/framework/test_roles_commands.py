"""The commands that use a run, on a game whose seats have roles: each player is opened with its role's spaces,
``eval`` plays the other role's opponents (and refuses one of the player's own role), ``exploit`` trains an
exploiter of the other role, ``export`` writes each role's network for its own observations."""
import pytest
import torch

from sparring.config.schema import ConfigError
from sparring.framework import serial_pipeline
from sparring.framework.evaluate_player import evaluate_player
from sparring.framework.exploit import exploit_player
from sparring.framework.export import export_player
from sparring.framework.player_loader import load_player

pytestmark = pytest.mark.slow  # one short league run, shared by the tests


@pytest.fixture(scope='module')
def run_dir(tmp_path_factory):
    exp = str(tmp_path_factory.mktemp('roles') / 'pursuit')
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        serial_pipeline(dict(
            exp_name=exp, env=dict(type='pursuit', collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=4,
                                   max_steps=8),
            policy=dict(type='ppo', model=dict(hidden_sizes=[16]), collect=dict(n_steps=8),
                        learn=dict(epochs=1, num_minibatches=1)),
            train=dict(max_env_steps=256, eval_every_iters=0, progress_bar=False, tensorboard=False)), seed=0)
    finally:
        torch.set_num_threads(before)
    return exp


def test_each_player_is_opened_with_its_roles_spaces(run_dir):
    pursuer, evader = load_player(run_dir, 'naive_sp_pursuer_0'), load_player(run_dir, 'naive_sp_evader_0')
    assert (pursuer.role, pursuer.observation_space.shape) == ('pursuer', (6,))
    assert (evader.role, evader.observation_space.shape) == ('evader', (8,))
    assert load_player(run_dir, 'random_evader').role == 'evader'


def test_eval_plays_the_other_roles_opponents_and_refuses_the_own_role(run_dir):
    report = evaluate_player(run_dir, ['bot:pursuit_chase', 'bot:random', 'naive_sp_pursuer_0_h0'],
                             player='naive_sp_evader_0', games=4)
    assert set(report['opponents']) == {'bot:pursuit_chase', 'bot:random', 'naive_sp_pursuer_0_h0'}
    assert all(r['by_seat'].keys() == {1} or r['by_seat'].keys() == {'1'} for r in report['opponents'].values())
    assert all(1 <= r['distinct_games'] <= 4 for r in report['opponents'].values())  # each seat's moves hashed
    with pytest.raises(ConfigError, match=r"eval: opponent 'bot:pursuit_flee' plays the role 'evader', as the player "
                                          r"does; expected an opponent of another role \(pursuer\)"):
        evaluate_player(run_dir, ['bot:pursuit_flee'], player='naive_sp_evader_0', games=4)


def test_exploit_trains_an_exploiter_of_the_other_role(run_dir):
    report = exploit_player(run_dir, 128, player='naive_sp_pursuer_0', eval_games=4)
    assert (report['player_role'], report['exploiter_role']) == ('pursuer', 'evader')
    assert report['env_steps'] >= 128 and 'exact' not in report


def test_export_writes_each_roles_network_for_its_own_observations(run_dir, tmp_path):
    for player, size in (('naive_sp_pursuer_0', 6), ('naive_sp_evader_0', 8)):
        info = export_player(run_dir, str(tmp_path / f'{player}.pt'), fmt='torchscript', player=player)
        assert info['observation_shape'] == [size]


@pytest.fixture(scope='module')
def hide_and_seek(tmp_path_factory):
    """A short run of a turn-based game whose seats have roles (``role_game.py``)."""
    exp = str(tmp_path_factory.mktemp('hide') / 'run')
    serial_pipeline(dict(
        exp_name=exp, import_names=['tests.framework.role_game'],
        env=dict(type='hide_and_seek', collector_env_num=2, evaluator_env_num=2, n_evaluator_episodes=2),
        policy=dict(type='ppo', model=dict(hidden_sizes=[8]), collect=dict(n_steps=4),
                    learn=dict(epochs=1, num_minibatches=1)),
        train=dict(max_env_steps=64, eval_every_iters=0, progress_bar=False, tensorboard=False)), seed=0)
    return exp


def test_check_env_passes_a_turn_based_game_with_roles():
    from sparring.worker.env.check import check_env
    report = check_env('hide_and_seek', games=4, import_names=['tests.framework.role_game'])
    assert report.passed, report.format()
    assert "seat player_1, role 'seeker': observation Box(0.0, 1.0, (3,), float32), action Discrete(4)" in report.format()


@pytest.mark.parametrize("role, moves", [("seeker", ["3", "1"]), ("hider", ["2"])])
def test_play_lets_a_person_choose_a_role_against_the_other_role(hide_and_seek, role, moves):
    from sparring.framework.play import play_game
    said = []
    outcome = play_game(hide_and_seek, role=role, read=lambda prompt: moves.pop(0), write=said.append)
    assert outcome in ('win', 'loss')
    opponent = 'naive_sp_hider_0' if role == 'seeker' else 'naive_sp_seeker_0'
    assert said[0].startswith(f'you play the {role} against {opponent}')
    if role == 'seeker':
        assert '3 is not a legal move here: legal moves are 0 1 2' in said
    assert said[-1].endswith(f'(you played the {role})')


def test_play_refuses_a_missing_role_and_an_opponent_of_ones_own_role(hide_and_seek):
    from sparring.framework.play import play_game
    with pytest.raises(ConfigError, match=r"expected --role one of hider, seeker, got None"):
        play_game(hide_and_seek, read=lambda prompt: 'q', write=lambda line: None)
    with pytest.raises(ConfigError, match=r"'naive_sp_seeker_0' plays the role 'seeker', as you chose to"):
        play_game(hide_and_seek, role='seeker', player='naive_sp_seeker_0', read=lambda prompt: 'q',
                  write=lambda line: None)


def test_surgery_widens_each_roles_network_and_the_league_goes_on(run_dir, tmp_path):
    from sparring.framework.surgery import surgery
    from sparring.worker.policy_pool import ParamStore
    new_dir = tmp_path / 'wide'
    config = dict(
        exp_name=str(new_dir), env=dict(type='pursuit', collector_env_num=4, evaluator_env_num=4, n_evaluator_episodes=4,
                                        max_steps=8),
        policy=dict(type='ppo', model=dict(hidden_sizes=[24]), collect=dict(n_steps=8),
                    learn=dict(epochs=1, num_minibatches=1)),
        train=dict(max_env_steps=512, eval_every_iters=0, progress_bar=False, tensorboard=False))
    report = surgery(run_dir, config, str(new_dir), record_steps=8, record_envs=4, log=lambda line: None)
    assert set(report['players']) == {'naive_sp_pursuer_0', 'naive_sp_evader_0'}
    assert report['max_value_change'] <= 1e-5  # the same function: values and (Box moves) mean actions kept
    assert all(s['max_mean_action_change'] <= 1e-5 for sets in report['players'].values() for s in sets.values())
    assert any(c.startswith('pursuer: actor.0: 16 -> 24') for c in report['changes'])
    assert any(c.startswith('evader: actor.0: 16 -> 24') for c in report['changes'])
    # each role's reset parameters transplanted for its own observations, the old ones kept for its snapshots
    store = ParamStore(str(new_dir / 'params'))
    for role, size in (('pursuer', 6), ('evader', 8)):
        assert tuple(store.get(f'init_{role}')['params']['model.actor_trunk.0.weight'].shape) == (24, size)
        assert tuple(store.get(f'init_{role}@before_surgery_1')['params']['model.actor_trunk.0.weight'].shape) == (
            16, size)
    resumed = serial_pipeline(config, exp_name=str(new_dir), resume=True)
    assert resumed['env_steps'] >= 512
    assert load_player(str(new_dir), 'naive_sp_evader_0').observation_space.shape == (8,)
