"""DQN: n-step targets, double-DQN and masked bootstraps, the TD loss, epsilon-greedy with masks,
target updates, checkpoints, config errors, and the collectors and pipelines it runs in."""
import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

from sparring.config import compile_config
from sparring.config.compile import compile_section
from sparring.config.schema import ConfigError
from sparring.framework import serial_pipeline
from sparring.config.registry import POLICY_REGISTRY
from sparring.policy import functional as F
from sparring.policy.dqn import DQNPolicy
from tests.configs import tiny_league_config

GAMMA = 0.5


@pytest.fixture(autouse=True, scope='module')
def one_torch_thread():
    """Small networks on a loaded machine run far faster with one intra-op thread (see DESIGN)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _policy(obs_space=None, n_actions=2, seed=0, **sections):
    policy_cfg = dict(type='dqn', model=dict(hidden_sizes=[16]))
    for name, values in sections.items():
        policy_cfg[name] = dict(policy_cfg.get(name, {}), **values)
    cfg = compile_section('policy', policy_cfg)
    obs_space = obs_space or gym.spaces.Box(0.0, 1.0, (3,), np.float32)
    return DQNPolicy(cfg, obs_space, gym.spaces.Discrete(n_actions), seed=seed)


# -- n-step transitions ------------------------------------------------------------------------

def test_nstep_single_agent_terminal_truncated_and_tail_by_hand():
    reward = np.array([[1.0], [2.0], [3.0], [4.0], [5.0], [6.0]])
    terminated = np.array([[False], [False], [True], [False], [False], [False]])
    truncated = np.array([[False], [False], [False], [False], [True], [False]])
    tr = F.nstep_transitions(reward, terminated, truncated, None, GAMMA, n=2, bootstrap_tail=True)
    np.testing.assert_array_equal(tr.row, [0, 1, 2, 3, 4, 5])
    # row 0: 1 + .5*2, bootstrapped from the decision at row 2 with gamma^2
    # rows 1, 2: the episode terminates at row 2: no bootstrap
    # row 3: 4 + .5*5, truncated at row 4: from that row's final observation (next_obs[4])
    # row 4: 5 then the final observation; row 5: 6 then the state after the chunk (next_obs[5])
    np.testing.assert_allclose(tr.ret, [2.0, 3.5, 3.0, 6.5, 5.0, 6.0])
    np.testing.assert_allclose(tr.discount, [0.25, 0.0, 0.0, 0.25, 0.5, 0.5])
    np.testing.assert_array_equal(tr.boot_kind, [F.BOOT_DECISION, F.BOOT_NONE, F.BOOT_NONE, F.BOOT_NEXT_OBS,
                                                 F.BOOT_NEXT_OBS, F.BOOT_NEXT_OBS])
    np.testing.assert_array_equal(tr.boot_row[[0, 3, 4, 5]], [2, 4, 4, 5])

    one = F.nstep_transitions(reward, terminated, truncated, None, GAMMA, n=1, bootstrap_tail=False)
    np.testing.assert_array_equal(one.row, [0, 1, 2, 3, 4])  # the last row's next state is unknown
    np.testing.assert_allclose(one.ret, [1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_allclose(one.discount, [0.5, 0.5, 0.0, 0.5, 0.5])
    np.testing.assert_array_equal(one.boot_row[[0, 1, 3]], [1, 2, 4])


def test_nstep_turn_based_sums_the_opponents_steps_and_waits_for_an_own_move():
    reward = np.array([[0.1, 0.0], [0.2, 0.1], [0.3, 0.2], [-1.0, 0.3], [0.5, 0.4], [0.6, 0.5]])
    terminated = np.zeros((6, 2), bool)
    terminated[3, 0] = True  # the opponent's winning move in column 0
    decision = np.zeros((6, 2), bool)
    decision[[0, 2, 4], 0] = True
    decision[[1, 3], 1] = True
    tr = F.nstep_transitions(reward, terminated, np.zeros((6, 2), bool), decision, 0.9, n=2,
                             bootstrap_tail=False)
    got = {(int(r), int(c)): (float(ret), float(d), int(k), int(b))
           for r, c, ret, d, k, b in zip(tr.row, tr.col, tr.ret, tr.discount, tr.boot_kind, tr.boot_row)}
    # column 0: move 0 collects 0.1 + 0.2, then move 2 collects 0.3 - 1 and the game is lost
    assert got[(0, 0)][:3] == pytest.approx((0.3 + 0.9 * -0.7, 0.0, F.BOOT_NONE))
    assert got[(2, 0)][:3] == pytest.approx((-0.7, 0.0, F.BOOT_NONE))
    # column 1: move 1 collects 0.1 + 0.2; the chunk ends before the move after move 3, so the
    # 2-step return is shortened to one move and bootstrapped from the decision at row 3
    assert got[(1, 1)] == pytest.approx((0.3, 0.9, F.BOOT_DECISION, 3))
    # moves with no own move after them inside the chunk give no transition
    assert set(got) == {(0, 0), (2, 0), (1, 1)}


# -- targets and loss --------------------------------------------------------------------------

def test_double_dqn_and_masked_bootstrap_values():
    target = torch.tensor([[1.0, 5.0, 3.0], [2.0, 0.0, 9.0]])
    online = torch.tensor([[0.0, 1.0, 2.0], [4.0, 0.0, 1.0]])
    np.testing.assert_allclose(F.q_bootstrap(target), [5.0, 9.0])
    np.testing.assert_allclose(F.q_bootstrap(target, online), [3.0, 2.0])  # target at online's argmax
    mask = torch.tensor([[True, False, True], [False, True, True]])
    np.testing.assert_allclose(F.q_bootstrap(target, None, mask), [3.0, 9.0])  # illegal 5 is not maxed over
    np.testing.assert_allclose(F.q_bootstrap(target, online, mask), [3.0, 9.0])
    none_legal = torch.zeros(2, 3, dtype=torch.bool)
    np.testing.assert_allclose(F.q_bootstrap(target, None, none_legal), [5.0, 9.0])


def test_td_loss_hand_cases():
    q = torch.tensor([1.0, 0.0, 2.0])
    target = torch.tensor([3.0, 0.5, 2.0])
    loss, err = F.td_loss(q, target, kind='mse')
    assert loss.item() == pytest.approx(0.5 * (4.0 + 0.25) / 3)
    np.testing.assert_allclose(err, [2.0, 0.5, 0.0])
    loss, _ = F.td_loss(q, target, kind='huber')  # |2| > 1: linear part 2 - 0.5
    assert loss.item() == pytest.approx((1.5 + 0.125 + 0.0) / 3)
    loss, _ = F.td_loss(q, target, torch.tensor([0.5, 1.0, 1.0]), kind='huber')
    assert loss.item() == pytest.approx((0.75 + 0.125) / 3)
    with pytest.raises(ValueError, match='huber'):
        F.td_loss(q, target, kind='l1')


def _table_policy(online, target, **learn):
    """A DQN whose online and target Q-functions are fixed tables over one-hot observations."""
    policy = _policy(n_actions=2, learn=dict(dict(gamma=GAMMA, n_step=1, loss='mse'), **learn))
    for net, table in ((policy.net, online), (policy.target_net, target)):
        layer = torch.nn.Linear(3, 2, bias=False)
        layer.weight.data = torch.tensor(table, dtype=torch.float32).T.contiguous()
        net.model = layer
    return policy


def _two_step_chunk(action_mask=None):
    eye = np.eye(3, dtype=np.float32)
    chunk = dict(obs=eye[[0, 1]][:, None], next_obs=eye[[1, 2]][:, None], action=np.array([[0], [1]]),
                 reward=np.array([[1.0], [0.5]], np.float32), terminated=np.array([[False], [True]]),
                 truncated=np.zeros((2, 1), bool))
    if action_mask is not None:
        chunk['action_mask'] = np.asarray(action_mask, bool)[:, None]
    return chunk


ONLINE = [[1.0, 2.0], [3.0, 0.0], [0.0, 0.0]]
TARGET = [[0.5, 1.0], [2.0, 4.0], [0.0, 0.0]]


@pytest.mark.parametrize('double, mask, expected_errors', [
    (True, None, [1.0, 0.5]),  # online picks action 0 in s1, target values it 2: 1 + .5 * 2 - Q(s0, 0)
    (False, None, [2.0, 0.5]),  # max of the target in s1 is 4: 1 + .5 * 4 - 1
    (True, [[True, True], [False, True]], [2.0, 0.5]),  # action 0 illegal in s1: online's pick is 1
])
def test_policy_loss_on_a_hand_computed_batch(double, mask, expected_errors):
    policy = _table_policy(ONLINE, TARGET, double=double)
    data = policy.transitions(_two_step_chunk(mask))
    np.testing.assert_allclose(data.discount, [0.5, 0.0])
    loss, td_error, q_taken = policy.compute_loss(data)
    np.testing.assert_allclose(q_taken, [1.0, 0.0])
    np.testing.assert_allclose(td_error, expected_errors)
    assert loss.item() == pytest.approx(0.5 * np.mean(np.square(expected_errors)))
    weighted, _, _ = policy.compute_loss(data, np.array([0.0, 1.0], np.float32))
    assert weighted.item() == pytest.approx(0.5 * 0.25 / 2)


def test_truncated_bootstraps_from_the_final_observation():
    policy = _table_policy(ONLINE, TARGET, double=False)
    chunk = _two_step_chunk()
    chunk['terminated'][1, 0], chunk['truncated'][1, 0] = False, True
    chunk['next_obs'][1, 0] = np.eye(3, dtype=np.float32)[0]  # the cut episode's final state is s0
    data = policy.transitions(chunk)
    np.testing.assert_allclose(data.discount, [0.5, 0.5])
    np.testing.assert_array_equal(data.next_obs[1], [1.0, 0.0, 0.0])
    _, td_error, _ = policy.compute_loss(data)
    assert td_error[1].item() == pytest.approx(0.5 + 0.5 * 1.0 - 0.0)


@pytest.mark.slow
def test_learning_a_one_step_bandit_converges_to_its_rewards():
    policy = _policy(n_actions=2, learn=dict(batch_size=32, updates_per_chunk=20, learning_starts=1, lr=0.01,
                                             n_step=1, target_update_every=10))
    rng = np.random.default_rng(0)
    for _ in range(30):
        state = rng.integers(0, 3, size=(1, 16))
        action = rng.integers(0, 2, size=(1, 16))
        reward = np.where(action == state % 2, 1.0, -1.0).astype(np.float32)  # the right action is state % 2
        obs = np.eye(3, dtype=np.float32)[state]
        policy.learn(dict(obs=obs, next_obs=obs, action=action, reward=reward, terminated=np.ones((1, 16), bool),
                          truncated=np.zeros((1, 16), bool)))
    q = policy.net(torch.eye(3)).detach().numpy()
    np.testing.assert_allclose(q, [[1, -1], [-1, 1], [1, -1]], atol=0.1)
    out = policy.act(np.eye(3, dtype=np.float32), deterministic=True)
    np.testing.assert_array_equal(out.action, [0, 1, 0])


# -- acting ------------------------------------------------------------------------------------

def test_epsilon_greedy_probabilities():
    greedy = torch.tensor([0, 2])
    mask = torch.tensor([[True, True, False, True], [False, False, True, True]])
    probs = F.epsilon_greedy_probs(greedy, 4, mask, 0.3)
    np.testing.assert_allclose(probs, [[0.8, 0.1, 0.0, 0.1], [0.0, 0.0, 0.85, 0.15]], rtol=1e-6)
    np.testing.assert_allclose(F.epsilon_greedy_probs(greedy, 4, None, 0.4)[0], [0.7, 0.1, 0.1, 0.1], rtol=1e-6)


@pytest.mark.parametrize('epsilon', [0.0, 0.5, 1.0])
def test_masked_actions_are_never_chosen(epsilon):
    policy = _policy(obs_space=gym.spaces.Box(-1.0, 1.0, (5,), np.float32), n_actions=6,
                     collect=dict(eps_start=epsilon))
    assert policy.epsilon == epsilon
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(2000, 5)).astype(np.float32)
    mask = rng.random((2000, 6)) < 0.3
    mask[np.arange(2000), rng.integers(0, 6, 2000)] = True  # at least one legal action per row
    for deterministic in (False, True):
        out = policy.act(obs, deterministic=deterministic, action_mask=mask)
        assert mask[np.arange(2000), out.action].all()
    out = policy.act(obs, action_mask=mask)
    q = policy.net(torch.as_tensor(obs)).detach()
    probs = F.epsilon_greedy_probs(F.masked_argmax(q, torch.as_tensor(mask)), 6, torch.as_tensor(mask), epsilon)
    np.testing.assert_allclose(np.exp(out.log_prob), probs[np.arange(2000), out.action].numpy(), rtol=1e-5)
    np.testing.assert_allclose(out.value, q[np.arange(2000), out.action].numpy(), rtol=1e-6)
    # the greedy policy, and the rows of a seat not to move (no legal action) still get an action
    probs = policy.action_probabilities(obs[:3], np.zeros((3, 6), bool))
    assert probs.shape == (3, 6) and np.allclose(probs.sum(1), 1.0) and set(np.unique(probs)) == {0.0, 1.0}


def test_epsilon_schedule_by_progress_and_by_steps():
    chunk = dict(obs=np.zeros((4, 2, 3), np.float32), next_obs=np.zeros((4, 2, 3), np.float32),
                 action=np.zeros((4, 2), np.int64), reward=np.zeros((4, 2), np.float32),
                 terminated=np.zeros((4, 2), bool), truncated=np.zeros((4, 2), bool))
    by_progress = _policy(collect=dict(eps_start=1.0, eps_end=0.1, eps_decay_fraction=0.5),
                          learn=dict(learning_starts=10_000))
    by_progress.learn(chunk, progress=0.25)
    assert by_progress.epsilon == pytest.approx(0.55)
    by_progress.learn(chunk, progress=0.75)
    assert by_progress.epsilon == pytest.approx(0.1)
    by_steps = _policy(collect=dict(eps_start=1.0, eps_end=0.0, eps_decay_steps=32),
                       learn=dict(learning_starts=10_000))
    by_steps.learn(chunk, progress=0.9)  # 8 steps of 32
    assert by_steps.epsilon == pytest.approx(0.75) and by_steps.agent_steps == 8
    battle = dict(chunk, train_mask=np.array([[True, False]] * 4))  # battle chunks count own moves only
    by_steps.learn(battle)
    assert by_steps.agent_steps == 12
    # epsilon travels with the parameters to whoever acts
    actor = _policy()
    actor.set_params(by_steps.get_params(), by_steps.version)
    assert actor.epsilon == pytest.approx(by_steps.epsilon)


# -- learning mechanics ------------------------------------------------------------------------

def _random_chunk(T=8, B=4, seed=0):
    rng = np.random.default_rng(seed)
    obs = rng.random((T, B, 3)).astype(np.float32)
    return dict(obs=obs, next_obs=np.roll(obs, -1, axis=0), action=rng.integers(0, 2, (T, B)),
                reward=rng.normal(size=(T, B)).astype(np.float32), terminated=rng.random((T, B)) < 0.1,
                truncated=np.zeros((T, B), bool), log_prob=np.zeros((T, B), np.float32),
                value=np.zeros((T, B), np.float32), next_value=np.zeros((T, B), np.float32))


def test_hard_and_polyak_target_updates():
    hard = _policy(learn=dict(learning_starts=1, updates_per_chunk=3, target_update_every=4))
    before = copy.deepcopy(hard.target_net.state_dict())
    stats = hard.learn(_random_chunk())
    assert stats['gradient_steps'] == 3 and stats['samples'] == 32 and stats['samples_consumed'] == 3 * 64
    assert all(torch.equal(before[k], v) for k, v in hard.target_net.state_dict().items())  # not yet
    hard.learn(_random_chunk(seed=1))  # the 4th gradient step copies
    for k, v in hard.target_net.state_dict().items():
        if k != 'epsilon':
            assert not torch.equal(before[k], v)
    soft = _policy(learn=dict(learning_starts=1, updates_per_chunk=1, target_update_every=1, target_tau=0.1))
    old_target = {k: v.clone() for k, v in soft.target_net.named_parameters()}
    soft.learn(_random_chunk())
    online = dict(soft.net.named_parameters())
    for name, value in soft.target_net.named_parameters():
        torch.testing.assert_close(value, 0.9 * old_target[name] + 0.1 * online[name].detach())


def test_no_gradient_step_before_learning_starts_and_a_version_per_chunk():
    policy = _policy(learn=dict(learning_starts=50))
    params = policy.get_params()
    stats = policy.learn(_random_chunk())  # 32 transitions < 50
    assert stats['gradient_steps'] == 0 and stats['replay_size'] == 32 and policy.version == 1
    assert all(torch.equal(params[k], v) for k, v in policy.get_params().items() if k != 'epsilon')
    assert policy.learn(_random_chunk(seed=1))['gradient_steps'] == 8


@pytest.mark.parametrize('prioritized', [False, True])
def test_state_dict_restores_learning_exactly(prioritized, tmp_path):
    kwargs = dict(learn=dict(learning_starts=1), replay=dict(prioritized=prioritized))
    a = _policy(**kwargs)
    a.learn(_random_chunk())
    b = _policy(seed=5, **kwargs)
    from sparring.worker.state_file import load_state_file, save_state_file
    path = save_state_file(a.state_dict(), str(tmp_path / 'dqn.pt'))  # as a checkpoint does: nothing shared
    b.load_state_dict(load_state_file(path))
    assert len(b.replay) == len(a.replay) == 32
    sa, sb = a.learn(_random_chunk(seed=1)), b.learn(_random_chunk(seed=1))
    assert sa['value_loss'] == sb['value_loss']
    assert all(torch.equal(v, b.get_params()[k]) for k, v in a.get_params().items())
    obs = np.random.default_rng(0).random((16, 3)).astype(np.float32)
    np.testing.assert_array_equal(a.act(obs).action, b.act(obs).action)
    no_replay = _policy(learn=dict(learning_starts=1), replay=dict(in_checkpoint=False))
    no_replay.learn(_random_chunk())
    assert no_replay.state_dict()['replay'] is None


def test_replay_keeps_only_the_columns_dqn_learns_from():
    """The buffer's layout in checkpoints: a masked battle chunk with opponent tags stores neither the chosen
    move's mask nor the tags, and actions are int64 whatever the chunk's dtype."""
    policy = _policy(n_actions=2, learn=dict(n_step=1))
    chunk = _random_chunk()
    chunk['action'] = chunk['action'].astype(np.int32)
    chunk.update(action_mask=np.ones((8, 4, 2), bool), train_mask=np.ones((8, 4), bool),
                 opponent=np.full((8, 4), 7, np.int64), opponent_version=np.ones((8, 4), np.int64))
    data = policy.transitions(chunk)
    assert list(data.columns()) == ['obs', 'action', 'ret', 'discount', 'next_obs', 'next_mask']
    assert data.action.dtype == np.int64


def test_a_chunk_without_next_obs_is_refused():
    chunk = _random_chunk()
    del chunk['next_obs']
    with pytest.raises(ValueError, match='next_obs'):
        _policy().learn(chunk)


# -- config ------------------------------------------------------------------------------------

@pytest.mark.parametrize('policy_cfg, message', [
    (dict(model=dict(type='mlp')), "'mlp' does not output Q-values; DQN needs one of: q_mlp"),
    (dict(learn=dict(batch_size=512), replay=dict(capacity=100)), 'batch_size.*exceeds.*capacity'),
    (dict(collect=dict(eps_start=1.5)), r'policy.collect.eps_start.*\[0.0, 1.0\]'),
    (dict(learn=dict(loss='l1')), "policy.learn.loss.*'huber', 'mse'"),
    (dict(learn=dict(target_tau=0.0)), 'policy.learn.target_tau'),
    (dict(learn=dict(gama=0.9)), "unknown key 'gama'.*Did you mean 'gamma'"),
    (dict(replay=dict(prioritised=True)), "unknown key 'prioritised'.*Did you mean 'prioritized'"),
    (dict(learn=dict(n_step=0)), 'policy.learn.n_step'),
    (dict(learn=dict(double='yes')), 'policy.learn.double.*expected bool'),
])
def test_config_errors_name_the_key(policy_cfg, message):
    with pytest.raises(ConfigError, match=message):
        compile_config(dict(env=dict(type='cartpole'), policy=dict(type='dqn', **policy_cfg)), save=False)


def test_continuous_actions_are_refused():
    cfg = compile_section('policy', dict(type='dqn'))
    with pytest.raises(TypeError, match='Discrete action space'):
        DQNPolicy(cfg, gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-1, 1, (2,)))


def test_dueling_head_combines_value_and_centred_advantages():
    policy = _policy(n_actions=3, model=dict(dueling=True))
    model = policy.net.model
    x = torch.rand(5, 3)
    hidden = model.trunk(x)
    adv = model.q_head(hidden)
    expected = model.v_head(hidden) + adv - adv.mean(-1, keepdim=True)
    torch.testing.assert_close(model(x), expected)
    assert POLICY_REGISTRY.get('dqn') is DQNPolicy


# -- in the pipelines ----------------------------------------------------------------------------

def test_collectors_add_next_obs_for_dqn_only(tmp_path):
    from sparring.worker.collector import SampleCollector
    from sparring.worker.env.manager import make_env_manager
    env_cfg = compile_section('env', dict(type='cartpole'))
    with make_env_manager(env_cfg, 2, seed=0) as env:
        dqn = DQNPolicy(compile_section('policy', dict(type='dqn')), env.observation_space, env.action_space)
        chunk = SampleCollector(env, dqn, n_steps=40).collect()
        data = chunk.data
        np.testing.assert_array_equal(data['next_obs'][:-1][~(data['terminated'] | data['truncated'])[:-1]],
                                      data['obs'][1:][~(data['terminated'] | data['truncated'])[:-1]])
        ppo = POLICY_REGISTRY.get('ppo')(compile_section('policy', dict(type='ppo')), env.observation_space,
                                         env.action_space)
        assert 'next_obs' not in SampleCollector(env, ppo, n_steps=4).collect().data


def _cartpole_config(exp_name):
    return dict(exp_name=str(exp_name),
                env=dict(type='cartpole', collector_env_num=4, evaluator_env_num=2, n_evaluator_episodes=2),
                policy=dict(type='dqn', model=dict(hidden_sizes=[32]), collect=dict(n_steps=16),
                            learn=dict(learning_starts=64, updates_per_chunk=2, batch_size=32)),
                train=dict(max_env_steps=512, eval_every_iters=4, checkpoint_every_iters=4, progress_bar=False,
                           tensorboard=False))


def test_serial_pipeline_trains_and_resumes_dqn(tmp_path):
    summary = serial_pipeline(_cartpole_config(tmp_path / 'run'), seed=1)
    assert summary['env_steps'] == 512 and summary['train_iter'] == 8
    log = open(tmp_path / 'run' / 'log.txt').read()
    assert 'eps=' in log and 'vloss=' in log
    resumed = serial_pipeline(_cartpole_config(tmp_path / 'run'), seed=1, resume=True, max_env_steps=768)
    assert resumed['env_steps'] == 768 and resumed['train_iter'] == 12


def test_league_pipeline_runs_a_dqn_league(tmp_path):
    config = tiny_league_config(
        tmp_path / 'league', env=dict(n_evaluator_episodes=8),
        policy=dict(type='dqn', model=dict(hidden_sizes=[32]), collect=dict(n_steps=8),
                    learn=dict(learning_starts=16, updates_per_chunk=2, batch_size=16), replay=dict(capacity=1000)),
        league=dict(active_players=dict(naive_sp=1), players=dict(naive_sp=dict(one_phase_step=3))),
        battle=dict(eval_deterministic=True),
        train=dict(max_env_steps=320, eval_every_iters=5, checkpoint_every_iters=5))
    summary = serial_pipeline(config, seed=0)
    assert summary['rounds'] == 10
    assert len(summary['eval']) == 1 and 'random' in next(iter(summary['eval'].values()))
    assert summary['league_table'].count('naive_sp') > 1  # snapshots of the DQN player joined the league
